#include "app/store/doctor_export.h"

#include <algorithm>
#include <cmath>
#include <charconv>
#include <string>
#include <vector>

#include "app/store/csv_export.h"
#include "engine/doctor/doctor_text.h"
#include "engine/doctor/library_rules.h"
#include "engine/spec/layer_text.h"

namespace mixlab::store {

namespace {

using doctor::CostItem;
using doctor::Diagnosis;
using doctor::StepCost;

constexpr const char* kEol = "\r\n";

std::string layers_text(const std::vector<int>& layers, const char* separator) {
  std::string text;
  for (const int l : layers) text += (text.empty() ? "" : separator) + std::to_string(l);
  return text;
}

// The one way text reaches the HTML report: every value (a model's or a layer's name, a
// device's, a finding's words, an enum's name) goes through this, so that none can open a tag or
// leave an attribute, whichever quotes the attribute uses. The report has no <script> and no
// JSON inside, so no other context needs its own escaping.
std::string escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// A number for the report, '.' as the decimal point whatever the locale (the GUI runs under the
// user's LC_NUMERIC, where snprintf would write "0,5"): `precision` significant digits (general,
// as %g) or digits after the point (fixed, as %f).
std::string num(double value, std::chars_format format = std::chars_format::general,
                int precision = 3) {
  char text[64];
  const auto result = std::to_chars(text, text + sizeof text, value, format, precision);
  if (result.ec != std::errc()) return "?";
  return {text, result.ptr};
}
constexpr auto kFixed = std::chars_format::fixed;
constexpr auto kGeneral = std::chars_format::general;

// Both policies' predicted costs, float32 first.
std::vector<const StepCost*> costs(const Diagnosis& d) { return {&d.float32, &d.mixed}; }

const doctor::MeasuredRun* measured_run(const Diagnosis& d, const StepCost& c) {
  if (!d.measured) return nullptr;
  return &c == &d.float32 ? &d.measured->float32 : &d.measured->mixed;
}

// The roofline on log axes: each policy's roofs (float32's and the 16-bit matmul peak, under
// the bandwidth slope) and a point per cost item with FLOPs, at its predicted rate.
void roofline_svg(std::ostream& out, const Diagnosis& d) {
  const doctor::DeviceProfile& dev = d.input.device;
  constexpr double kW = 560, kH = 320, kLeft = 60, kBottom = 40, kTop = 10, kRight = 10;
  const double peak16 = doctor::matmul_peak(dev, compute_dtype(d.input.mixed), false);
  const double y_max = std::max(dev.peak.float32, peak16) * 2;
  const double y_min = y_max / 1e6;
  const double x_min = 0.01, x_max = 1e4;
  const auto px = [&](double x) {
    return kLeft + (std::log10(std::clamp(x, x_min, x_max) / x_min) / std::log10(x_max / x_min)) *
                       (kW - kLeft - kRight);
  };
  const auto py = [&](double y) {
    return kH - kBottom - (std::log10(std::clamp(y, y_min, y_max) / y_min) /
                           std::log10(y_max / y_min)) * (kH - kBottom - kTop);
  };
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << kH
      << "' role='img' aria-label='roofline'>\n"
      << "<rect x='" << kLeft << "' y='" << kTop << "' width='" << kW - kLeft - kRight
      << "' height='" << kH - kBottom - kTop << "' fill='#fafafa' stroke='#999'/>\n";
  for (double x = x_min; x <= x_max * 1.001; x *= 10) {
    out << "<text x='" << px(x) << "' y='" << kH - kBottom + 16
        << "' font-size='10' text-anchor='middle'>" << num(x, kGeneral, 6) << "</text>\n";
  }
  for (double y = y_min * 10; y <= y_max * 1.001; y *= 100) {
    out << "<text x='" << kLeft - 4 << "' y='" << py(y) + 3
        << "' font-size='10' text-anchor='end'>" << num(y / 1e9, kGeneral, 6) << "G</text>\n";
  }
  out << "<text x='" << (kW + kLeft) / 2 << "' y='" << kH - 6
      << "' font-size='11' text-anchor='middle'>FLOPs per byte</text>\n"
      << "<text x='12' y='" << kH / 2 << "' font-size='11' transform='rotate(-90 12 " << kH / 2
      << ")' text-anchor='middle'>FLOP/s</text>\n";
  const auto roof = [&](double peak, const char* colour, const std::string& name) {
    const double ridge = peak / dev.bandwidth_bytes_per_s;
    out << "<polyline fill='none' stroke='" << colour << "' stroke-width='2' points='"
        << px(x_min) << "," << py(dev.bandwidth_bytes_per_s * x_min) << " " << px(ridge) << ","
        << py(peak) << " " << px(x_max) << "," << py(peak) << "'><title>" << escape(name)
        << " roof</title></polyline>\n";
  };
  roof(dev.peak.float32, "#1f77b4", "float32");
  if (peak16 > 0) roof(peak16, "#d62728", std::string(to_string(d.input.mixed)));
  for (const StepCost* c : costs(d)) {
    const char* colour = c == &d.float32 ? "#1f77b4" : "#d62728";
    for (const CostItem& item : c->items) {
      if (item.flops <= 0 || item.time_s() <= 0) continue;
      out << "<circle cx='" << px(item.intensity()) << "' cy='" << py(item.flops / item.time_s())
          << "' r='3' fill='" << colour << "' fill-opacity='0.6'><title>"
          << escape(std::string(to_string(c->policy)) + ": " + item.label) << "</title></circle>\n";
    }
  }
  out << "</svg>\n";
}

// One horizontal stacked bar per policy: the predicted step by kind of work.
void breakdown_svg(std::ostream& out, const Diagnosis& d) {
  static const char* kColours[doctor::kTimeKinds] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                     "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
  constexpr double kW = 560, kBarH = 24, kLeft = 120;
  const double longest = std::max(d.float32.step_s(), d.mixed.step_s());
  const double height = 2 * (kBarH + 12) + 40;
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW << "' height='" << height
      << "' role='img' aria-label='where the time goes'>\n";
  double y = 6;
  for (const StepCost* c : costs(d)) {
    out << "<text x='" << kLeft - 6 << "' y='" << y + 16 << "' font-size='11' text-anchor='end'>"
        << escape(to_string(c->policy)) << "</text>\n";
    double x = kLeft;
    for (int k = 0; k < doctor::kTimeKinds; ++k) {
      const auto kind = static_cast<doctor::TimeKind>(k);
      const double w = c->seconds(kind) / longest * (kW - kLeft - 10);
      if (w <= 0) continue;
      out << "<rect x='" << x << "' y='" << y << "' width='" << w << "' height='" << kBarH
          << "' fill='" << kColours[k] << "'><title>" << escape(to_string(kind)) << ": "
          << doctor::millis(c->seconds(kind)) << "</title></rect>\n";
      x += w;
    }
    y += kBarH + 12;
  }
  double lx = 10;
  for (int k = 0; k < doctor::kTimeKinds; ++k) {
    const std::string name(to_string(static_cast<doctor::TimeKind>(k)));
    out << "<rect x='" << lx << "' y='" << y + 4 << "' width='10' height='10' fill='" << kColours[k]
        << "'/><text x='" << lx + 14 << "' y='" << y + 13 << "' font-size='10'>" << escape(name)
        << "</text>\n";
    lx += 18 + 6.0 * static_cast<double>(name.size());
  }
  out << "</svg>\n";
}

}  // namespace

void write_doctor_findings_csv(std::ostream& out, const Diagnosis& d) {
  out << "id,severity,layers,message,suggestion,predicted_gain,change" << kEol;
  for (const doctor::Finding& f : d.findings) {
    out << csv_field(f.id) << ',' << csv_field(to_string(f.severity)) << ','
        << csv_field(layers_text(f.layers, ";")) << ',' << csv_field(f.message) << ','
        << csv_field(f.suggestion) << ','
        << (f.predicted_gain > 0 ? csv_number(f.predicted_gain) : "") << ','
        << csv_field(f.change ? doctor::describe(f.change) : "") << kEol;
  }
}

void write_doctor_layers_csv(std::ostream& out, const Diagnosis& d) {
  out << "layer,title,policy,phase,predicted_ms,measured_ms" << kEol;
  for (std::size_t li = 0; li < d.input.spec.layers.size(); ++li) {
    const int l = static_cast<int>(li);
    for (const StepCost* c : costs(d)) {
      const doctor::MeasuredRun* m = measured_run(d, *c);
      for (const bool backward : {false, true}) {
        double measured = NAN;
        if (m != nullptr && li < m->layer_forward_ms.size()) {
          measured = backward ? m->layer_backward_ms[li] : m->layer_forward_ms[li];
        }
        out << l << ',' << csv_field(layer_title(d.input.spec, l)) << ','
            << csv_field(to_string(c->policy)) << ',' << (backward ? "backward" : "forward") << ','
            << csv_number(c->layer_seconds(l, backward) * 1e3) << ',' << csv_number(measured)
            << kEol;
      }
    }
  }
}

void write_doctor_html(std::ostream& out, const Diagnosis& d) {
  const doctor::DeviceProfile& dev = d.input.device;
  const std::string mixed(to_string(d.input.mixed));
  out << "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>\n<title>MixLab doctor: "
      << escape(d.input.spec.name) << " on " << escape(dev.name) << "</title>\n<style>"
      << "body{font-family:sans-serif;max-width:60em;margin:1em auto;line-height:1.4}"
      << "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
      << "text-align:left;vertical-align:top}td.n{text-align:right}.verdict{font-weight:bold;"
      << "font-size:1.1em}.high{color:#b00}.medium{color:#b60}</style></head><body>\n"
      << "<h1>MixLab doctor: " << escape(d.input.spec.name) << "</h1>\n<p class='verdict'>"
      << escape(d.verdict) << "</p>\n"
      << (d.confidence ? "<p class='confidence'>" + escape(d.confidence->line) + "</p>\n"
                       : std::string())
      << "<p>Device: " << escape(dev.name)
      << (dev.measured ? " (roofs measured on this machine)"
                       : (dev.is_gpu() ? " (published figures: a prediction)" : ""))
      << (dev.is_gpu() && !dev.libraries.cublas.empty()
              ? "; " + escape(doctor::describe_gpu_libraries(dev.libraries))
              : std::string())
      << "; batch " << d.input.run.batch_size << ", "
      << escape(to_string(d.input.run.optimizer.kind)) << ".</p>\n"
      << "<table><tr><th></th><th>float32</th><th>" << escape(mixed) << "</th></tr>\n"
      << "<tr><td>predicted step</td><td class='n'>" << doctor::millis(d.float32.step_s())
      << "</td><td class='n'>" << doctor::millis(d.mixed.step_s()) << "</td></tr>\n";
  if (d.measured) {
    out << "<tr><td>measured step (median)</td><td class='n'>"
        << doctor::millis(d.measured->float32.step_ms / 1e3) << "</td><td class='n'>"
        << doctor::millis(d.measured->mixed.step_ms / 1e3) << "</td></tr>\n";
  }
  out << "<tr><td>training memory</td><td class='n'>"
      << doctor::megabytes(static_cast<double>(d.float32.memory.total())) << "</td><td class='n'>"
      << doctor::megabytes(static_cast<double>(d.mixed.memory.total())) << "</td></tr></table>\n";
  out << "<h2>Findings</h2>\n<table><tr><th>severity</th><th>finding</th><th>layers</th>"
      << "<th>why</th><th>fix</th><th>predicted gain</th></tr>\n";
  for (const doctor::Finding& f : d.findings) {
    out << "<tr><td class='" << escape(to_string(f.severity)) << "'>"
        << escape(to_string(f.severity))
        << "</td><td>" << escape(f.id) << "</td><td>" << layers_text(f.layers, ", ") << "</td><td>"
        << escape(f.message) << "</td><td>" << escape(f.suggestion) << "</td><td class='n'>"
        << (f.predicted_gain > 0 ? doctor::ratio(f.predicted_gain) : "") << "</td></tr>\n";
  }
  out << "</table>\n<h2>Roofline</h2>\n";
  roofline_svg(out, d);
  out << "<h2>Where the time goes (predicted)</h2>\n";
  breakdown_svg(out, d);
  out << "<h2>Layers (ms, forward / backward)</h2>\n<p>Predicted: "
      << escape(!d.mixed.scaled_source.empty()
                    ? d.mixed.scaled_source +
                          "; beside each scaled layer, the roofline model's time, and why a "
                          "modelled one was not scaled"
                : d.float32.measured_source.empty()
                    ? std::string("the roofline model (the layers were not timed on the device)")
                    : d.float32.measured_source +
                          "; beside each timed layer, the roofline model's time (its bound)")
      << ".</p>\n<table><tr><th>#</th><th>layer</th>"
      << "<th>predicted float32</th><th>predicted " << escape(mixed) << "</th>";
  if (d.measured) out << "<th>measured float32</th><th>measured " << escape(mixed) << "</th>";
  out << "</tr>\n";
  for (std::size_t li = 0; li < d.input.spec.layers.size(); ++li) {
    const int l = static_cast<int>(li);
    out << "<tr><td>" << l << "</td><td>" << escape(layer_title(d.input.spec, l)) << "</td>";
    for (const StepCost* c : costs(d)) {
      out << "<td class='n'>" << num(c->layer_seconds(l, false) * 1e3, kFixed, 3) << " / "
          << num(c->layer_seconds(l, true) * 1e3, kFixed, 3);
      if (c->layer_measured(l) || c->layer_scaled(l))
        out << " <small>(" << (c->layer_scaled(l) ? "scaled; " : "") << "roofline "
            << num(c->layer_model_seconds(l) * 1e3, kFixed, 3) << ")</small>";
      else if (const auto why = c->modelled_why.find(l); why != c->modelled_why.end())
        out << " <small>(modelled: " << escape(why->second) << ")</small>";
      out << "</td>";
    }
    if (d.measured) {
      for (const StepCost* c : costs(d)) {
        const doctor::MeasuredRun* m = measured_run(d, *c);
        out << "<td class='n'>";
        if (li < m->layer_forward_ms.size()) {
          out << num(m->layer_forward_ms[li], kFixed, 3) << " / "
              << num(m->layer_backward_ms[li], kFixed, 3);
        }
        out << "</td>";
      }
    }
    out << "</tr>\n";
  }
  out << "</table>\n<h2>The device's figures</h2>\n<ul>\n";
  for (const auto& [field, source] : dev.sources) {
    out << "<li>" << escape(field) << ": " << escape(source) << "</li>\n";
  }
  out << "</ul>\n<p>Made by mixlab-cli doctor, MixLab " << MIXLAB_VERSION
      << ": a roofline model per layer and phase; see the README's doctor section.</p>\n"
      << "</body></html>\n";
}

}  // namespace mixlab::store
