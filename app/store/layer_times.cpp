// The run store's per-layer times (schema version 3): rows per step and layer as the trainer
// reports them, summarised per layer when read; and the per-layer overflow counts of the steps
// whose overflow check failed (version 8).
#include <sqlite3.h>

#include <algorithm>
#include <optional>

#include "app/store/run_store.h"
#include "engine/spec/layer_text.h"
#include "engine/train/stats.h"

namespace mixlab::store {

StoredLayerTitles::StoredLayerTitles(const std::string& model_json) {
  try {
    spec_ = parse_model_json(model_json);
  } catch (const std::exception&) {
    // A model the engine no longer reads: layers keep their numbers.
  }
}

std::string StoredLayerTitles::operator()(int layer) const {
  return spec_ ? layer_title(*spec_, layer) : "layer " + std::to_string(layer);
}

void RunStore::insert_layer_times(std::int64_t run_id, std::int64_t step,
                                  std::span<const LayerTiming> layers) {
  Statement st = db_.prepare(
      "INSERT OR REPLACE INTO layer_times (run_id, step, layer, forward_ms, backward_ms) "
      "VALUES (?, ?, ?, ?, ?)");
  std::optional<Transaction> own;
  if (sqlite3_get_autocommit(db_.get()) != 0) own.emplace(db_);
  for (const LayerTiming& t : layers) {
    st.bind(1, run_id).bind(2, step).bind(3, t.layer).bind(4, t.forward_ms).bind(5, t.backward_ms);
    st.run();
  }
  if (own) own->commit();
}

void RunStore::insert_layer_overflows(std::int64_t run_id, std::int64_t step,
                                      std::span<const LayerOverflow> layers) {
  Statement st = db_.prepare(
      "INSERT OR REPLACE INTO layer_overflows (run_id, step, layer, nonfinite, n_values) "
      "VALUES (?, ?, ?, ?, ?)");
  std::optional<Transaction> own;
  if (sqlite3_get_autocommit(db_.get()) != 0) own.emplace(db_);
  for (const LayerOverflow& o : layers) {
    st.bind(1, run_id).bind(2, step).bind(3, o.layer).bind(4, o.nonfinite).bind(5, o.values);
    st.run();
  }
  if (own) own->commit();
}

void RunStore::insert_fp8_tensors(std::int64_t run_id, std::int64_t step,
                                  std::span<const Fp8TensorStep> tensors) {
  Statement st = db_.prepare(
      "INSERT OR REPLACE INTO fp8_tensors (run_id, step, layer, part, role, amax, scale, "
      "next_scale, n_values, saturated, flushed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  std::optional<Transaction> own;
  if (sqlite3_get_autocommit(db_.get()) != 0) own.emplace(db_);
  for (const Fp8TensorStep& t : tensors) {
    st.bind(1, run_id).bind(2, step).bind(3, t.layer).bind(4, t.part);
    st.bind(5, to_string(t.role)).bind(6, static_cast<double>(t.amax));  // NaN: NULL
    st.bind(7, static_cast<double>(t.scale)).bind(8, static_cast<double>(t.next_scale));
    st.bind(9, t.values).bind(10, t.saturated).bind(11, t.flushed);
    st.run();
  }
  if (own) own->commit();
}

std::vector<Fp8TensorRecord> RunStore::fp8_tensors(std::int64_t run_id) {
  Statement st = db_.prepare(
      "SELECT step, layer, part, role, amax, scale, next_scale, n_values, saturated, flushed "
      "FROM fp8_tensors WHERE run_id = ? ORDER BY step, layer, part, "
      "CASE role WHEN 'input' THEN 0 WHEN 'kernel' THEN 1 ELSE 2 END");
  st.bind(1, run_id);
  std::vector<Fp8TensorRecord> out;
  while (st.step()) {
    Fp8TensorRecord r;
    r.step = st.column_int(0);
    Fp8TensorStep& t = r.tensor;
    t.layer = static_cast<int>(st.column_int(1));
    t.part = static_cast<int>(st.column_int(2));
    const auto role = parse_fp8_role(st.column_text(3));
    if (!role) continue;  // a role this MixLab does not know
    t.role = *role;
    t.amax = static_cast<float>(st.column_double(4));  // NULL: NaN
    t.scale = static_cast<float>(st.column_double(5));
    t.next_scale = static_cast<float>(st.column_double(6));
    t.values = st.column_int(7);
    t.saturated = st.column_int(8);
    t.flushed = st.column_int(9);
    out.push_back(r);
  }
  return out;
}

std::vector<LayerOverflowSummary> RunStore::layer_overflows(std::int64_t run_id) {
  const RunRecord record = run(run_id);
  const StoredLayerTitles title(record.model_json);
  Statement st = db_.prepare(
      "SELECT layer, COUNT(*), SUM(nonfinite), MAX(n_values), MIN(step), MAX(step) "
      "FROM layer_overflows WHERE run_id = ? GROUP BY layer ORDER BY layer");
  st.bind(1, run_id);
  std::vector<LayerOverflowSummary> out;
  while (st.step()) {
    LayerOverflowSummary s;
    s.layer = static_cast<int>(st.column_int(0));
    s.title = title(s.layer);
    s.steps = st.column_int(1);
    s.nonfinite = st.column_int(2);
    s.values = st.column_int(3);
    s.first_step = st.column_int(4);
    s.last_step = st.column_int(5);
    out.push_back(std::move(s));
  }
  return out;
}

std::vector<LayerTimeSummary> RunStore::layer_times(std::int64_t run_id) {
  const RunRecord record = run(run_id);
  std::vector<std::vector<double>> forward, backward;  // per layer, in step order
  Statement st = db_.prepare(
      "SELECT layer, forward_ms, backward_ms FROM layer_times WHERE run_id = ? "
      "ORDER BY layer, step");
  st.bind(1, run_id);
  while (st.step()) {
    const auto layer = static_cast<std::size_t>(std::max<std::int64_t>(0, st.column_int(0)));
    if (forward.size() <= layer) {
      forward.resize(layer + 1);
      backward.resize(layer + 1);
    }
    forward[layer].push_back(st.column_double(1));
    backward[layer].push_back(st.column_double(2));
  }
  const StoredLayerTitles title(record.model_json);
  std::vector<LayerTimeSummary> out;
  for (std::size_t i = 0; i < forward.size(); ++i) {
    const std::size_t n = forward[i].size();
    if (n == 0) continue;
    // The warm-up steps are left out as the step-time summary leaves them out: the first
    // min(warm-up, n / 2).
    const auto skip = std::min<std::size_t>(
        static_cast<std::size_t>(std::max(0, record.config.warmup_steps)), n / 2);
    const std::vector<double> f(forward[i].begin() + static_cast<std::ptrdiff_t>(skip),
                                forward[i].end());
    const std::vector<double> b(backward[i].begin() + static_cast<std::ptrdiff_t>(skip),
                                backward[i].end());
    LayerTimeSummary s;
    s.layer = static_cast<int>(i);
    s.title = title(s.layer);
    s.steps = static_cast<std::int64_t>(f.size());
    s.forward_ms = quantile(f, 0.5);
    s.backward_ms = quantile(b, 0.5);
    s.forward_p95_ms = quantile(f, 0.95);
    s.backward_p95_ms = quantile(b, 0.95);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace mixlab::store
