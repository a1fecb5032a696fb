// A doctor's diagnosis written for keeping and sharing: CSV (RFC 4180, as every MixLab export)
// of its findings and of its per-layer predicted and measured times, and a self-contained HTML
// report (inline CSS and SVG charts, no script, no external file) to paste into a forum
// question. mixlab-cli doctor --csv / --html and the Doctor tab's "Save report" write these.
#pragma once

#include <ostream>

#include "engine/doctor/diagnosis.h"

namespace mixlab::store {

// id, severity, layers ("1;2"), message, suggestion, predicted_gain, change
void write_doctor_findings_csv(std::ostream& out, const doctor::Diagnosis& d);
// layer, title, policy, phase (forward|backward), predicted_ms, measured_ms (empty when not
// measured): one row per layer, policy and phase.
void write_doctor_layers_csv(std::ostream& out, const doctor::Diagnosis& d);
// The verdict, the device and its figures' sources, predicted (and measured) step times, a
// roofline chart and a where-the-time-goes bar per policy (SVG), the findings and the layers.
void write_doctor_html(std::ostream& out, const doctor::Diagnosis& d);

}  // namespace mixlab::store
