#include "ui/history/history_format.h"

#include <QLocale>
#include <algorithm>
#include <cmath>
#include <vector>

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

QStringList distinct_run_labels(std::span<const store::RunRecord> runs, int max_chars) {
  QStringList labels;
  if (runs.size() < 2) {
    for (const store::RunRecord& r : runs) labels.append(run_label(r, max_chars));
    return labels;
  }
  std::vector<QStringList> words;
  for (const store::RunRecord& r : runs)
    words.push_back(qstr(r.name).simplified().split(u' ', Qt::SkipEmptyParts));
  const qsizetype shortest = std::min_element(words.begin(), words.end(), [](auto& a, auto& b) {
                               return a.size() < b.size();
                             })->size();
  const auto all_share = [&](auto word_of) {
    return std::all_of(words.begin(), words.end(),
                       [&](const QStringList& w) { return word_of(w) == word_of(words.front()); });
  };
  qsizetype head = 0;  // leading words every name shares
  while (head < shortest && all_share([&](const QStringList& w) { return w[head]; })) ++head;
  qsizetype tail = 0;  // trailing ones, not overlapping the leading ones
  while (head + tail < shortest &&
         all_share([&](const QStringList& w) { return w[w.size() - 1 - tail]; }))
    ++tail;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const QStringList& w = words[i];
    QString differs = w.mid(head, w.size() - head - tail).join(u' ');
    if (differs.size() > max_chars) differs = differs.left(max_chars - 1) + u'…';
    labels.append(differs.isEmpty() ? QStringLiteral("#%1").arg(runs[i].id)
                                    : QStringLiteral("#%1 %2").arg(runs[i].id).arg(differs));
  }
  return labels;
}

}  // namespace mixlab::ui::history
