#include "resources/builtin_models.h"

#include <algorithm>

#include "resources/embedded_models.h"

namespace mixlab {

std::vector<std::string_view> builtin_model_names() {
  std::vector<std::string_view> names;
  for (const auto& model : resources_detail::embedded_models()) names.push_back(model.name);
  return names;
}

std::optional<std::string_view> builtin_model_json(std::string_view name) {
  const auto models = resources_detail::embedded_models();
  const auto it = std::lower_bound(
      models.begin(), models.end(), name,
      [](const resources_detail::EmbeddedModel& m, std::string_view n) { return m.name < n; });
  if (it == models.end() || it->name != name) return std::nullopt;
  return it->json;
}

}  // namespace mixlab
