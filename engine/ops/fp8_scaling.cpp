#include "engine/ops/fp8_scaling.h"

#include <algorithm>

namespace mixlab {

std::string_view to_string(Fp8AmaxAlgo algo) {
  return algo == Fp8AmaxAlgo::max ? "max" : "most_recent";
}

std::string_view to_string(Fp8Formats formats) {
  return formats == Fp8Formats::hybrid ? "hybrid" : "e4m3";
}

std::optional<Fp8AmaxAlgo> parse_fp8_amax(std::string_view name) {
  for (Fp8AmaxAlgo a : {Fp8AmaxAlgo::max, Fp8AmaxAlgo::most_recent}) {
    if (name == to_string(a)) return a;
  }
  return std::nullopt;
}

std::optional<Fp8Formats> parse_fp8_formats(std::string_view name) {
  for (Fp8Formats f : {Fp8Formats::hybrid, Fp8Formats::e4m3}) {
    if (name == to_string(f)) return f;
  }
  return std::nullopt;
}

Fp8TensorScaling::Fp8TensorScaling(Fp8Format format, const Fp8Recipe& recipe)
    : format_(format),
      algo_(recipe.amax),
      margin_(std::clamp(recipe.margin, 0, Fp8Recipe::kMaxMargin)),
      history_(static_cast<std::size_t>(std::clamp(recipe.history, 1, Fp8Recipe::kMaxHistory)),
               0.0f) {}

void Fp8TensorScaling::update(float amax) {
  // Keras's ops.max over the history: NaN wins (jnp.max propagates it), and a NaN amax keeps
  // the old scale in fp8_next_scale.
  float reduced = history_.front();
  if (algo_ == Fp8AmaxAlgo::max) {
    for (float h : history_) {
      if (h != h || reduced != reduced) {
        reduced = h != h ? h : reduced;
      } else {
        reduced = std::max(reduced, h);
      }
    }
  }
  scale_ = fp8_next_scale(reduced, scale_, fp8_max(format_), margin_);
  std::rotate(history_.begin(), history_.begin() + 1, history_.end());  // roll(shift=-1)
  history_.front() = amax;
}

bool Fp8TensorScaling::restore(float scale, std::span<const float> history) {
  if (history.size() != history_.size()) return false;
  scale_ = scale;
  history_.assign(history.begin(), history.end());
  return true;
}

}  // namespace mixlab
