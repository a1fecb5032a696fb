// JSON text as model files are read: duplicate keys and nesting deeper than kMaxJsonDepth are
// errors (nlohmann would keep the last duplicate silently, and deep nesting once crashed the
// printing of the error message). Errors are SpecErrors prefixed with `origin_prefix`
// ("model.json: ").
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mixlab {

nlohmann::json parse_json_text(std::string_view text, const std::string& origin_prefix);

}  // namespace mixlab
