// mixlab-cli doctor's report for people (the verdict first, the figures, the findings, the layers)
// and the JSON of its sweep and what-if parts.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/doctor/diagnosis.h"

namespace mixlab::cli {

void print_profiles(std::span<const doctor::DeviceProfile> profiles, bool json);
void print_diagnosis(const doctor::Diagnosis& d);

struct SweepRow {
  int batch = 0;
  doctor::Diagnosis diagnosis;
  std::int64_t report_id = 0;  // kept in the run store (0: not kept)
  std::vector<std::int64_t> run_ids;
};
nlohmann::ordered_json sweep_json(const std::vector<SweepRow>& rows);
void print_sweep(const std::vector<SweepRow>& rows);

// The top suggestion that the doctor can apply itself, and what came of it.
struct WhatIf {
  const doctor::Finding* finding = nullptr;  // none: no finding suggests a change
  double measured_gain = NAN;                // samples/s of the mixed policy, after over before
  double before_ms = NAN, after_ms = NAN;
  std::vector<std::int64_t> run_ids;  // the measured runs kept in the run store
};
WhatIf what_if_of(const doctor::Diagnosis& d);
nlohmann::ordered_json what_if_json(const WhatIf& w, const doctor::DiagnosisInput& input);
void print_what_if(const WhatIf& w, const doctor::DiagnosisInput& input, bool predict_only);

}  // namespace mixlab::cli
