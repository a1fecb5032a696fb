#include "ui/history/history_format.h"

#include <QLocale>
#include <cmath>

namespace mixlab::ui::history {

namespace {

const QString kNotMeasured = QStringLiteral("–");

// The user's locale, but with digit groups even where it omits them by default (the C locale):
// "12,345 samples/s" reads at a glance, "12345" does not.
QLocale number_locale() {
  QLocale locale;
  locale.setNumberOptions(locale.numberOptions() & ~QLocale::OmitGroupSeparator);
  return locale;
}

}  // namespace

QString qstr(std::string_view text) {
  return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

QString fixed(double value, int decimals) {
  return std::isfinite(value) ? number_locale().toString(value, 'f', decimals) : kNotMeasured;
}

QString grouped(double value) {
  return std::isfinite(value) ? number_locale().toString(qint64(std::llround(value)))
                              : kNotMeasured;
}

QString percent(double fraction) {
  return std::isfinite(fraction) ? fixed(fraction * 100.0, 2) + u'%' : kNotMeasured;
}

QString ratio(double value) {
  return std::isfinite(value) ? fixed(value, 2) + u'×' : kNotMeasured;
}

QString run_label(const store::RunRecord& r, int max_chars) {
  QString name = qstr(r.name).simplified();
  if (name.size() > max_chars) name = name.left(max_chars - 1) + u'…';
  return QStringLiteral("#%1 “%2”").arg(r.id).arg(name);
}

}  // namespace mixlab::ui::history
