#include "ui/run/field_bindings.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QSettings>
#include <QSignalBlocker>
#include <QSpinBox>
#include <optional>
#include <type_traits>
#include <vector>

#include "engine/train/run_fields.h"
#include "ui/settings.h"

namespace mixlab::ui {

FieldBindings::FieldBindings() {
  for (const RunField& field : run_fields())
    carried_[field.name] = QString::fromStdString(field_default_text(field));
}

void FieldBindings::bind(std::string_view field, Binding binding) {
  carried_.erase(run_field(field).name);
  bound_[run_field(field).name] = std::move(binding);
}

QString FieldBindings::text(const RunField& field) const {
  if (const auto it = bound_.find(field.name); it != bound_.end()) return it->second.text();
  return carried_.at(field.name);
}

bool FieldBindings::show(const RunField& field, const QString& text) {
  if (const auto it = bound_.find(field.name); it != bound_.end()) {
    std::vector<std::optional<QSignalBlocker>> blockers(std::size_t(it->second.widgets.size()));
    for (qsizetype i = 0; i < it->second.widgets.size(); ++i)
      blockers[std::size_t(i)].emplace(it->second.widgets[i]);
    return it->second.show(text);
  }
  try {
    RunConfig check;
    set_field_text(field, check, text.toStdString());
  } catch (const FieldError&) {
    return false;
  }
  carried_[field.name] = text;
  return true;
}

namespace {

// A QSpinBox's or QDoubleSpinBox's value, written as the table writes integers and numbers.
template <typename Spin>
FieldBindings::Binding number_box(Spin* spin) {
  using Value = decltype(spin->value());
  const auto text = [spin] {
    if constexpr (std::is_integral_v<Value>) {
      return QString::number(spin->value());
    } else {
      return QString::fromStdString(field_value_text(spin->value()));
    }
  };
  const auto show = [spin](const QString& text) {
    bool ok = false;
    Value value{};
    if constexpr (std::is_integral_v<Value>) {
      value = text.toInt(&ok);
    } else {
      value = text.toDouble(&ok);
    }
    if (!ok || value < spin->minimum() || value > spin->maximum()) return false;
    spin->setValue(value);
    return true;
  };
  return {{spin}, text, show, {}};
}

}  // namespace

FieldBindings::Binding FieldBindings::spin_box(QSpinBox* spin) {
  return number_box(spin);
}

FieldBindings::Binding FieldBindings::spin_box(QDoubleSpinBox* spin) {
  return number_box(spin);
}

FieldBindings::Binding FieldBindings::check_box(QCheckBox* box) {
  return {{box},
          [box] { return box->isChecked() ? QStringLiteral("true") : QStringLiteral("false"); },
          [box](const QString& text) {
            const bool on = text == QLatin1String("true") || text == QLatin1String("1");
            if (!on && text != QLatin1String("false") && text != QLatin1String("0")) return false;
            box->setChecked(on);
            return true;
          },
          {}};
}

FieldBindings::Binding FieldBindings::combo_box(QComboBox* combo) {
  return {{combo},
          [combo] { return combo->currentText(); },
          [combo](const QString& text) {
            const int index = combo->findText(text);
            if (index < 0) return false;
            combo->setCurrentIndex(index);
            return true;
          },
          {}};
}

void FieldBindings::load() {
  const QSettings settings;
  // What the remembered values imply for the fields that have none (or none readable).
  RunConfig implied;
  std::vector<std::optional<QString>> stored;
  for (const RunField& field : run_fields()) {
    const QVariant value = settings.value(settings::run_setting_key(field));
    stored.push_back(value.isValid() ? std::optional(value.toString()) : std::nullopt);
    if (!stored.back()) continue;
    try {
      set_field_text(field, implied, stored.back()->toStdString());
    } catch (const FieldError&) {
      // Shown as it is below if its widgets take it (a dataset whose folder is not chosen yet).
    }
  }
  std::size_t i = 0;
  for (const RunField& field : run_fields()) {
    const std::optional<QString>& text = stored[i++];
    if (text && show(field, *text)) continue;
    const auto bound = bound_.find(field.name);
    if (bound != bound_.end() && !bound->second.initial.isEmpty() &&
        show(field, bound->second.initial))
      continue;
    show(field, QString::fromStdString(field_text(field, implied)));
  }
}

void FieldBindings::save() const {
  QSettings settings;
  for (const RunField& field : run_fields())
    settings.setValue(settings::run_setting_key(field), text(field));
}

}  // namespace mixlab::ui
