#include "ui/settings.h"

#include "engine/train/run_fields.h"

namespace mixlab::ui::settings {

const Key<QByteArray> kWindowGeometry{"window/geometry", {}};
const Key<QByteArray> kWindowState{"window/state", {}};
const Key<int> kCurrentTab{"window/tab", 0};

const Key<QString> kLastModelFile{"model/last_file", {}};
const Key<QString> kLastTemplate{"model/last_template", "fashion-mlp"};
const Key<QString> kLastDirectory{"files/last_directory", {}};

const Key<bool> kLimitBySteps{"run/limit_by_steps", false};
const Key<QString> kDevice{"run/device", "cpu"};

const Key<QString> kDoctorDevice{"doctor/device", {}};

const Key<bool> kCompareByTime{"compare/by_time", false};

const Key<QByteArray> kHistoryHeaderState{"history/header_state", {}};
const Key<QString> kHistoryFilterText{"history/filter_text", {}};
const Key<QString> kHistoryFilterStatus{"history/filter_status", {}};
const Key<QString> kHistoryFilterPrecision{"history/filter_precision", {}};
const Key<QString> kHistoryFilterModel{"history/filter_model", {}};

QString run_setting_key(const RunField& field) {
  return QStringLiteral("run/") +
         QString::fromUtf8(field.name.data(), qsizetype(field.name.size()));
}

}  // namespace mixlab::ui::settings
