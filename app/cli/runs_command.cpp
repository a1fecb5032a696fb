// mixlab-cli runs: the run history in the run store: list, show, export (CSV), compare, and
// rename, tag, note or delete runs.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <set>
#include <span>
#include <utility>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/cli/runs_support.h"
#include "app/store/csv_export.h"
#include "app/store/run_import.h"
#include "app/store/run_store.h"
#include "app/store/sweeps.h"
#include "app/store/safe_file.h"
#include "engine/core/error.h"

namespace mixlab::cli {

namespace {

namespace fs = std::filesystem;
using namespace runs;

constexpr const char* kDatabaseNote =
    "The database is --db PATH, else $MIXLAB_DB, else $XDG_DATA_HOME/mixlab/runs.sqlite\n"
    "(~/.local/share/mixlab/runs.sqlite without XDG_DATA_HOME).";

// --- list -----------------------------------------------------------------------------------

int list_runs(const RunsArgs& args) {
  const fs::path path = store_path(args);
  std::vector<RunRecord> runs;
  if (fs::exists(path)) runs = open_for_reading(path).list_runs();
  if (args.json) {
    Json out = Json::array();
    for (const RunRecord& r : runs) {
      out.push_back({{"id", r.id},
                     {"uid", r.uid},
                     {"name", r.name},
                     {"status", std::string(store::to_string(r.status))},
                     {"damaged", damage_or_null(r)},
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
    table.add({std::to_string(r.id), one_line(r.name, 40), status_of(r),
               short_time(r.created_at_ms), one_line(r.model_name, 24), precision_of(r),
               std::to_string(r.config.batch_size), format_fixed(r.summary.median_step_ms, 3),
               format_rate(r.summary.samples_per_s), format_fixed(r.summary.test_accuracy, 4)});
  }
  table.print(std::cout);
  // A row that could not be read whole is listed, and says why, instead of hiding the others.
  for (const RunRecord& r : runs) {
    if (r.damage.empty()) continue;
    std::cout << "run " << r.id << " is damaged: " << one_line(store::describe_damage(r), 400)
              << " (runs show " << r.id << ", runs delete " << r.id << ")\n";
  }
  return kExitOk;
}

// --- export ---------------------------------------------------------------------------------

// To -o FILE (whole or not at all) or to stdout (checked by run_cli, as every command's).
int write_export(const RunsArgs& args, const std::function<void(std::ostream&)>& write) {
  if (!args.output.empty()) {
    store::write_file_atomically(args.output, write);
  } else {
    write(std::cout);
  }
  return kExitOk;
}

int export_runs(const RunsArgs& args) {
  if (!args.sweep.empty()) {
    // A sweep in long form: one row per member, with every setting and figure of its run.
    if (!args.positionals.empty() || args.steps || args.layers || args.fp8) {
      throw UsageError(
          "--sweep ID exports the sweep's members; give no run ids, --steps, "
          "--layers or --fp8 with it\nusage: " +
          args.usage);
    }
    RunStore store = open_for_reading(store_path(args));
    store::SweepRecord sweep;
    try {
      sweep = store::sweep(store, args.sweep);
    } catch (const store::StoreError& e) {
      throw RunNotFoundError(e.what());
    }
    for (const store::SweepMemberRecord& m : sweep.members) {
      const auto run = m.run_id ? store.find_run(*m.run_id) : std::nullopt;
      if (run && !run->damage.empty()) {
        std::fprintf(stderr,
                     "mixlab-cli: warning: run %lld (member %d) is damaged (%s); its columns are "
                     "left empty\n",
                     static_cast<long long>(run->id), m.member,
                     store::describe_damage(*run).c_str());
      }
    }
    return write_export(args, [&](std::ostream& out) { store::write_sweep_csv(out, store, sweep); });
  }
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 1, SIZE_MAX));
  if (int(args.steps) + int(args.summary) + int(args.layers) + int(args.fp8) != 1) {
    throw UsageError("give one of --steps, --summary, --layers, --fp8 or --sweep ID\nusage: " +
                     args.usage);
  }
  OpenRuns open = open_runs(store_path(args), ids, Access::read);
  // A damaged run is left out, with a warning: the settings it could not read would stand in
  // the CSV as their defaults, wrong numbers that look right.
  std::vector<std::int64_t> sound;
  for (const RunRecord& r : open.records) {
    if (r.damage.empty()) {
      sound.push_back(r.id);
      continue;
    }
    std::fprintf(stderr, "mixlab-cli: warning: run %lld is damaged (%s); left out of the export\n",
                 static_cast<long long>(r.id), store::describe_damage(r).c_str());
  }
  if (sound.empty()) {
    throw store::StoreError("nothing to export: every run named is damaged (runs show ID says "
                            "what is left)");
  }
  const auto write = [&](std::ostream& out) {
    if (args.summary) {
      store::write_summary_csv(out, open.store, sound);
    } else if (args.layers) {
      store::write_layers_csv(out, open.store, sound);
    } else if (args.fp8) {
      store::write_fp8_csv(out, open.store, sound);
    } else if (ids.size() == 1) {
      store::write_steps_csv(out, open.store, sound[0]);
    } else {
      store::write_long_steps_csv(out, open.store, sound);
    }
  };
  return write_export(args, write);
}

// --- compare --------------------------------------------------------------------------------

int compare_runs(const RunsArgs& args) {
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 2, SIZE_MAX));
  const OpenRuns open = open_runs(store_path(args), ids, Access::read);
  for (const RunRecord& r : open.records) require_sound(r, store_path(args));
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
  OpenRuns open = open_runs(store_path(args), {&id, 1}, Access::write);
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
  OpenRuns open = open_runs(store_path(args), {&id, 1}, Access::write);
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
  OpenRuns open = open_runs(store_path(args), {&id, 1}, Access::write);
  open.store.set_note(id, p[1]);
  std::cout << "run " << id << (p[1].empty() ? ": note cleared" : ": note set") << "\n";
  return kExitOk;
}

int delete_runs(const RunsArgs& args) {
  const std::vector<std::int64_t> ids = parse_run_ids(positionals(args, 1, SIZE_MAX));
  // Every id is checked before the first deletion: a mistyped id deletes nothing.
  OpenRuns open = open_runs(store_path(args), ids, Access::write);
  for (const RunRecord& r : open.records) {
    open.store.delete_run(r.id);
    std::cout << "deleted run " << r.id << " (" << one_line(r.name, 200) << ")\n";
  }
  return kExitOk;
}

// --- import ---------------------------------------------------------------------------------

int import_runs(const RunsArgs& args) {
  const std::vector<std::string>& files = positionals(args, 1, SIZE_MAX);
  RunStore store = RunStore::open(store_path(args));
  Json out = Json::array();
  int added = 0, present = 0;
  for (const std::string& file : files) {
    // Each file whole or not at all; a bad one stops here, the ones before it stay imported.
    const store::ImportResult r = store::import_runs(store, file);
    added += static_cast<int>(r.added.size());
    present += static_cast<int>(r.already_here.size());
    if (args.json) {
      Json f;
      f["file"] = file;
      const auto ids = [](const std::vector<store::ImportedRun>& runs) {
        Json a = Json::array();
        for (const auto& run : runs) a.push_back({{"uid", run.uid}, {"id", run.id}, {"source_id", run.source_id}});
        return a;
      };
      f["added"] = ids(r.added);
      f["already_here"] = ids(r.already_here);
      f["still_running"] = ids(r.still_running);
      out.push_back(f);
      continue;
    }
    std::cout << file << ": " << count_of(static_cast<std::int64_t>(r.added.size()), "run")
              << " added";
    if (!r.added.empty()) {
      std::cout << " (";
      for (std::size_t i = 0; i < r.added.size(); ++i)
        std::cout << (i == 0 ? "" : ", ") << r.added[i].id;
      std::cout << ")";
    }
    if (!r.already_here.empty())
      std::cout << ", " << r.already_here.size() << " already here";
    if (!r.still_running.empty())
      std::cout << ", " << r.still_running.size()
                << " left out: still running (import the file again once they end)";
    std::cout << "\n";
  }
  if (args.json) print_json(out);
  else if (files.size() > 1)
    std::cout << "in all: " << count_of(added, "run") << " added, " << present
              << " already here\n";
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
    {"export", "ID... --steps|--summary|--layers [-o FILE] | --sweep ID [-o FILE]",
     "CSV: one run's steps, several runs' steps (one row per run and step), one summary row "
     "per run, or per-layer times (one row per run and layer); stdout without -o",
     export_runs},
    {"compare", "ID ID... [--json]", "step times and speed against the first run", compare_runs},
    {"rename", "ID NAME", "rename a run", rename_run},
    {"tag", "ID TAG... [--remove]", "add tags (or remove them)", tag_run},
    {"note", "ID TEXT", "set the note; an empty TEXT clears it", note_run},
    {"delete", "ID...", "delete runs with their steps and epochs", delete_runs},
    {"import", "FILE... [--json]",
     "add the runs of other run databases (from another machine, a Slurm task); a run already "
     "here (the same uid) is not added twice",
     import_runs},
};

}  // namespace

int run_runs(const std::vector<std::string>& argv) {
  const auto known = [](const std::string& name) {
    return std::any_of(std::begin(kSubcommands), std::end(kSubcommands),
                       [&](const Subcommand& sub) { return name == sub.name; });
  };
  if (!argv.empty() && !argv[0].starts_with("-") && !known(argv[0])) {
    throw UsageError("unknown runs subcommand " + quote(argv[0]) +
                     " (list, show, export, compare, rename, tag, note, delete, import)");
  }
  CommandLine command("mixlab-cli runs", "The recorded runs.");
  command.app().footer(kDatabaseNote);
  RunsArgs args;
  std::vector<std::pair<CLI::App*, const Subcommand*>> subcommands;
  for (const Subcommand& sub : kSubcommands) {
    CLI::App* app = command.app().add_subcommand(sub.name, sub.description);
    app->add_option("arguments", args.positionals, sub.usage);
    command.add_database_option(*app, args.db, "the run database")->type_name("PATH");
    const std::string_view name = sub.name;
    if (name == "list" || name == "show" || name == "compare" || name == "import")
      app->add_flag("--json", args.json, "JSON instead of a table");
    if (name == "export") {
      app->add_flag("--steps", args.steps, "every step of the runs");
      app->add_flag("--summary", args.summary, "one row per run");
      app->add_flag("--layers", args.layers, "per-layer times, one row per run and layer");
      app->add_flag("--fp8", args.fp8,
                    "mixed_float8: each FP8 tensor's amax, scales and rounding counts, one row per "
                    "run, step, layer, part and tensor");
      command.add_path_option(*app, "-o,--output", args.output, "the CSV file")->type_name("FILE");
      command.add_option(*app, "--sweep", args.sweep,
                         "a sweep's members, one row each with every setting and figure")
          ->type_name("ID");
    }
    if (name == "tag") app->add_flag("--remove", args.remove, "remove the tags instead");
    subcommands.emplace_back(app, &sub);
  }
  if (!command.parse(argv, &args.positionals)) return kExitOk;
  for (const auto& [app, sub] : subcommands) {
    if (!app->parsed()) continue;
    args.usage = "mixlab-cli runs " + std::string(sub->name) + " " + sub->usage;
    return sub->run(args);
  }
  throw UsageError(
      "give a subcommand: list, show, export, compare, rename, tag, note, delete or "
      "import (mixlab-cli runs --help says more)");
}

}  // namespace mixlab::cli