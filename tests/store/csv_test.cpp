// CSV export read back by an RFC 4180 parser of its own (not the exporter's quoting run
// backwards): names, notes and messages with commas, quotes, CR/LF and non-ASCII text survive;
// numbers read back to the same doubles; NaN is an empty field; the output does not depend on
// the C or C++ locale.
#include "app/store/csv_export.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <locale>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "engine/train/run_fields.h"
#include "tests/store/store_test_util.h"

namespace mixlab::store {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// --- an independent RFC 4180 reader ---------------------------------------------------------

using Record = std::vector<std::string>;

// A state machine over the bytes: fields are unquoted (no quote, CR or LF inside) or quoted
// (anything, a quote doubled); every record ends with CRLF, the last one included.
std::vector<Record> parse_csv(std::string_view text) {
  enum class State { field_start, unquoted, quoted, quote_in_quoted, after_cr };
  std::vector<Record> records;
  Record record;
  std::string field;
  State state = State::field_start;
  const auto fail = [&](std::size_t at, const char* what) {
    throw std::runtime_error("CSV byte " + std::to_string(at) + ": " + what);
  };
  const auto end_field = [&] {
    record.push_back(std::move(field));
    field.clear();
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    switch (state) {
      case State::field_start:
        if (c == '"') {
          state = State::quoted;
          break;
        }
        [[fallthrough]];
      case State::unquoted:
        if (c == ',') {
          end_field();
          state = State::field_start;
        } else if (c == '\r') {
          end_field();
          state = State::after_cr;
        } else if (c == '"' || c == '\n') {
          fail(i, "quote or bare LF in an unquoted field");
        } else {
          field += c;
          state = State::unquoted;
        }
        break;
      case State::quoted:
        if (c == '"') {
          state = State::quote_in_quoted;
        } else {
          field += c;
        }
        break;
      case State::quote_in_quoted:
        if (c == '"') {
          field += '"';
          state = State::quoted;
        } else if (c == ',') {
          end_field();
          state = State::field_start;
        } else if (c == '\r') {
          end_field();
          state = State::after_cr;
        } else {
          fail(i, "text after a closing quote");
        }
        break;
      case State::after_cr:
        if (c != '\n') fail(i, "CR without LF at a record's end");
        records.push_back(std::move(record));
        record.clear();
        state = State::field_start;
        break;
    }
  }
  if (state != State::field_start || !record.empty()) fail(text.size(), "no CRLF at the end");
  return records;
}

TEST(CsvParser, ReadsQuotedFieldsDoubledQuotesAndEmbeddedNewlines) {
  const auto records = parse_csv("a,\"b,\"\"c\"\"\r\nd\",\r\n\"\",x\r\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0], (Record{"a", "b,\"c\"\r\nd", ""}));
  EXPECT_EQ(records[1], (Record{"", "x"}));
  EXPECT_THROW(parse_csv("a,b\n"), std::runtime_error);
  EXPECT_THROW(parse_csv("a,b"), std::runtime_error);
  EXPECT_THROW(parse_csv("a\"b\r\n"), std::runtime_error);
}

// --- expected values ------------------------------------------------------------------------

// What a field must read back as: text exactly, an integer, or a double (NaN: empty).
using Expected = std::variant<std::string, std::int64_t, double>;

void expect_field(const std::string& field, const Expected& expected, const std::string& where) {
  if (const auto* text = std::get_if<std::string>(&expected)) {
    EXPECT_EQ(field, *text) << where;
  } else if (const auto* integer = std::get_if<std::int64_t>(&expected)) {
    std::int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
    EXPECT_TRUE(ec == std::errc() && ptr == field.data() + field.size())
        << where << ": '" << field << "'";
    EXPECT_EQ(value, *integer) << where;
  } else {
    const double number = std::get<double>(expected);
    if (std::isnan(number)) {
      EXPECT_EQ(field, "") << where;
    } else if (std::isinf(number)) {
      EXPECT_EQ(field, number > 0 ? "inf" : "-inf") << where;
    } else {
      double value = 0;
      const auto [ptr, ec] = std::from_chars(field.data(), field.data() + field.size(), value);
      EXPECT_TRUE(ec == std::errc() && ptr == field.data() + field.size())
          << where << ": '" << field << "'";
      EXPECT_EQ(value, number) << where << ": '" << field << "'";
    }
  }
}

using Columns = std::vector<std::pair<std::string, Expected>>;

// The index of a header's column.
std::size_t column(const Record& header, std::string_view name) {
  const auto at = std::find(header.begin(), header.end(), name);
  if (at == header.end()) throw std::runtime_error("no column " + std::string(name));
  return static_cast<std::size_t>(at - header.begin());
}

// Checks a header row against the column names and a record against the values.
void expect_record(const Record& header, const Record& record, const Columns& columns,
                   const std::string& where) {
  ASSERT_EQ(header.size(), columns.size());
  ASSERT_EQ(record.size(), columns.size()) << where;
  for (std::size_t i = 0; i < columns.size(); ++i) {
    EXPECT_EQ(header[i], columns[i].first);
    expect_field(record[i], columns[i].second, where + ", column " + columns[i].first);
  }
}

Columns step_columns(const StepMetrics& s) {
  return {{"step", s.step},
          {"epoch", std::int64_t{s.epoch}},
          {"wall_offset_s", s.wall_offset_s},
          {"step_ms", s.step_ms},
          {"data_wait_ms", s.data_wait_ms},
          {"forward_ms", s.forward_ms},
          {"backward_ms", s.backward_ms},
          {"optimizer_ms", s.optimizer_ms},
          {"device_ms", s.device_ms},
          {"loss", s.loss},
          {"accuracy", s.accuracy},
          {"loss_scale", s.loss_scale},
          {"skipped", std::int64_t{s.skipped ? 1 : 0}},
          {"samples", std::int64_t{s.samples}}};
}

// --- the runs -------------------------------------------------------------------------------

constexpr std::int64_t kCreatedMs = 1764470707123;  // 2025-11-30T02:45:07.123Z
constexpr std::int64_t kStartedMs = 1764470708000;
constexpr std::int64_t kFinishedMs = 1764470720456;

// Doubles whose shortest form is long, tiny, huge, integral or not finite.
std::vector<StepMetrics> make_steps(int count, int batch) {
  std::vector<StepMetrics> steps;
  double scale = 32768.0;
  for (int i = 0; i < count; ++i) {
    StepMetrics s;
    s.step = i;
    s.epoch = i / 100;
    s.wall_offset_s = i * 0.0123456789;
    s.step_ms = 1.0 / 3.0 + i;
    s.data_wait_ms = 0.1 * i;
    s.forward_ms = 1e-300 * (i + 1);
    s.backward_ms = 2.0 + i;  // integral: "2", "3", ...
    s.optimizer_ms = 1e21 + i * 1e6;
    s.device_ms = i % 2 == 0 ? kNaN : 0.1 + 0.2 * i;  // even steps: not measured
    s.skipped = i % 7 == 3;
    s.loss = s.skipped ? kInf : 2.302585092994046 / (i + 1);
    s.accuracy = i / (i + 7.0);
    if (s.skipped) scale /= 2;
    s.loss_scale = scale;
    s.samples = i == count - 1 ? batch / 2 : batch;
    steps.push_back(s);
  }
  return steps;
}

struct SampleRun {
  RunRecord record;  // as inserted, with the tags, note and figures added later
  std::vector<StepMetrics> steps;
};

// A store in a fresh temporary folder, removed afterwards.
class CsvExport : public ::testing::Test {
 protected:
  void SetUp() override { store_.emplace(RunStore::open(dir_ / "runs.sqlite")); }

  // Records the run through the store's recording calls, as a StoreWriter would.
  void record(SampleRun& run) {
    RunRecord& r = run.record;
    RunRecord inserted = r;
    inserted.tags.clear();
    inserted.note.clear();
    r.id = store_->insert_run(inserted);
    store_->mark_started(r.id, r.started_at_ms, r.environment, r.total_steps,
                         r.summary.peak_memory_bytes);
    store_->insert_steps(r.id, run.steps);
    for (int e = 0; e < r.summary.epochs_completed; ++e) {
      EpochMetrics epoch;
      epoch.epoch = e;
      epoch.steps = 100;
      epoch.train_loss = 0.5 / (e + 1);
      epoch.train_accuracy = 0.6;
      epoch.time_s = 1.25;
      epoch.samples_per_s = 2560.0;
      store_->insert_epoch(r.id, epoch);
    }
    store_->finish_run(r.id, r.summary, r.finished_at_ms);
    store_->add_tags(r.id, r.tags);
    store_->set_note(r.id, r.note);
  }

  // Mixed float16 with dynamic scaling, a name and note that need quoting, and a comma in its
  // device name.
  SampleRun awkward_run() {
    SampleRun run;
    RunRecord& r = run.record;
    r.name = "loss, \"scaled\"\r\nline two ß → done";
    r.note = "note with, comma\nand \"quotes\" ß→\r\nend";
    r.tags = {"fp16", "a,b", "größe"};
    r.created_at_ms = kCreatedMs;
    r.started_at_ms = kStartedMs;
    r.finished_at_ms = kFinishedMs;
    r.model_name = "tiny \"mlp\"";
    r.model_json = R"({"name": "tiny"})";
    r.config.precision = Policy::mixed_float16;
    r.config.loss_scale = LossScaleConfig::dynamic();
    r.config.batch_size = 32;
    r.config.epochs = 2;
    r.config.optimizer = default_optimizer(OptimizerKind::adam);
    r.config.optimizer.learning_rate = 0.0003;
    r.config.seed = 1234567890123;
    r.config.dataset = parse_dataset_spec("synthetic:8x8x1:4:256");
    r.device = "cpu";
    r.environment.device_kind = "cpu";
    r.environment.device_name = "Test CPU, 8 cores";
    r.environment.cpu_model = "Test CPU, 8 cores";
    r.environment.threads = 4;
    r.environment.mixlab_version = "0.1.0";
    r.environment.hostname = "host";
    r.total_steps = 200;
    run.steps = make_steps(200, 32);
    RunSummary& s = r.summary;
    s.status = RunStatus::finished;
    s.steps = 200;
    s.skipped_steps = 29;
    s.epochs_completed = 2;
    s.final_loss_scale = 0.5;
    s.warmup_steps = 10;
    s.median_step_ms = 1.2345;
    s.p5_step_ms = 1.0;
    s.p95_step_ms = 2.5;
    s.samples_per_s = 12345.678901234567;
    s.final_loss = 0.1 + 0.2;
    s.final_accuracy = 0.75;
    s.test_loss = 0.4;
    s.test_accuracy = 0.8125;
    s.peak_memory_bytes = 123456789;
    s.wall_s = 12.456;
    return run;
  }

  // bfloat16 without loss scaling that diverged: a message that needs quoting, no test figures.
  SampleRun diverged_run() {
    SampleRun run;
    RunRecord& r = run.record;
    r.name = "plain";
    r.created_at_ms = kCreatedMs + 1000;
    r.started_at_ms = kStartedMs + 1000;
    r.finished_at_ms = kFinishedMs + 1000;
    r.model_name = "tiny";
    r.model_json = R"({"name": "tiny"})";
    r.config.precision = Policy::mixed_bfloat16;
    r.config.loss_scale = LossScaleConfig::none();
    r.config.batch_size = 64;
    r.config.optimizer = default_optimizer(OptimizerKind::sgd);
    r.config.dataset = parse_dataset_spec("synthetic:8x8x1:4:512");
    r.config.cuda_graphs = true;  // GPU options come out as 1 / 0 columns
    r.config.data_on_device = true;
    r.config.attention = AttentionKernels::unfused;  // a text GPU option
    r.config.fp8.history = 16;                       // the FP8 settings, off their defaults
    r.config.fp8.amax = Fp8AmaxAlgo::most_recent;
    r.config.fp8.margin = 2;
    r.config.fp8.formats = Fp8Formats::e4m3;
    r.device = "cuda:1";
    r.environment.device_kind = "cuda";
    r.environment.device_name = "Other GPU";
    r.environment.threads = 1;
    r.total_steps = 8;
    run.steps = make_steps(4, 64);
    RunSummary& s = r.summary;
    s.status = RunStatus::diverged;
    s.message = "loss is \"nan\", at step 3\r\nstopped";
    s.steps = 4;
    s.diverged_at_step = 3;
    s.wall_s = 0.5;
    return run;
  }

  // Records both sample runs, the awkward one first; returns their ids in that order.
  std::vector<std::int64_t> record_both() {
    awkward_ = awkward_run();
    diverged_ = diverged_run();
    record(awkward_);
    record(diverged_);
    return {awkward_.record.id, diverged_.record.id};
  }

  RunStore& store() { return *store_; }

  testing::TempDir dir_;  // outlives the store
  std::optional<RunStore> store_;
  SampleRun awkward_, diverged_;
};

std::string steps_csv(RunStore& store, std::int64_t id) {
  std::ostringstream out;
  write_steps_csv(out, store, id);
  return out.str();
}

TEST_F(CsvExport, StepsReadBackExactly) {
  SampleRun run = awkward_run();
  record(run);
  const auto records = parse_csv(steps_csv(store(), run.record.id));
  ASSERT_EQ(records.size(), 1 + run.steps.size());
  for (std::size_t i = 0; i < run.steps.size(); ++i) {
    expect_record(records[0], records[i + 1], step_columns(run.steps[i]),
                  "step " + std::to_string(i));
  }
  EXPECT_EQ(records[1][8], "") << "NaN device_ms is an empty field";
  EXPECT_EQ(records[4][9], "inf") << "a skipped step's loss";
  EXPECT_EQ(records[1][6], "2") << "integral doubles print without a fraction";
}

TEST_F(CsvExport, LongStepsRepeatEachRunsColumnsInTheOrderAsked) {
  record_both();
  const SampleRun &a = awkward_, &b = diverged_;
  const std::vector<std::int64_t> ids = {b.record.id, a.record.id};
  std::ostringstream out;
  write_long_steps_csv(out, store(), ids);
  const auto records = parse_csv(out.str());
  ASSERT_EQ(records.size(), 1 + b.steps.size() + a.steps.size());
  std::size_t row = 1;
  for (const SampleRun* run : {&b, &a}) {
    const RunRecord& r = run->record;
    for (const StepMetrics& step : run->steps) {
      Columns columns = {{"run_id", r.id},
                         {"run_name", r.name},
                         {"precision", std::string(to_string(r.config.precision))},
                         {"loss_scaling", r.config.loss_scale.to_string()},
                         {"batch_size", std::int64_t{r.config.batch_size}}};
      for (auto& column : step_columns(step)) columns.push_back(std::move(column));
      expect_record(records[0], records[row], columns, "row " + std::to_string(row));
      ++row;
    }
  }
  EXPECT_EQ(records[1][2], "mixed_bfloat16");
  EXPECT_EQ(records.back()[3], "dynamic");
}

Columns summary_columns(const RunRecord& r, std::string_view status) {
  const RunConfig& c = r.config;
  const RunSummary& s = r.summary;
  // The store hands tags back sorted, whatever order they were added in.
  std::vector<std::string> sorted_tags = r.tags;
  std::sort(sorted_tags.begin(), sorted_tags.end());
  std::string tags;
  for (const std::string& tag : sorted_tags) tags += (tags.empty() ? "" : ";") + tag;
  return {{"run_id", r.id},
          {"name", r.name},
          {"status", std::string(status)},
          {"created_at", format_utc(r.created_at_ms)},
          {"started_at", format_utc(r.started_at_ms)},
          {"finished_at", format_utc(r.finished_at_ms)},
          {"model", r.model_name},
          {"dataset", c.dataset.to_string()},
          {"precision", std::string(to_string(c.precision))},
          {"loss_scaling", c.loss_scale.to_string()},
          {"batch_size", std::int64_t{c.batch_size}},
          {"optimizer", std::string(to_string(c.optimizer.kind))},
          {"learning_rate", c.optimizer.learning_rate},
          {"epochs", std::int64_t{c.epochs}},
          {"steps_requested", c.steps},
          {"seed", static_cast<std::int64_t>(c.seed)},
          {"threads_requested", std::int64_t{c.threads}},
          {"tf32", std::int64_t{c.tf32 ? 1 : 0}},
          {"cuda_graphs", std::int64_t{c.cuda_graphs ? 1 : 0}},
          {"attention", std::string(to_string(c.attention))},
          {"fp8_history", std::int64_t{c.fp8.history}},
          {"fp8_amax", std::string(to_string(c.fp8.amax))},
          {"fp8_margin", std::int64_t{c.fp8.margin}},
          {"fp8_format", std::string(to_string(c.fp8.formats))},
          {"data_on_device", std::int64_t{c.data_on_device ? 1 : 0}},
          {"layer_timing", std::int64_t{c.layer_timing ? 1 : 0}},
          {"momentum", c.optimizer.momentum},
          {"nesterov", std::int64_t{c.optimizer.nesterov ? 1 : 0}},
          {"beta_1", c.optimizer.beta_1},
          {"beta_2", c.optimizer.beta_2},
          {"epsilon", c.optimizer.epsilon},
          {"evaluate", std::int64_t{c.evaluate ? 1 : 0}},
          {"warmup_steps_requested", std::int64_t{c.warmup_steps}},
          {"steps", r.total_steps},
          {"threads", std::int64_t{r.environment.threads}},
          {"device", r.device},
          {"device_name", r.environment.device_name},
          {"compute_capability", r.environment.compute_capability},
          {"cpu_model", r.environment.cpu_model},
          {"mixlab_version", r.environment.mixlab_version},
          {"steps_done", s.steps},
          {"skipped_steps", s.skipped_steps},
          {"epochs_completed", std::int64_t{s.epochs_completed}},
          {"warmup_steps", s.warmup_steps},
          {"median_step_ms", s.median_step_ms},
          {"p5_step_ms", s.p5_step_ms},
          {"p95_step_ms", s.p95_step_ms},
          {"samples_per_s", s.samples_per_s},
          {"final_loss", s.final_loss},
          {"final_accuracy", s.final_accuracy},
          {"test_loss", s.test_loss},
          {"test_accuracy", s.test_accuracy},
          {"final_loss_scale", s.final_loss_scale},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"wall_s", s.wall_s},
          {"tags", tags},
          {"note", r.note},
          {"message", s.message}};
}

TEST_F(CsvExport, SummaryReadsBackEveryField) {
  const std::vector<std::int64_t> ids = record_both();
  const SampleRun &a = awkward_, &b = diverged_;
  std::ostringstream out;
  write_summary_csv(out, store(), ids);
  const auto records = parse_csv(out.str());
  ASSERT_EQ(records.size(), 3u);
  expect_record(records[0], records[1], summary_columns(a.record, "finished"), "awkward run");
  expect_record(records[0], records[2], summary_columns(b.record, "diverged"), "diverged run");
  EXPECT_EQ(records[1][column(records[0], "created_at")], "2025-11-30T02:45:07.123Z");
  EXPECT_EQ(records[1][column(records[0], "tags")], "a,b;fp16;größe");
  EXPECT_EQ(records[2][column(records[0], "test_accuracy")], "") << "a run without test figures";
}

// Every run setting of the table is a summary column, written as the CSV writes its type; a new
// field reaches the export without a line here.
TEST_F(CsvExport, SummaryHasEveryRunSetting) {
  SampleRun run = awkward_run();
  for (const RunField& f : run_fields()) set_field_text(f, run.record.config, f.example);
  record(run);
  std::ostringstream out;
  write_summary_csv(out, store(), {&run.record.id, 1});
  const auto records = parse_csv(out.str());
  ASSERT_EQ(records.size(), 2u);
  for (const RunField& f : run_fields()) {
    SCOPED_TRACE(std::string(f.name));
    ASSERT_EQ(std::count(records[0].begin(), records[0].end(), f.csv_column), 1);
    const std::string& value = records[1][column(records[0], f.csv_column)];
    if (f.type == FieldType::boolean) {
      EXPECT_EQ(value, f.example == "true" ? "1" : "0");
    } else {
      EXPECT_EQ(value, f.example);
    }
  }
}

// Every shape of export of both runs, concatenated.
std::string export_everything(RunStore& store, const std::vector<std::int64_t>& ids) {
  std::ostringstream out;
  write_steps_csv(out, store, ids[0]);
  write_long_steps_csv(out, store, ids);
  write_summary_csv(out, store, ids);
  return out.str();
}

// Puts back the "C" locale (C and C++) that a test changed.
struct ClassicLocaleAfterwards {
  ~ClassicLocaleAfterwards() {
    std::locale::global(std::locale::classic());
    std::setlocale(LC_ALL, "C");
  }
};

TEST_F(CsvExport, SameBytesUnderADecimalCommaLocale) {
  const std::vector<std::int64_t> ids = record_both();
  const std::string expected = export_everything(store(), ids);

  ClassicLocaleAfterwards restore;
  std::string installed;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"}) {
    if (std::setlocale(LC_ALL, name) == nullptr) continue;
    try {
      std::locale::global(std::locale(name));
    } catch (const std::runtime_error&) {
      continue;
    }
    installed = name;
    break;
  }
  if (installed.empty()) GTEST_SKIP() << "no de_DE or fr_FR locale installed";
  char probe[16];
  std::snprintf(probe, sizeof probe, "%.1f", 0.5);
  ASSERT_STREQ(probe, "0,5") << installed << " should write a decimal comma";
  EXPECT_EQ(export_everything(store(), ids), expected) << "under " << installed;
}

// A decimal comma and digit grouping as a C++ locale facet: runs without installed locales.
struct CommaDecimal : std::numpunct<char> {
  char do_decimal_point() const override { return ','; }
  char do_thousands_sep() const override { return '.'; }
  std::string do_grouping() const override { return "\3"; }
};

TEST_F(CsvExport, SameBytesUnderADecimalCommaCppLocale) {
  const std::vector<std::int64_t> ids = record_both();
  const std::string expected = export_everything(store(), ids);

  ClassicLocaleAfterwards restore;
  std::locale::global(std::locale(std::locale::classic(), new CommaDecimal));
  std::ostringstream probe;
  probe << 1234.5;
  ASSERT_EQ(probe.str(), "1.234,5");
  EXPECT_EQ(export_everything(store(), ids), expected);
}

TEST(CsvField, QuotesOnlyWhenItMust) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field(" spaces kept "), " spaces kept ");
  EXPECT_EQ(csv_field("ß →"), "ß →");
  EXPECT_EQ(csv_field("a;b"), "a;b");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("\""), "\"\"\"\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  EXPECT_EQ(csv_field("lf\nx"), "\"lf\nx\"");
}

// A text cell a spreadsheet would run as a formula is neutralised with a leading ' (OWASP's
// advice on CSV injection) and quoted; the rest of the text is kept, and numbers never are text.
TEST(CsvField, NeutralisesFormulas) {
  EXPECT_EQ(csv_field("=cmd|' /C calc'!A0"), "\"'=cmd|' /C calc'!A0\"");
  EXPECT_EQ(csv_field("+1"), "\"'+1\"");
  EXPECT_EQ(csv_field("-x"), "\"'-x\"");
  EXPECT_EQ(csv_field("@SUM(A1)"), "\"'@SUM(A1)\"");
  EXPECT_EQ(csv_field("\tx"), "\"'\tx\"");
  EXPECT_EQ(csv_field("\rx"), "\"'\rx\"");
  EXPECT_EQ(csv_field("=\"a\",b"), "\"'=\"\"a\"\",b\"");
  EXPECT_EQ(csv_field("a=b"), "a=b");
  EXPECT_EQ(csv_number(-1.5), "-1.5");
  const Record back = parse_csv(csv_field("=1+2") + "\r\n").at(0);
  EXPECT_EQ(back, Record{"'=1+2"});
}

TEST(CsvNumber, ShortestRoundTripWithADecimalPoint) {
  EXPECT_EQ(csv_number(3.0), "3");
  EXPECT_EQ(csv_number(-2.5), "-2.5");
  EXPECT_EQ(csv_number(0.1), "0.1");
  EXPECT_EQ(csv_number(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(csv_number(65536.0), "65536");
  EXPECT_EQ(csv_number(1e-7), "1e-07");
  EXPECT_EQ(csv_number(kNaN), "");
  EXPECT_EQ(csv_number(kInf), "inf");
  EXPECT_EQ(csv_number(-kInf), "-inf");
}

TEST_F(CsvExport, UnknownRunIdThrowsNamingItAndWritesNothing) {
  SampleRun a = diverged_run();
  record(a);
  const std::vector<std::int64_t> ids = {a.record.id, 424242};
  std::ostringstream out;
  const auto expect_names_id = [](const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find("424242"), std::string::npos) << e.what();
  };
  try {
    write_steps_csv(out, store(), 424242);
    ADD_FAILURE() << "write_steps_csv accepted an unknown id";
  } catch (const StoreError& e) {
    expect_names_id(e);
  }
  try {
    write_long_steps_csv(out, store(), ids);
    ADD_FAILURE() << "write_long_steps_csv accepted an unknown id";
  } catch (const StoreError& e) {
    expect_names_id(e);
  }
  try {
    write_summary_csv(out, store(), ids);
    ADD_FAILURE() << "write_summary_csv accepted an unknown id";
  } catch (const StoreError& e) {
    expect_names_id(e);
  }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace mixlab::store
