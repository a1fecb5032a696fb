// How the history and the comparison write figures and runs: numbers in the user's locale with
// digit groups, "–" for a figure that was not measured, a run as "#12 “name”".
//
// In a namespace of their own: other panels may well have helpers of these names.
#pragma once

#include <QString>
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

}  // namespace mixlab::ui::history
