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

void Fp8StateRestorer::restore(int layer, Fp8TensorScaling& input, Fp8TensorScaling& kernel,
                               Fp8TensorScaling& gradient) {
  const auto part = static_cast<std::size_t>(next_part_[layer]++);
  if (weights_ == nullptr) return;
  for (const LayerWeights& w : weights_->layers) {
    if (w.layer != layer || w.fp8.size() < 3 * part + 3) continue;
    Fp8TensorScaling* scalings[] = {&input, &kernel, &gradient};
    const Fp8TensorState* states = w.fp8.data() + 3 * part;
    run_length_ = input.history().size();
    saved_length_ = states[0].amax_history.size();
    bool fits = true;
    for (int i = 0; i < 3; ++i) {
      fits = fits && states[i].amax_history.size() == scalings[i]->history().size();
    }
    if (!fits) {
      mismatched_.insert(layer);
      return;
    }
    for (int i = 0; i < 3; ++i) scalings[i]->restore(states[i].scale, states[i].amax_history);
    carried_.insert(layer);
    return;
  }
}

std::string Fp8StateRestorer::note() const {
  if (carried_.empty() && mismatched_.empty()) return {};
  std::string note;
  if (!carried_.empty()) {
    note = "FP8 scales and amax histories from " + weights_->origin + " (" +
           std::to_string(carried_.size()) + (carried_.size() == 1 ? " layer)" : " layers)");
  }
  if (!mismatched_.empty()) {
    std::string layers;
    for (const int l : mismatched_) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
    note += std::string(note.empty() ? "" : "; ") + "FP8 scales and amax histories of layer" +
            (mismatched_.size() > 1 ? "s " : " ") + layers +
            " started afresh: " + weights_->origin + " keeps " + std::to_string(saved_length_) +
            " steps of history, the run " + std::to_string(run_length_) + " (--fp8-history " +
            std::to_string(saved_length_) + " carries them)";
  }
  return note;
}

}  // namespace mixlab
