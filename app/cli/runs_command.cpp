// mixlab-cli runs: the run history in the run store: list, show, export (CSV), compare, and
// rename, tag, note or delete runs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <span>
#include <utility>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "engine/core/error.h"

namespace mixlab::cli {

namespace {

namespace fs = std::filesystem;
using store::RunRecord;
using store::RunStore;
using Json = nlohmann::ordered_json;

constexpr const char* kDatabaseNote =
    "The database is --db PATH, else $MIXLAB_DB, else $XDG_DATA_HOME/mixlab/runs.sqlite\n"
    "(~/.local/share/mixlab/runs.sqlite without XDG_DATA_HOME).";

// --- arguments ------------------------------------------------------------------------------

// What a subcommand was given; CLI11 fills in the options each one has.
struct RunsArgs {
  std::vector<std::string> positionals;
  std::string db;  // empty: --db not given
  bool json = false;
  bool steps = false;
  bool summary = false;
  bool remove = false;
  std::string output;  // empty: stdout
  std::string usage;   // "mixlab-cli runs show ID [--json]"
};

std::int64_t parse_run_id(const std::string& text) {
  std::int64_t id = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, id);
  if (ec != std::errc() || ptr != end || id <= 0) {
    throw UsageError("a run id is a positive number, got '" + text + "'");
  }
  return id;
}

std::vector<std::int64_t> parse_run_ids(std::span<const std::string> texts) {
  std::vector<std::int64_t> ids;
  for (const std::string& text : texts) ids.push_back(parse_run_id(text));
  return ids;
}

// The positionals after the subcommand, at least `min` (and at most `max`) of them.
const std::vector<std::string>& positionals(const RunsArgs& args, std::size_t min,
                                            std::size_t max) {
  const auto& p = args.positionals;
  if (p.size() < min || p.size() > max) throw UsageError("usage: " + args.usage);
  return p;
}

fs::path store_path(const RunsArgs& args) {
  if (!args.db.empty()) return args.db;
  return store::default_store_path();
}

std::string no_run(std::int64_t id, const fs::path& path) {
  return "no run " + std::to_string(id) + " in " + path.string();
}

// A store and the records of the runs a command names, in the order named.
struct OpenRuns {
  RunStore store;
  std::vector<RunRecord> records;
};

// Opens the store at `path`, checking that it holds every one of `ids` before the command
// touches any. It never creates a database: without the file there is no such run.
OpenRuns open_runs(const fs::path& path, std::span<const std::int64_t> ids) {
  if (!fs::exists(path)) throw RunNotFoundError(no_run(ids.front(), path));
  OpenRuns open{RunStore::open(path), {}};
  for (const std::int64_t id : ids) {
    auto record = open.store.find_run(id);
    if (!record) throw RunNotFoundError(no_run(id, path));
    open.records.push_back(std::move(*record));
  }
  return open;
}

// --- formatting -----------------------------------------------------------------------------

Json number_or_null(double value) {
  return std::isfinite(value) ? Json(value) : Json();
}

Json time_or_null(std::int64_t ms) {
  return ms != 0 ? Json(store::format_utc(ms)) : Json();
}

void print_json(const Json& json) {
  // Names and notes are the user's text: a byte that is not UTF-8 becomes U+FFFD rather than
  // failing the whole command.
  std::cout << json.dump(2, ' ', false, Json::error_handler_t::replace) << std::endl;
}

// "2026-11-30 02:45" (UTC) for tables.
std::string short_time(std::int64_t ms) {
  std::string text = store::format_utc(ms);
  if (text.size() < 16) return "-";
  text.resize(16);
  text[10] = ' ';
  return text;
}

// A ratio such as "1.85x", "-" when either time was not measured.
std::string format_ratio(double ratio) {
  return std::isfinite(ratio) ? format_fixed(ratio, 2) + "x" : "-";
}

// "1 epoch", "2 epochs"
std::string count_of(std::int64_t n, const std::string& noun) {
  return group_digits(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string format_rate(double per_s) {
  return std::isfinite(per_s) ? group_digits(std::llround(per_s)) : "-";
}

// User text on one table line: control characters (a name's newline) become spaces, and long
// text is cut to `max_chars` characters (UTF-8 sequences kept whole).
std::string one_line(const std::string& text, std::size_t max_chars) {
  std::string line;
  std::size_t chars = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const bool starts_char = (byte & 0xC0) != 0x80;
    if (starts_char && ++chars > max_chars) {
      line += "\xe2\x80\xa6";  // "…"
      break;
    }
    line += byte < 0x20 || byte == 0x7F ? ' ' : text[i];
  }
  return line;
}

// Display width in characters, counting each UTF-8 sequence once.
std::size_t text_width(const std::string& text) {
  std::size_t width = 0;
  for (const char c : text) width += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return width;
}

// A text table whose columns are as wide as their widest cell; numbers right-aligned.
class Table {
 public:
  struct Column {
    std::string title;
    bool numeric = false;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void print(std::ostream& out, const std::string& indent = "") const {
    std::vector<std::size_t> widths;
    for (const Column& c : columns_) widths.push_back(text_width(c.title));
    for (const auto& row : rows_) {
      for (std::size_t i = 0; i < row.size(); ++i)
        widths[i] = std::max(widths[i], text_width(row[i]));
    }
    const auto print_row = [&](const std::vector<std::string>& cells) {
      std::string line = indent;
      for (std::size_t i = 0; i < cells.size(); ++i) {
        const std::string pad(widths[i] - text_width(cells[i]), ' ');
        if (i > 0) line += "  ";
        line += columns_[i].numeric ? pad + cells[i] : cells[i] + pad;
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << '\n';
    };
    std::vector<std::string> titles;
    for (const Column& c : columns_) titles.push_back(c.title);
    print_row(titles);
    for (const auto& row : rows_) print_row(row);
  }

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

std::string precision_of(const RunRecord& r) {
  return std::string(to_string(r.config.precision));
}

// --- list -----------------------------------------------------------------------------------

int list_runs(const RunsArgs& args) {
  const fs::path path = store_path(args);
  std::vector<RunRecord> runs;
  if (fs::exists(path)) runs = RunStore::open(path).list_runs();
  if (args.json) {
    Json out = Json::array();
    for (const RunRecord& r : runs) {
      out.push_back({{"id", r.id},
                     {"name", r.name},
                     {"status", std::string(store::to_string(r.status))},
                     {"created_at", store::format_utc(r.created_at_ms)},
                     {"model", r.model_name},
                     {"precision", precision_of(r)},
                     {"batch_size", r.config.batch_size},
                     {"median_step_ms", number_or_null(r.summary.median_step_ms)},
                     {"samples_per_s", number_or_null(r.summary.samples_per_s)},
                     {"test_accuracy", number_or_null(r.summary.test_accuracy)}});
    }
    print_json(out);
    return kExitOk;
  }
  if (runs.empty()) {
    std::cout << "no runs recorded in " << path.string() << " yet\n";
    return kExitOk;
  }
  Table table({{"id", true},
               {"name"},
               {"status"},
               {"created (UTC)"},
               {"model"},
               {"precision"},
               {"batch", true},
               {"median step ms", true},
               {"samples/s", true},
               {"test acc.", true}});
  for (const RunRecord& r : runs) {
    table.add({std::to_string(r.id), one_line(r.name, 40), std::string(store::to_string(r.status)),
               short_time(r.created_at_ms), one_line(r.model_name, 24), precision_of(r),
               std::to_string(r.config.batch_size), format_fixed(r.summary.median_step_ms, 3),
               format_rate(r.summary.samples_per_s), format_fixed(r.summary.test_accuracy, 4)});
  }
  table.print(std::cout);
  return kExitOk;
}

// --- show -----------------------------------------------------------------------------------

Json environment_json(const store::Environment& e) {
  return {{"device_kind", e.device_kind},
          {"device_name", e.device_name},
          {"compute_capability", e.compute_capability},
          {"driver_version", e.driver_version},
          {"cuda_version", e.cuda_version},
          {"cudnn_version", e.cudnn_version},
          {"cublas_version", e.cublas_version},
          {"onednn_version", e.onednn_version},
          {"cpu_model", e.cpu_model},
          {"threads", e.threads},
          {"mixlab_version", e.mixlab_version},
          {"hostname", e.hostname}};
}

Json summary_json(const RunSummary& s) {
  return {{"steps", s.steps},
          {"skipped_steps", s.skipped_steps},
          {"epochs_completed", s.epochs_completed},
          {"final_loss_scale", number_or_null(s.final_loss_scale)},
          {"warmup_steps", s.warmup_steps},
          {"median_step_ms", number_or_null(s.median_step_ms)},
          {"p5_step_ms", number_or_null(s.p5_step_ms)},
          {"p95_step_ms", number_or_null(s.p95_step_ms)},
          {"samples_per_s", number_or_null(s.samples_per_s)},
          {"final_loss", number_or_null(s.final_loss)},
          {"final_accuracy", number_or_null(s.final_accuracy)},
          {"test_loss", number_or_null(s.test_loss)},
          {"test_accuracy", number_or_null(s.test_accuracy)},
          {"peak_memory_bytes", s.peak_memory_bytes},
          {"diverged_at_step", s.diverged_at_step >= 0 ? Json(s.diverged_at_step) : Json()},
          {"failed_allocation_bytes", s.failed_allocation_bytes},
          {"wall_s", number_or_null(s.wall_s)}};
}

Json epochs_json(const std::vector<EpochMetrics>& epochs) {
  Json out = Json::array();
  for (const EpochMetrics& e : epochs) {
    out.push_back({{"epoch", e.epoch},
                   {"steps", e.steps},
                   {"train_loss", number_or_null(e.train_loss)},
                   {"train_accuracy", number_or_null(e.train_accuracy)},
                   {"test_loss", number_or_null(e.test_loss)},
                   {"test_accuracy", number_or_null(e.test_accuracy)},
                   {"time_s", number_or_null(e.time_s)},
                   {"samples_per_s", number_or_null(e.samples_per_s)}});
  }
  return out;
}

Json run_json(const RunRecord& r, const std::vector<EpochMetrics>& epochs) {
  // The model as JSON when it parses (it always should), else as the stored text.
  Json model = Json::parse(r.model_json, nullptr, false);
  if (model.is_discarded()) model = r.model_json;
  return {{"id", r.id},
          {"name", r.name},
          {"status", std::string(store::to_string(r.status))},
          {"message", r.message},
          {"created_at", time_or_null(r.created_at_ms)},
          {"started_at", time_or_null(r.started_at_ms)},
          {"finished_at", time_or_null(r.finished_at_ms)},
          {"model", r.model_name},
          {"model_spec", model},
          {"device", r.device},
          {"total_steps", r.total_steps},
          {"config", run_config_json(r.config)},
          {"environment", environment_json(r.environment)},
          {"summary", summary_json(r.summary)},
          {"epochs", epochs_json(epochs)},
          {"tags", r.tags},
          {"note", r.note}};
}

// "label:        text", later lines of a multi-line text indented under the first.
void print_field(const char* label, const std::string& text) {
  if (text.empty()) return;
  std::string indented;
  for (const char c : text) {
    if (c == '\r') continue;
    indented += c;
    if (c == '\n') indented += std::string(14, ' ');
  }
  std::cout << label << std::string(14 - std::strlen(label), ' ') << indented << '\n';
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : separator) + item;
  return out;
}

void print_run(const RunRecord& r, const std::vector<EpochMetrics>& epochs) {
  const RunConfig& c = r.config;
  const store::Environment& env = r.environment;
  const RunSummary& s = r.summary;
  std::cout << "run " << r.id << ": " << one_line(r.name, 200) << '\n';
  print_field("status:", std::string(store::to_string(r.status)));
  print_field("message:", r.message);
  print_field("created:", store::format_utc(r.created_at_ms));
  print_field("started:", store::format_utc(r.started_at_ms));
  print_field("finished:", store::format_utc(r.finished_at_ms));
  print_field("model:", r.model_name);
  print_field("dataset:", c.dataset.to_string());
  print_field("precision:", precision_of(r) + ", loss scaling " + c.loss_scale.to_string());
  print_field("training:", "batch " + std::to_string(c.batch_size) + ", " +
                               count_of(c.epochs, "epoch") + ", " + group_digits(r.total_steps) +
                               " steps planned, seed " + std::to_string(c.seed));
  print_field("optimizer:", std::string(to_string(c.optimizer.kind)) + ", learning rate " +
                                store::csv_number(c.optimizer.learning_rate));
  std::string device = r.device.empty() ? env.device_kind : r.device;
  if (!env.device_name.empty()) device += ": " + env.device_name;
  if (!env.compute_capability.empty()) device += ", compute capability " + env.compute_capability;
  if (env.threads > 0) device += ", " + count_of(env.threads, "thread");
  print_field("device:", device);
  std::vector<std::string> gpu_options;
  if (c.tf32) gpu_options.push_back("TF32 matmuls");
  if (c.cuda_graphs) gpu_options.push_back("CUDA graphs");
  if (c.data_on_device) gpu_options.push_back("dataset on the GPU");
  if (c.layer_timing) gpu_options.push_back("per-layer timing");
  if (!gpu_options.empty()) print_field("GPU options:", join(gpu_options, ", "));
  std::vector<std::string> libraries;
  const std::pair<const char*, const std::string*> versions[] = {{"driver", &env.driver_version},
                                                                 {"CUDA", &env.cuda_version},
                                                                 {"cuDNN", &env.cudnn_version},
                                                                 {"cuBLAS", &env.cublas_version},
                                                                 {"oneDNN", &env.onednn_version}};
  for (const auto& [name, version] : versions) {
    if (!version->empty()) libraries.push_back(std::string(name) + " " + *version);
  }
  print_field("libraries:", join(libraries, ", "));
  print_field("cpu:", env.cpu_model);
  print_field("mixlab:", env.mixlab_version + (env.hostname.empty() ? "" : " on " + env.hostname));
  print_field("steps:", group_digits(s.steps) + " (" + group_digits(s.skipped_steps) +
                            " skipped), final loss scale " + store::csv_number(s.final_loss_scale));
  print_field("step time:", "median " + format_fixed(s.median_step_ms, 3) + " ms, p5 " +
                                format_fixed(s.p5_step_ms, 3) + " ms, p95 " +
                                format_fixed(s.p95_step_ms, 3) + " ms (first " +
                                std::to_string(s.warmup_steps) + " steps left out as warm-up)");
  print_field("throughput:", format_rate(s.samples_per_s) + " samples/s");
  print_field("train:", "loss " + format_fixed(s.final_loss, 4) + ", accuracy " +
                            format_fixed(s.final_accuracy, 4));
  print_field("test:", "loss " + format_fixed(s.test_loss, 4) + ", accuracy " +
                           format_fixed(s.test_accuracy, 4));
  print_field("memory:", format_bytes(s.peak_memory_bytes) + ", wall time " +
                             format_fixed(s.wall_s, 1) + " s");
  print_field("tags:", join(r.tags, ", "));
  print_field("note:", r.note);
  if (epochs.empty()) return;
  std::cout << "epochs:\n";
  Table table({{"epoch", true},
               {"steps", true},
               {"train loss", true},
               {"train acc.", true},
               {"test loss", true},
               {"test acc.", true},
               {"time s", true},
               {"samples/s", true}});
  for (const EpochMetrics& e : epochs) {
    table.add({std::to_string(e.epoch + 1), group_digits(e.steps), format_fixed(e.train_loss, 4),
               format_fixed(e.train_accuracy, 4), format_fixed(e.test_loss, 4),
               format_fixed(e.test_accuracy, 4), format_fixed(e.time_s, 2),
               format_rate(e.samples_per_s)});
  }
  table.print(std::cout, "  ");
}

int show_run(const RunsArgs& args) {
  const auto& p = positionals(args, 1, 1);
  const std::int64_t id = parse_run_id(p[0]);
  OpenRuns open = open_runs(store_path(args), {&id, 1});
  const std::vector<EpochMetrics> epochs = open.store.epochs(id);
  if (args.json) {
    print_json(run_json(open.records[0], epochs));
  } else {
    print_run(open.records[0], epochs);
  }
  return kExitOk;
}

// --- export ---------------------------------------------------------------------------------

int export_runs(const RunsArgs& args) {
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 1, SIZE_MAX));
  if (args.steps == args.summary) {
    throw UsageError("give --steps or --summary\nusage: " + args.usage);
  }
  OpenRuns open = open_runs(store_path(args), ids);
  const auto write = [&](std::ostream& out) {
    if (args.summary) {
      store::write_summary_csv(out, open.store, ids);
    } else if (ids.size() == 1) {
      store::write_steps_csv(out, open.store, ids[0]);
    } else {
      store::write_long_steps_csv(out, open.store, ids);
    }
  };
  if (!args.output.empty()) {
    store::write_file_atomically(args.output, write);
  } else {
    write(std::cout);
    std::cout.flush();
    if (!std::cout) throw Error("cannot write the export to stdout");
  }
  return kExitOk;
}

// --- compare --------------------------------------------------------------------------------

int compare_runs(const RunsArgs& args) {
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 2, SIZE_MAX));
  const OpenRuns open = open_runs(store_path(args), ids);
  const RunRecord& first = open.records.front();
  // Above 1: faster than the first run (its median step time over this one's).
  const auto ratio = [&](const RunRecord& r) {
    return first.summary.median_step_ms / r.summary.median_step_ms;
  };
  if (args.json) {
    Json out = Json::array();
    for (const RunRecord& r : open.records) {
      out.push_back({{"id", r.id},
                     {"name", r.name},
                     {"precision", precision_of(r)},
                     {"loss_scaling", r.config.loss_scale.to_string()},
                     {"batch_size", r.config.batch_size},
                     {"median_step_ms", number_or_null(r.summary.median_step_ms)},
                     {"p95_step_ms", number_or_null(r.summary.p95_step_ms)},
                     {"samples_per_s", number_or_null(r.summary.samples_per_s)},
                     {"speed_ratio", number_or_null(ratio(r))}});
    }
    print_json(out);
    return kExitOk;
  }
  Table table({{"id", true},
               {"name"},
               {"precision"},
               {"batch", true},
               {"median step ms", true},
               {"p95 step ms", true},
               {"samples/s", true},
               {"speed", true}});
  for (const RunRecord& r : open.records) {
    table.add({std::to_string(r.id), one_line(r.name, 40), precision_of(r),
               std::to_string(r.config.batch_size), format_fixed(r.summary.median_step_ms, 3),
               format_fixed(r.summary.p95_step_ms, 3), format_rate(r.summary.samples_per_s),
               format_ratio(ratio(r))});
  }
  table.print(std::cout);
  std::cout << "speed: run " << first.id
            << "'s median step time / each run's; above 1.00x is faster than run " << first.id
            << "\n";
  return kExitOk;
}

// --- editing --------------------------------------------------------------------------------

int rename_run(const RunsArgs& args) {
  const auto& p = positionals(args, 2, 2);
  const std::int64_t id = parse_run_id(p[0]);
  if (p[1].empty()) throw UsageError("a run's name cannot be empty");
  OpenRuns open = open_runs(store_path(args), {&id, 1});
  open.store.rename(id, p[1]);
  std::cout << "run " << id << " renamed to " << one_line(p[1], 200) << "\n";
  return kExitOk;
}

int tag_run(const RunsArgs& args) {
  const auto& p = positionals(args, 2, SIZE_MAX);
  const std::int64_t id = parse_run_id(p[0]);
  const std::vector<std::string> tags(p.begin() + 1, p.end());
  for (const std::string& tag : tags) {
    if (tag.empty()) throw UsageError("a tag cannot be empty");
  }
  OpenRuns open = open_runs(store_path(args), {&id, 1});
  if (args.remove) {
    open.store.remove_tags(id, tags);
  } else {
    open.store.add_tags(id, tags);
  }
  const std::vector<std::string> now = open.store.run(id).tags;
  std::cout << "run " << id << (now.empty() ? " has no tags" : " tags: " + join(now, ", ")) << "\n";
  return kExitOk;
}

int note_run(const RunsArgs& args) {
  const auto& p = positionals(args, 2, 2);
  const std::int64_t id = parse_run_id(p[0]);
  OpenRuns open = open_runs(store_path(args), {&id, 1});
  open.store.set_note(id, p[1]);
  std::cout << "run " << id << (p[1].empty() ? ": note cleared" : ": note set") << "\n";
  return kExitOk;
}

int delete_runs(const RunsArgs& args) {
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 1, SIZE_MAX));
  // Every id is checked before the first deletion: a mistyped id deletes nothing.
  OpenRuns open = open_runs(store_path(args), ids);
  for (const RunRecord& r : open.records) {
    open.store.delete_run(r.id);
    std::cout << "deleted run " << r.id << " (" << one_line(r.name, 200) << ")\n";
  }
  return kExitOk;
}

// --- dispatch -------------------------------------------------------------------------------

struct Subcommand {
  const char* name;
  const char* usage;  // its arguments and options, for --help and for a usage error
  const char* description;
  int (*run)(const RunsArgs&);
};

const Subcommand kSubcommands[] = {
    {"list", "[--json]", "the recorded runs, newest first", list_runs},
    {"show", "ID [--json]", "one run: configuration, environment, figures, epochs", show_run},
    {"export", "ID... --steps|--summary [-o FILE]",
     "CSV: one run's steps, several runs' steps (one row per run and step) or one summary row "
     "per run; stdout without -o",
     export_runs},
    {"compare", "ID ID... [--json]", "step times and speed against the first run", compare_runs},
    {"rename", "ID NAME", "rename a run", rename_run},
    {"tag", "ID TAG... [--remove]", "add tags (or remove them)", tag_run},
    {"note", "ID TEXT", "set the note; an empty TEXT clears it", note_run},
    {"delete", "ID...", "delete runs with their steps and epochs", delete_runs},
};

}  // namespace

int run_runs(const std::vector<std::string>& argv) {
  const auto known = [](const std::string& name) {
    return std::any_of(std::begin(kSubcommands), std::end(kSubcommands),
                       [&](const Subcommand& sub) { return name == sub.name; });
  };
  if (!argv.empty() && !argv[0].starts_with("-") && !known(argv[0])) {
    throw UsageError("unknown runs subcommand '" + argv[0] +
                     "' (list, show, export, compare, rename, tag, note, delete)");
  }
  CommandLine command("mixlab-cli runs", "The recorded runs.");
  command.app().footer(kDatabaseNote);
  RunsArgs args;
  std::vector<std::pair<CLI::App*, const Subcommand*>> subcommands;
  for (const Subcommand& sub : kSubcommands) {
    CLI::App* app = command.app().add_subcommand(sub.name, sub.description);
    app->add_option("arguments", args.positionals, sub.usage);
    command.add_option(*app, "--db", args.db, "the run database")->type_name("PATH");
    const std::string_view name = sub.name;
    if (name == "list" || name == "show" || name == "compare")
      app->add_flag("--json", args.json, "JSON instead of a table");
    if (name == "export") {
      app->add_flag("--steps", args.steps, "every step of the runs");
      app->add_flag("--summary", args.summary, "one row per run");
      command.add_option(*app, "-o,--output", args.output, "the CSV file")->type_name("FILE");
    }
    if (name == "tag") app->add_flag("--remove", args.remove, "remove the tags instead");
    subcommands.emplace_back(app, &sub);
  }
  if (!command.parse(argv)) return kExitOk;
  for (const auto& [app, sub] : subcommands) {
    if (!app->parsed()) continue;
    args.usage = "mixlab-cli runs " + std::string(sub->name) + " " + sub->usage;
    return sub->run(args);
  }
  throw UsageError(
      "give a subcommand: list, show, export, compare, rename, tag, note or "
      "delete (mixlab-cli runs --help says more)");
}

}  // namespace mixlab::cli
