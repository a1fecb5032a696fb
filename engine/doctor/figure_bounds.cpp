#include "engine/doctor/figure_bounds.h"

#include <cmath>
#include <cstdio>

namespace mixlab::doctor {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

}  // namespace

std::string figure_problem(double value, const FigureBounds& bounds, bool zero_allowed) {
  if (zero_allowed && value == 0.0) return {};
  if (std::isfinite(value) && value >= bounds.min && value <= bounds.max) return {};
  const std::string unit = std::string(" ") + bounds.unit_name;
  return "is " + number(value / bounds.print_unit) + unit + "; a real device's lies between " +
         number(bounds.min / bounds.print_unit) + " and " + number(bounds.max / bounds.print_unit) +
         unit;
}

}  // namespace mixlab::doctor
