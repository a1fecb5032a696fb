#include "app/store/sweep_plan.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/core/text_file.h"
#include "engine/train/run_fields.h"

namespace mixlab::store {

namespace {

constexpr int kMaxMembers = 10000;
constexpr int kMaxRepeats = 1000;
// A sweep file lists models and settings: a few KiB.
constexpr TextFileKind kSweepFileKind{"sweep file", std::uintmax_t{1} << 20, ""};

// Flags the sweep sets itself or that are not run settings.
bool reserved(std::string_view flag) {
  return flag == "model" || flag == "device" || flag == "repeats" || flag == "db";
}

// The run field a flag or a field name stands for ("batch-size" or "batch_size"); nullptr if
// none.
const RunField* field_of(std::string_view flag) {
  for (const RunField& f : run_fields()) {
    if (f.cli_flag == flag || f.name == flag) return &f;
  }
  return nullptr;
}

// A boolean's value as the field reads it: also on/off and yes/no.
std::string normalised(const RunField& field, std::string value) {
  if (field.type != FieldType::boolean) return value;
  if (value == "on" || value == "yes") return "true";
  if (value == "off" || value == "no") return "false";
  return value;
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  const auto e = s.find_last_not_of(" \t");
  return std::string(s.substr(b, e - b + 1));
}

std::string json_value_text(const nlohmann::ordered_json& v, const std::string& where) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<std::int64_t>());
  if (v.is_number()) return field_value_text(v.get<double>());
  throw ConfigError(where + " must be a string, a number, a boolean or a list of them");
}

}  // namespace

std::vector<std::string> split_list(std::string_view text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto end = comma == std::string_view::npos ? text.size() : comma;
    std::string part = trim(text.substr(start, end - start));
    if (!part.empty()) out.push_back(std::move(part));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

void SweepSpec::check() const {
  if (models.empty()) throw ConfigError("a sweep needs at least one model");
  if (repeats < 1 || repeats > kMaxRepeats) {
    throw ConfigError("repeats must be between 1 and " + std::to_string(kMaxRepeats) + ", got " +
                      std::to_string(repeats));
  }
  std::int64_t members = static_cast<std::int64_t>(models.size()) * repeats;
  for (std::size_t i = 0; i < settings.size(); ++i) {
    const SweepSetting& s = settings[i];
    if (reserved(s.flag)) throw ConfigError(quote(s.flag) + " is not a run setting of a sweep");
    const RunField* field = field_of(s.flag);
    if (field == nullptr) {
      throw ConfigError(quote(s.flag) +
                        " is not a run setting (train's options: batch-size, precision, "
                        "loss-scale, optimizer, lr, steps, epochs, seed, tf32, ...)");
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (field_of(settings[j].flag) == field)
        throw ConfigError("the setting " + quote(s.flag) + " is given twice");
    }
    if (s.values.empty()) throw ConfigError("the setting " + quote(s.flag) + " has no value");
    for (const std::string& v : s.values) {
      try {
        RunConfig config;
        set_field(*field, config, parse_field_text(*field, normalised(*field, v)));
      } catch (const ConfigError& e) {
        throw ConfigError("sweep setting --" + std::string(field->cli_flag) + " " + quote(v) +
                          ": " + e.what());
      }
    }
    members *= static_cast<std::int64_t>(s.values.size());
    if (members > kMaxMembers) {
      throw ConfigError("the grid has over " + std::to_string(kMaxMembers) +
                        " runs; split it into several sweeps");
    }
  }
}

std::vector<std::string> SweepSpec::axes() const {
  std::vector<std::string> out;
  if (models.size() > 1) out.emplace_back("model");
  for (const SweepSetting& s : settings) {
    if (s.values.size() > 1) out.push_back(s.flag);
  }
  return out;
}

std::string SweepSpec::display_name() const {
  if (!name.empty()) return name;
  std::string out;
  for (const std::string& axis : axes()) out += (out.empty() ? "" : " x ") + axis;
  if (repeats > 1) out += (out.empty() ? "" : " x ") + std::to_string(repeats);
  if (out.empty()) out = "single point";
  return (models.size() == 1 ? models.front() + ": " : std::string()) + out;
}

std::vector<std::string> SweepMember::train_args() const {
  std::vector<std::string> args = {"--model", model};
  for (const auto& [flag, value] : settings) {
    const RunField* field = field_of(flag);
    if (field != nullptr && field->type == FieldType::boolean) {
      // A boolean's flag turns it from its default.
      const std::string v = normalised(*field, value);
      const std::string wanted = field_value_text(parse_field_text(*field, v));
      if (wanted != field_default_text(*field)) args.push_back("--" + std::string(field->cli_flag));
      continue;
    }
    args.push_back("--" + (field != nullptr ? std::string(field->cli_flag) : flag));
    args.push_back(value);
  }
  return args;
}

std::string SweepMember::value(std::string_view flag) const {
  if (flag == "model") return model;
  for (const auto& [f, v] : settings) {
    if (f == flag) return v;
  }
  return {};
}

std::string SweepMember::label(const std::vector<std::string>& axes) const {
  std::string out;
  for (const std::string& axis : axes) {
    const std::string v = value(axis);
    std::string part = axis == "model" || axis == "precision" ? v : axis + " " + v;
    out += (out.empty() ? "" : ", ") + part;
  }
  if (out.empty()) out = model;
  return out + ", repeat " + std::to_string(repeat + 1);
}

std::vector<SweepMember> plan_sweep(const SweepSpec& spec) {
  spec.check();
  // The seed of repeat 0: the sweep's --seed when it has one value, else the run default.
  std::int64_t base_seed = 0;
  bool seed_is_axis = false;
  {
    const RunField& seed = run_field("seed");
    base_seed = std::get<std::int64_t>(parse_field_text(seed, field_default_text(seed)));
    for (const SweepSetting& s : spec.settings) {
      if (field_of(s.flag) != &seed) continue;
      seed_is_axis = s.values.size() > 1;
      if (!seed_is_axis) base_seed = std::get<std::int64_t>(parse_field_text(seed, s.values[0]));
    }
  }
  std::vector<SweepMember> members;
  // The grid's points: an odometer over the models and the settings' values.
  std::vector<std::size_t> sizes = {spec.models.size()};
  for (const SweepSetting& s : spec.settings) sizes.push_back(s.values.size());
  for (int repeat = 0; repeat < spec.repeats; ++repeat) {
    std::vector<std::size_t> at(sizes.size(), 0);
    for (;;) {
      SweepMember m;
      m.index = static_cast<int>(members.size());
      m.repeat = repeat;
      m.model = spec.models[at[0]];
      bool seed_set = false;
      for (std::size_t i = 0; i < spec.settings.size(); ++i) {
        const SweepSetting& s = spec.settings[i];
        const RunField& field = *field_of(s.flag);
        std::string value = normalised(field, s.values[at[i + 1]]);
        if (field.name == "seed") {
          seed_set = true;
          if (!seed_is_axis) value = std::to_string(base_seed + repeat);
          else value = std::to_string(std::stoll(value) + repeat);
        }
        m.settings.emplace_back(std::string(field.cli_flag), std::move(value));
      }
      if (!seed_set) m.settings.emplace_back("seed", std::to_string(base_seed + repeat));
      members.push_back(std::move(m));
      // Advance: the last setting turns fastest.
      std::size_t k = sizes.size();
      while (k > 0) {
        --k;
        if (++at[k] < sizes[k]) break;
        at[k] = 0;
        if (k == 0) {
          k = sizes.size() + 1;  // wrapped around: every point done
          break;
        }
      }
      if (k == sizes.size() + 1) break;
    }
  }
  return members;
}

nlohmann::ordered_json to_json(const SweepSpec& spec) {
  nlohmann::ordered_json out;
  if (!spec.name.empty()) out["name"] = spec.name;
  out["models"] = spec.models;
  out["repeats"] = spec.repeats;
  out["device"] = spec.device;
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  for (const SweepSetting& s : spec.settings) {
    if (s.values.size() == 1) settings[s.flag] = s.values[0];
    else settings[s.flag] = s.values;
  }
  out["settings"] = settings;
  return out;
}

SweepSpec parse_sweep_json(std::string_view text, const std::string& source) {
  nlohmann::ordered_json j;  // the settings in the order written: the axes' order
  try {
    j = nlohmann::ordered_json::parse(text, nullptr, true, false);
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(source + ": not a sweep file (JSON): " + e.what());
  }
  if (!j.is_object()) throw ConfigError(source + ": a sweep file holds one JSON object");
  SweepSpec spec;
  try {
    for (const auto& [key, value] : j.items()) {
      if (key == "name") {
        if (!value.is_string()) throw ConfigError("\"name\" must be a string");
        spec.name = value.get<std::string>();
      } else if (key == "models" || key == "model") {
        if (value.is_array()) {
          for (const auto& m : value) spec.models.push_back(json_value_text(m, "\"models\""));
        } else {
          for (std::string& m : split_list(json_value_text(value, "\"models\"")))
            spec.models.push_back(std::move(m));
        }
      } else if (key == "repeats") {
        if (!value.is_number_integer()) throw ConfigError("\"repeats\" must be a whole number");
        const auto r = value.get<std::int64_t>();
        spec.repeats = r < 0 || r > 1000000 ? -1 : static_cast<int>(r);
      } else if (key == "device") {
        spec.device = json_value_text(value, "\"device\"");
      } else if (key == "settings") {
        if (!value.is_object()) throw ConfigError("\"settings\" must be an object");
        for (const auto& [flag, v] : value.items()) {
          SweepSetting s;
          s.flag = flag;
          const std::string where = "\"settings\": " + quote(flag);
          if (v.is_array()) {
            for (const auto& one : v) s.values.push_back(json_value_text(one, where));
          } else {
            s.values.push_back(json_value_text(v, where));
          }
          spec.settings.push_back(std::move(s));
        }
      } else if (key == "executor" || key == "slurm") {
        // Read by the CLI from the same file; not part of the grid.
      } else {
        throw ConfigError("unknown field " + quote(key) +
                          " (a sweep file has name, models, repeats, device, settings, "
                          "executor and slurm)");
      }
    }
    spec.check();
  } catch (const ConfigError& e) {
    throw ConfigError(source + ": " + e.what());
  }
  return spec;
}

std::string read_sweep_text(const std::filesystem::path& file) {
  return read_text_file<ConfigError>(file, kSweepFileKind);
}

SweepSpec read_sweep_file(const std::filesystem::path& file) {
  return parse_sweep_json(read_sweep_text(file), file.string());
}

nlohmann::ordered_json to_json(const SweepMember& member) {
  nlohmann::ordered_json out;
  out["index"] = member.index;
  out["repeat"] = member.repeat;
  out["model"] = member.model;
  nlohmann::ordered_json settings = nlohmann::ordered_json::object();
  for (const auto& [flag, value] : member.settings) settings[flag] = value;
  out["settings"] = settings;
  return out;
}

SweepMember parse_sweep_member(std::string_view json_text) {
  const auto j = nlohmann::ordered_json::parse(json_text);
  SweepMember m;
  m.index = j.at("index").get<int>();
  m.repeat = j.at("repeat").get<int>();
  m.model = j.at("model").get<std::string>();
  for (const auto& [flag, value] : j.at("settings").items())
    m.settings.emplace_back(flag, value.get<std::string>());
  return m;
}

}  // namespace mixlab::store
