#include "app/store/csv_export.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "app/store/sweep_plan.h"
#include "app/store/sweeps.h"
#include "engine/core/error.h"
#include "engine/train/run_fields.h"

namespace mixlab::store {

namespace {

constexpr std::string_view kStepColumns =
    "step,epoch,wall_offset_s,step_ms,data_wait_ms,forward_ms,backward_ms,optimizer_ms,device_ms,"
    "loss,accuracy,loss_scale,skipped,samples";

// The summary's columns: the run's, every run setting's (engine/train/run_fields.h) in table
// order, then what the run ran on and did. "steps" is the steps planned and "threads" the threads
// used; the settings asked for are steps_requested and threads_requested.
constexpr std::string_view kSummaryRunColumns =
    "run_id,name,status,created_at,started_at,finished_at,model";
constexpr std::string_view kSummaryResultColumns =
    "steps,threads,device,device_name,compute_capability,cpu_model,mixlab_version,steps_done,"
    "skipped_steps,epochs_completed,warmup_steps,median_step_ms,p5_step_ms,p95_step_ms,"
    "samples_per_s,final_loss,final_accuracy,test_loss,test_accuracy,final_loss_scale,"
    "peak_memory_bytes,wall_s,tags,note,message";

constexpr std::string_view kRecordEnd = "\r\n";

// Builds one record in a reused buffer and writes it in one call: a million-step export then
// costs one stream write per row, and no allocation once the buffer has grown.
class RowBuffer {
 public:
  explicit RowBuffer(std::ostream& out) : out_(out) {}

  RowBuffer& text(std::string_view value) {
    separate();
    append_field(line_, value);
    return *this;
  }
  RowBuffer& number(double value) {
    separate();
    append_number(line_, value);
    return *this;
  }
  template <typename Integer>
  RowBuffer& integer(Integer value) {
    separate();
    char buf[24];
    const auto result = std::to_chars(buf, buf + sizeof buf, value);
    line_.append(buf, result.ptr);
    return *this;
  }
  // A run setting as the CSV writes it: booleans as 0 / 1.
  RowBuffer& setting(const FieldValue& value) {
    if (const auto* text_value = std::get_if<std::string>(&value)) return text(*text_value);
    if (const auto* real = std::get_if<double>(&value)) return number(*real);
    if (const auto* boolean = std::get_if<bool>(&value)) return integer(*boolean ? 1 : 0);
    return integer(std::get<std::int64_t>(value));
  }
  // Fields already in CSV form: a header, or the columns a run repeats on each of its rows.
  RowBuffer& raw(std::string_view csv) {
    separate();
    line_ += csv;
    return *this;
  }
  void end() {
    line_ += kRecordEnd;
    out_.write(line_.data(), static_cast<std::streamsize>(line_.size()));
    line_.clear();
    first_ = true;
  }

  static void append_field(std::string& to, std::string_view value) {
    // A spreadsheet runs a cell that starts with one of these as a formula (CSV injection);
    // a leading ' makes it text, as OWASP advises.
    const bool formula = !value.empty() && std::string_view("=+-@\t\r").find(value[0]) !=
                                               std::string_view::npos;
    if (!formula && value.find_first_of(",\"\r\n") == std::string_view::npos) {
      to += value;
      return;
    }
    to += '"';
    if (formula) to += '\'';
    for (const char c : value) {
      if (c == '"') to += '"';
      to += c;
    }
    to += '"';
  }
  static void append_number(std::string& to, double value) {
    if (std::isnan(value)) return;  // not measured
    if (std::isinf(value)) {
      to += value > 0 ? "inf" : "-inf";
      return;
    }
    // std::to_chars never consults the locale, and without a precision it writes the shortest
    // form that reads back to the same double ("3", "0.1", "1e-07").
    char buf[32];
    const auto result = std::to_chars(buf, buf + sizeof buf, value);
    to.append(buf, result.ptr);
  }

 private:
  void separate() {
    if (!first_) line_ += ',';
    first_ = false;
  }

  std::ostream& out_;
  std::string line_;
  bool first_ = true;
};

void append_step(RowBuffer& row, const StepMetrics& s) {
  row.integer(s.step)
      .integer(s.epoch)
      .number(s.wall_offset_s)
      .number(s.step_ms)
      .number(s.data_wait_ms)
      .number(s.forward_ms)
      .number(s.backward_ms)
      .number(s.optimizer_ms)
      .number(s.device_ms)
      .number(s.loss)
      .number(s.accuracy)
      .number(s.loss_scale)
      .integer(s.skipped ? 1 : 0)
      .integer(s.samples);
}

// Every record first, so that an unknown id fails before anything is written, and a damaged
// one too: the defaults standing in for the settings it could not read are no figures to export.
std::vector<RunRecord> records_of(RunStore& store, std::span<const std::int64_t> run_ids) {
  std::vector<RunRecord> records;
  records.reserve(run_ids.size());
  for (const std::int64_t id : run_ids) {
    records.push_back(store.run(id));
    if (records.back().damage.empty()) continue;
    throw StoreError("run " + std::to_string(id) + " is damaged (" +
                     describe_damage(records.back()) + "); it cannot be exported");
  }
  return records;
}

std::string join_tags(const std::vector<std::string>& tags) {
  std::string joined;
  for (const std::string& tag : tags) {
    if (!joined.empty()) joined += ';';
    joined += tag;
  }
  return joined;
}

}  // namespace

std::string csv_field(std::string_view text) {
  std::string field;
  RowBuffer::append_field(field, text);
  return field;
}

std::string csv_number(double value) {
  std::string number;
  RowBuffer::append_number(number, value);
  return number;
}

void write_steps_csv(std::ostream& out, RunStore& store, std::int64_t run_id) {
  records_of(store, {&run_id, 1});  // an unknown id throws before the header is written
  RowBuffer row(out);
  row.raw(kStepColumns).end();
  store.for_each_step(run_id, [&](const StepMetrics& step) {
    append_step(row, step);
    row.end();
  });
}

void write_long_steps_csv(std::ostream& out, RunStore& store,
                          std::span<const std::int64_t> run_ids) {
  const std::vector<RunRecord> records = records_of(store, run_ids);
  // The run, and the settings that tell runs apart in a plot (RunField::per_step_csv).
  std::string header = "run_id,run_name";
  for (const RunField& f : run_fields()) {
    if (!f.per_step_csv) continue;
    header += ',';
    header += f.csv_column;
  }
  RowBuffer row(out);
  row.raw(header).raw(kStepColumns).end();
  for (const RunRecord& r : records) {
    // The run's columns are the same on each of its rows: format them once.
    std::string prefix;
    RowBuffer::append_field(prefix, std::to_string(r.id));
    prefix += ',';
    RowBuffer::append_field(prefix, r.name);
    for (const RunField& f : run_fields()) {
      if (!f.per_step_csv) continue;
      prefix += ',';
      RowBuffer::append_field(prefix, field_text(f, r.config));
    }
    store.for_each_step(r.id, [&](const StepMetrics& step) {
      row.raw(prefix);
      append_step(row, step);
      row.end();
    });
  }
}

namespace {

// The summary's header: the run's columns, every setting's, then the figures'.
std::string summary_header() {
  std::string header(kSummaryRunColumns);
  for (const RunField& f : run_fields()) {
    header += ',';
    header += f.csv_column;
  }
  header += ',';
  header += kSummaryResultColumns;
  return header;
}

// One run's fields of the summary, in summary_header()'s order.
void append_summary(RowBuffer& row, const RunRecord& r) {
  const Environment& env = r.environment;
  const RunSummary& s = r.summary;
  row.integer(r.id)
      .text(r.name)
      .text(to_string(r.status))
      .text(format_utc(r.created_at_ms))
      .text(format_utc(r.started_at_ms))
      .text(format_utc(r.finished_at_ms))
      .text(r.model_name);
  for (const RunField& f : run_fields()) row.setting(f.get(r.config));
  row.integer(r.total_steps)
      .integer(env.threads)
      .text(r.device)
      .text(env.device_name)
      .text(env.compute_capability)
      .text(env.cpu_model)
      .text(env.mixlab_version)
      .integer(s.steps)
      .integer(s.skipped_steps)
      .integer(s.epochs_completed)
      .integer(s.warmup_steps)
      .number(s.median_step_ms)
      .number(s.p5_step_ms)
      .number(s.p95_step_ms)
      .number(s.samples_per_s)
      .number(s.final_loss)
      .number(s.final_accuracy)
      .number(s.test_loss)
      .number(s.test_accuracy)
      .number(s.final_loss_scale)
      .integer(s.peak_memory_bytes)
      .number(s.wall_s)
      .text(join_tags(r.tags))
      .text(r.note)
      .text(r.message);
}

}  // namespace

void write_summary_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids) {
  const std::vector<RunRecord> records = records_of(store, run_ids);
  RowBuffer row(out);
  row.raw(summary_header()).end();
  for (const RunRecord& r : records) {
    append_summary(row, r);
    row.end();
  }
}

void write_layers_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids) {
  const std::vector<RunRecord> records = records_of(store, run_ids);
  RowBuffer row(out);
  row.raw(
         "run_id,run_name,precision,batch_size,device,layer,layer_title,steps,forward_ms,"
         "backward_ms,forward_p95_ms,backward_p95_ms")
      .end();
  for (const RunRecord& r : records) {
    for (const LayerTimeSummary& l : store.layer_times(r.id)) {
      row.integer(r.id)
          .text(r.name)
          .text(to_string(r.config.precision))
          .integer(r.config.batch_size)
          .text(r.device)
          .integer(l.layer)
          .text(l.title)
          .integer(l.steps)
          .number(l.forward_ms)
          .number(l.backward_ms)
          .number(l.forward_p95_ms)
          .number(l.backward_p95_ms);
      row.end();
    }
  }
}

void write_fp8_csv(std::ostream& out, RunStore& store, std::span<const std::int64_t> run_ids) {
  const std::vector<RunRecord> records = records_of(store, run_ids);
  RowBuffer row(out);
  row.raw(
         "run_id,run_name,step,layer,layer_title,part,role,amax,scale,next_scale,values,"
         "saturated,flushed")
      .end();
  for (const RunRecord& r : records) {
    const StoredLayerTitles title(r.model_json);
    for (const Fp8TensorRecord& f : store.fp8_tensors(r.id)) {
      const Fp8TensorStep& t = f.tensor;
      row.integer(r.id)
          .text(r.name)
          .integer(f.step)
          .integer(t.layer)
          .text(title(t.layer))
          .integer(t.part)
          .text(to_string(t.role))
          .number(t.amax)
          .number(t.scale)
          .number(t.next_scale)
          .integer(t.values)
          .integer(t.saturated)
          .integer(t.flushed);
      row.end();
    }
  }
}

void write_sweep_csv(std::ostream& out, RunStore& store, const SweepRecord& sweep) {
  const std::string header = summary_header();
  // A member without a run: as many empty fields as the summary has columns.
  const std::string no_run(static_cast<std::size_t>(std::count(header.begin(), header.end(), ',')),
                           ',');
  RowBuffer row(out);
  row.raw("sweep_id,sweep_name,member,repeat,member_state,member_message").raw(header).end();
  for (const SweepMemberRecord& m : sweep.members) {
    int repeat = 0;
    try {
      repeat = parse_sweep_member(m.settings_json).repeat;
    } catch (const std::exception&) {
    }
    row.integer(sweep.id)
        .text(sweep.name)
        .integer(m.member)
        .integer(repeat)
        .text(to_string(m.state))
        .text(m.message);
    const std::optional<RunRecord> run = m.run_id ? store.find_run(*m.run_id) : std::nullopt;
    // A damaged run's settings could not be read: no defaults in their place.
    if (run && run->damage.empty()) append_summary(row, *run);
    else row.raw(no_run);
    row.end();
  }
}

}  // namespace mixlab::store
