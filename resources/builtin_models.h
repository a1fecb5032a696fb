// The example models shipped inside the program (resources/models/*.json, embedded at build
// time), so the editor and mixlab-cli can offer them without files on disk.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace mixlab {

// The models' names (file stems such as "fashion-cnn"), sorted.
std::vector<std::string_view> builtin_model_names();

// A model's JSON text (the file's bytes), or nullopt when there is no model of that name.
std::optional<std::string_view> builtin_model_json(std::string_view name);

}  // namespace mixlab
