#include "engine/spec/model_weights.h"

#include "engine/core/error.h"

namespace mixlab {

void write_model_weights(
    const ModelWeights& weights,
    const std::function<void(int layer, ParamKind kind, std::span<const float> values)>& write) {
  for (const LayerWeights& w : weights.layers) {
    for (const auto& [kind, values] :
         {std::pair{ParamKind::kernel, &w.kernel}, std::pair{ParamKind::bias, &w.bias}}) {
      if (values->empty()) continue;
      try {
        write(w.layer, kind, *values);
      } catch (const Error& e) {
        throw ConfigError(weights.origin + ": starting weights: " + e.what());
      }
    }
  }
}

}  // namespace mixlab
