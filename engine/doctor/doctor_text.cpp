#include "engine/doctor/doctor_text.h"

#include <charconv>
#include <cmath>

namespace mixlab::doctor {

namespace {
// `value` with `decimals` digits after a '.', whatever LC_NUMERIC says: these figures reach the
// HTML report and the CSVs as well as the screen (snprintf would write "3,21" under a locale
// with a decimal comma, which the GUI's "Save report" runs under).
std::string fixed(double value, int decimals) {
  char text[64];
  const auto [end, error] =
      std::to_chars(text, text + sizeof text, value, std::chars_format::fixed, decimals);
  return error == std::errc() ? std::string(text, end) : std::string("?");
}
}  // namespace

std::string megabytes(double bytes) {
  if (bytes >= 10e9) return fixed(bytes / 1e9, 1) + " GB";
  if (bytes >= 10e6) return fixed(bytes / 1e6, 0) + " MB";
  if (bytes >= 1e5) return fixed(bytes / 1e6, 1) + " MB";
  return fixed(std::ceil(bytes / 1e3), 0) + " KB";
}

std::string millis(double seconds) {
  const double ms = seconds * 1e3;
  if (ms >= 100) return fixed(ms, 0) + " ms";
  if (ms >= 1) return fixed(ms, 2) + " ms";
  return fixed(ms, 3) + " ms";
}

std::string percent(double fraction) {
  return fixed(fraction * 100, fraction < 0.1 ? 1 : 0) + "%";
}

std::string ratio(double value) {
  return fixed(value, 2) + "x";
}

std::string with_gain(const std::string& suggestion, double gain) {
  if (gain <= 0.0 || suggestion.empty()) return suggestion;
  if (suggestion.back() == ')') {
    return suggestion.substr(0, suggestion.size() - 1) + "; predicted gain " + ratio(gain) + ")";
  }
  return suggestion + " (predicted gain " + ratio(gain) + ")";
}

std::string count(double value) {
  if (value >= 1e6) return fixed(value / 1e6, 1) + " M";
  if (value >= 1e4) return fixed(value / 1e3, 0) + " K";
  return fixed(value, 0);
}

}  // namespace mixlab::doctor
