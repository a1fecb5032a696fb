// JSON text as model files are read: duplicate keys and nesting deeper than kMaxJsonDepth are
// errors (nlohmann would keep the last duplicate silently, and deep nesting once crashed the
// printing of the error message). Errors are SpecErrors prefixed with `origin_prefix`
// ("model.json: ").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace mixlab {

nlohmann::json parse_json_text(std::string_view text, const std::string& origin_prefix);

// Dropout's noise_shape as MixLab's and Keras's files write it: [null, 1, 1, 1] (-1 is null).
inline nlohmann::ordered_json noise_shape_json(const std::vector<std::int64_t>& noise_shape) {
  nlohmann::ordered_json noise = nlohmann::ordered_json::array();
  for (const std::int64_t d : noise_shape)
    noise.push_back(d < 0 ? nlohmann::ordered_json() : nlohmann::ordered_json(d));
  return noise;
}

}  // namespace mixlab
