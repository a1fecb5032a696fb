// Delayed scaling of an FP8 tensor (issue 30): each tensor that is cast to FP8 keeps a float32
// scale and a history of its recent amaxes (largest magnitudes); every step quantizes with the
// scale it has and updates both from the step's amax.
//
// The recipe is Keras 3's (keras.quantizers.compute_float8_scale and
// compute_float8_amax_history, as Dense._float8_call uses them), which cites Transformer Engine's
// DelayedScaling:
//   - `scale` is the dequantising factor: x is quantized as x / scale, saturated, and read back
//     as q * scale (Transformer Engine keeps its reciprocal, the quantising factor, and
//     scale_inv beside it).
//   - The new scale maps the history's amax to the format's largest value divided by 2^margin:
//     1 / ((fp8_max / amax) / 2^margin), computed in float32 as Keras does; an amax that is
//     zero or not finite keeps the old scale.
//   - The history rolls by one and takes the step's amax at its front.
// Where Keras and Transformer Engine differ, MixLab follows Keras: the scale a step computes is
// made from the history before that step's amax is pushed (Keras computes both in the same
// forward pass), so a tensor's amax reaches its scale one step later than in Transformer
// Engine, which updates the history first. Keras reduces the history with max; MixLab also
// offers Transformer Engine's most_recent (the front of that same history).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "engine/core/fp8.h"
#include "engine/core/hd.h"

namespace mixlab {

enum class Fp8AmaxAlgo : std::uint8_t { max, most_recent };

// Which FP8 format each tensor takes: hybrid is E4M3 forward (inputs, weights) and E5M2 for the
// gradients, as in Transformer Engine's Format.HYBRID and Keras's float8 Dense; e4m3 uses E4M3
// for both.
enum class Fp8Formats : std::uint8_t { hybrid, e4m3 };

// The run's settings (--fp8-history, --fp8-amax, --fp8-margin, --fp8-format).
struct Fp8Recipe {
  static constexpr int kDefaultHistory = 1024;  // Keras's QuantizedFloat8DTypePolicy default
  static constexpr int kMaxHistory = 1 << 16;
  static constexpr int kMaxMargin = 32;
  int history = kDefaultHistory;
  Fp8AmaxAlgo amax = Fp8AmaxAlgo::max;
  int margin = 0;
  Fp8Formats formats = Fp8Formats::hybrid;

  Fp8Format gradient_format() const {
    return formats == Fp8Formats::hybrid ? Fp8Format::e5m2 : Fp8Format::e4m3;
  }
  bool operator==(const Fp8Recipe&) const = default;
};

std::string_view to_string(Fp8AmaxAlgo algo);
std::string_view to_string(Fp8Formats formats);
std::optional<Fp8AmaxAlgo> parse_fp8_amax(std::string_view name);
std::optional<Fp8Formats> parse_fp8_formats(std::string_view name);

// Keras's compute_float8_scale, operation for operation in float32.
// `margin` is 0..Fp8Recipe::kMaxMargin.
MIXLAB_HD float fp8_next_scale(float amax, float scale, float format_max, int margin) {
  const float old_factor = 1.0f / scale;
  const float two_to_margin = bits_float(static_cast<std::uint32_t>(127 + margin) << 23);
  float factor = (format_max / amax) / two_to_margin;
  const bool finite = (float_bits(amax) & 0x7f800000u) != 0x7f800000u;
  if (!(amax > 0.0f) || !finite) factor = old_factor;
  return 1.0f / factor;
}

// One FP8 tensor's scaling state, on the host.
class Fp8TensorScaling {
 public:
  Fp8TensorScaling(Fp8Format format, const Fp8Recipe& recipe);

  Fp8Format format() const { return format_; }
  float scale() const { return scale_; }
  const std::vector<float>& history() const { return history_; }

  // The end of a step in which the tensor's largest magnitude was `amax`: the next scale from
  // the history so far, then the history takes `amax` at its front.
  void update(float amax);
  // Continues from a saved state (a Keras float8-quantized Dense's scale and amax history, in
  // this class's order: the front the newest) instead of Keras's initial one. False, leaving the
  // state as it was, when the history's length is not this tensor's (the run's --fp8-history).
  bool restore(float scale, std::span<const float> history);

 private:
  Fp8Format format_;
  Fp8AmaxAlgo algo_;
  int margin_;
  float scale_ = 1.0f;  // Keras's initial scale
  std::vector<float> history_;
};

}  // namespace mixlab
