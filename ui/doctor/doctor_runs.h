// A float32 vs mixed pair of recorded runs as the doctor's input and measurement: the runs'
// model and settings (batch size, optimizer, GPU options...), and their medians (the warm-up
// left out, as the runs' own summaries leave it out) and per-layer times where they were timed.
// The Compare tab's "Diagnose in the Doctor tab" reads it.
#pragma once

#include <QString>
#include <filesystem>
#include <optional>

#include "engine/doctor/diagnosis.h"

namespace mixlab::ui {

struct RunPair {
  qint64 float32_run = 0;
  qint64 mixed_run = 0;
  ModelSpec spec;
  RunConfig run;  // the mixed run's settings: its batch size, optimizer, GPU options...
  Policy mixed = Policy::mixed_float16;
  std::string device;  // where the runs ran: "cpu", "cuda:0"
  doctor::Measurement measured;
};

// Reads both runs from the store at `db`. nullopt with the reason in `error` when a run is
// missing, they are not one float32 and one mixed run of the same model and batch size, or
// either has no measured steps.
std::optional<RunPair> load_run_pair(const std::filesystem::path& db, qint64 float32_run,
                                     qint64 mixed_run, QString* error);

}  // namespace mixlab::ui
