#include "engine/spec/model_weights.h"

#include <utility>

#include "engine/core/error.h"

namespace mixlab {

std::vector<float>& LayerWeights::values(ParamKind kind) {
  return const_cast<std::vector<float>&>(std::as_const(*this).values(kind));
}

const std::vector<float>& LayerWeights::values(ParamKind kind) const {
  switch (kind) {
    case ParamKind::kernel:
      return kernel;
    case ParamKind::bias:
      return bias;
    case ParamKind::gamma:
      return gamma;
    case ParamKind::beta:
      return beta;
    case ParamKind::moving_mean:
      return moving_mean;
    case ParamKind::moving_variance:
      return moving_variance;
    case ParamKind::pointwise_kernel:
      return pointwise_kernel;
    case ParamKind::embeddings:
      return embeddings;
  }
  return kernel;
}

void write_model_weights(
    const ModelWeights& weights,
    const std::function<void(int layer, ParamKind kind, std::span<const float> values)>& write) {
  for (const LayerWeights& w : weights.layers) {
    for (const ParamKind kind :
         {ParamKind::kernel, ParamKind::bias, ParamKind::gamma, ParamKind::beta,
          ParamKind::moving_mean, ParamKind::moving_variance, ParamKind::pointwise_kernel,
          ParamKind::embeddings}) {
      const std::vector<float>& values = w.values(kind);
      if (values.empty()) continue;
      try {
        write(w.layer, kind, values);
      } catch (const Error& e) {
        throw ConfigError(weights.origin + ": starting weights: " + e.what());
      }
    }
  }
}

}  // namespace mixlab
