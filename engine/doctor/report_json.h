// A diagnosis as JSON (mixlab-cli doctor --json, the run store's kept reports). The keys are a
// contract scripts rely on: verdict, device, batch_size, mixed_policy, predicted_step_ms (keyed
// by policy), predicted_speedup (float32's step over the mixed policy's: below 1, mixed is
// slower), measured_step_ms and measured_speedup when measured, findings (id, severity, layers,
// message, suggestion, predicted_gain, figures, change), layers (predicted and measured forward
// and backward ms per policy), time_breakdown_ms and items (every cost item of each policy).
#pragma once

#include <nlohmann/json.hpp>

#include "engine/doctor/diagnosis.h"

namespace mixlab::doctor {

nlohmann::ordered_json to_json(const Diagnosis& diagnosis);
nlohmann::ordered_json to_json(const DeviceProfile& profile);
nlohmann::ordered_json to_json(const Finding& finding);

}  // namespace mixlab::doctor
