// How the history and the comparison write figures and runs: numbers in the user's locale with
// digit groups, "–" for a figure that was not measured, a run as "#12 “name”".
//
// In a namespace of their own: other panels may well have helpers of these names.
#pragma once

#include <QString>
#include <QStringList>
#include <span>
#include <string_view>

#include "app/store/run_record.h"

namespace mixlab::ui::history {

QString qstr(std::string_view text);  // UTF-8
QString fixed(double value, int decimals);
QString grouped(double value);     // rounded to an integer: "12,345"
QString percent(double fraction);  // 0.9712 -> "97.12%"
QString ratio(double value);       // "1.85×"
// "#12 “mlp fp16”" on one line, the name cut to `max_chars` characters.
QString run_label(const store::RunRecord& r, int max_chars = 60);
// One label per run where several share a chart (a legend, a bar's name): "#12" and the words of
// its name that the runs' names do not all share at their start and end, cut to `max_chars`.
// "fashion-mlp float32 b32" beside "fashion-mlp mixed_float16 b32" gives "#1 float32" and
// "#2 mixed_float16"; names all alike give "#1", "#2"; a single run gets its run_label.
QStringList distinct_run_labels(std::span<const store::RunRecord> runs, int max_chars);

}  // namespace mixlab::ui::history
