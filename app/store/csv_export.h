// CSV export of the run history: RFC 4180 (CRLF line ends; fields with a comma, quote, CR or LF
// quoted, quotes doubled), UTF-8, a header row of snake_case names, '.' as the decimal point
// whatever the locale, numbers in the shortest form that reads back exactly, NaN (not measured)
// as an empty field, timestamps in ISO-8601 UTC ("2026-11-30T02:45:07.123Z"). The exports of
// several runs throw StoreError for a damaged run (RunRecord::damage) before writing anything;
// a sweep's leaves a damaged member run's columns empty.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include "app/store/run_store.h"

namespace mixlab::store {

// One run's steps: step, epoch, wall_offset_s, step_ms, data_wait_ms, forward_ms, backward_ms,
// optimizer_ms, device_ms, loss, accuracy, loss_scale, skipped (0/1), samples.
void write_steps_csv(std::ostream& out, RunStore& store, std::int64_t run_id);

// Many runs' steps in long form, one row per (run, step): run_id, run_name, the settings that
// tell runs apart (precision, loss_scaling, batch_size: RunField::per_step_csv), then the
// columns of write_steps_csv.
void write_long_steps_csv(std::ostream& out, RunStore& store,
                          std::span<const std::int64_t> run_ids);

// One row per run: its name, status and times, every run setting (engine/train/run_fields.h,
// in table order; booleans as 0 / 1), environment and summary figures, tags (';'-separated) and
// note.
void write_summary_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids);

// Per-layer times (RunStore::layer_times), one row per (run, layer): run_id, run_name,
// precision, batch_size, device, layer, layer_title, steps, forward_ms, backward_ms (medians),
// forward_p95_ms, backward_p95_ms. A run recorded without layer timing has no rows.
void write_layers_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids);

// mixed_float8's FP8 tensors (RunStore::fp8_tensors), one row per (run, step, layer, part,
// role): run_id, run_name, step, layer, layer_title, part, role (input, kernel, gradient), amax
// (empty for NaN), scale (the step's), next_scale, values, saturated, flushed. A run not in
// mixed_float8 has no rows.
void write_fp8_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids);

// A sweep in long form, one row per member: sweep_id, sweep_name, member, repeat,
// member_state, member_message, then the member's run as write_summary_csv writes it (every
// setting a column; empty for a member without a run).
struct SweepRecord;
void write_sweep_csv(std::ostream& out, RunStore& store, const SweepRecord& sweep);

// One text field, quoted when it must be. A text that starts with '=', '+', '-', '@', TAB or CR
// (a formula to a spreadsheet) is written quoted with a ' before it, so that run names, tags
// and notes never run as formulas (OWASP's advice on CSV injection); numbers are never text.
std::string csv_field(std::string_view text);
// A number: shortest round-trip form with '.', integers without a fraction; "" for NaN.
std::string csv_number(double value);

}  // namespace mixlab::store
