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
    case ParamKind::query_kernel:
      return query_kernel;
    case ParamKind::query_bias:
      return query_bias;
    case ParamKind::key_kernel:
      return key_kernel;
    case ParamKind::key_bias:
      return key_bias;
    case ParamKind::value_kernel:
      return value_kernel;
    case ParamKind::value_bias:
      return value_bias;
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
          ParamKind::embeddings, ParamKind::query_kernel, ParamKind::query_bias,
          ParamKind::key_kernel, ParamKind::key_bias, ParamKind::value_kernel,
          ParamKind::value_bias}) {
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
