#include "engine/doctor/doctor_text.h"

#include <cmath>
#include <cstdio>

namespace mixlab::doctor {

namespace {
std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}
}  // namespace

std::string megabytes(double bytes) {
  if (bytes >= 10e9) return format("%.1f GB", bytes / 1e9);
  if (bytes >= 10e6) return format("%.0f MB", bytes / 1e6);
  if (bytes >= 1e5) return format("%.1f MB", bytes / 1e6);
  return format("%.0f KB", std::ceil(bytes / 1e3));
}

std::string millis(double seconds) {
  const double ms = seconds * 1e3;
  if (ms >= 100) return format("%.0f ms", ms);
  if (ms >= 1) return format("%.2f ms", ms);
  return format("%.3f ms", ms);
}

std::string percent(double fraction) {
  return format(fraction < 0.1 ? "%.1f%%" : "%.0f%%", fraction * 100);
}

std::string ratio(double value) { return format("%.2fx", value); }

std::string with_gain(const std::string& suggestion, double gain) {
  if (gain <= 0.0 || suggestion.empty()) return suggestion;
  if (suggestion.back() == ')') {
    return suggestion.substr(0, suggestion.size() - 1) + "; predicted gain " + ratio(gain) + ")";
  }
  return suggestion + " (predicted gain " + ratio(gain) + ")";
}

std::string count(double value) {
  if (value >= 1e6) return format("%.1f M", value / 1e6);
  if (value >= 1e4) return format("%.0f K", value / 1e3);
  return format("%.0f", value);
}

}  // namespace mixlab::doctor
