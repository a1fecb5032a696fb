// A sweep's grid: the models and run settings to try, each with one or several values, and how
// many times to repeat each point (with seeds seed, seed+1, ...). Planning expands it into its
// members, each a set of `mixlab-cli train` options; the local and Slurm executors, the CLI and
// the GUI all run members from here. Qt-free.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixlab::store {

// One setting of the grid: a run field's command-line flag without "--" ("batch-size",
// "precision", "tf32") with its values as text. One value applies to every member; several
// make an axis of the grid.
struct SweepSetting {
  std::string flag;
  std::vector<std::string> values;
};

struct SweepSpec {
  std::string name;                   // empty: made from the axes
  std::vector<std::string> models;    // built-in names or model files; at least one
  std::vector<SweepSetting> settings;  // in the order given; each flag once
  int repeats = 1;                    // 1 to 1000
  std::string device = "auto";        // as `train --device` takes it

  // Every member's settings; throws ConfigError naming the flag and the value that a run
  // setting does not accept, an unknown flag, a flag given twice, or a grid of over 10000
  // members.
  void check() const;
  // The settings with several values, and the model when there are several: the axes.
  std::vector<std::string> axes() const;
  std::string display_name() const;  // `name`, or "precision x batch-size x 3"
};

// One run of the sweep: the model and every setting given, the seed of its repeat.
struct SweepMember {
  int index = 0;   // 0-based, in plan order; a Slurm array task's id
  int repeat = 0;  // 0-based
  std::string model;
  std::vector<std::pair<std::string, std::string>> settings;  // flag, value; "seed" included

  // The options of `mixlab-cli train` that run it: "--model M --precision P --batch-size 64
  // --seed 2" (booleans as their flag when they differ from the default).
  std::vector<std::string> train_args() const;
  // For people: "cifar10-mlp, mixed_float16, batch-size 64, repeat 2".
  std::string label(const std::vector<std::string>& axes) const;
  // The value of a flag ("" when not set).
  std::string value(std::string_view flag) const;
};

// The members in plan order: repeat by repeat (so that a stopped sweep has every grid point
// once before any twice), then models, then the settings' values in the order given. The seed
// of repeat r is the sweep's seed (its --seed, else the run default) plus r. Calls check().
std::vector<SweepMember> plan_sweep(const SweepSpec& spec);

// The JSON form (a sweep file, and the `spec_json` the store keeps):
//   {"name": "...", "models": ["cifar10-mlp"], "repeats": 3, "device": "auto",
//    "settings": {"precision": ["float32", "mixed_float16"], "batch-size": [32, 64], "steps": 200}}
// Values may be strings, numbers or booleans, alone or in a list. Keys of "settings" are the
// train flags without "--" ("batch-size"), or the run field names ("batch_size").
nlohmann::ordered_json to_json(const SweepSpec& spec);
// Throws ConfigError naming `source` and the field that is wrong.
SweepSpec parse_sweep_json(std::string_view text, const std::string& source);
// A sweep file's text: a regular file of at most 1 MiB (engine/core/text_file.h), else a
// ConfigError naming the file.
std::string read_sweep_text(const std::filesystem::path& file);
SweepSpec read_sweep_file(const std::filesystem::path& file);

nlohmann::ordered_json to_json(const SweepMember& member);
SweepMember parse_sweep_member(std::string_view json_text);

// "32,64,128" -> {"32", "64", "128"}; empty parts are dropped and spaces trimmed.
std::vector<std::string> split_list(std::string_view text);

}  // namespace mixlab::store
