// Broadcasting one tensor over a larger one: where an element of the larger reads the smaller,
// and which elements of the larger read one of the smaller (to sum a gradient over them).
#pragma once

#include <cstdint>

#include "engine/core/hd.h"

namespace mixlab {

// A tensor repeated along some axes of a larger one of the same rank (Keras's broadcasting):
// an elementwise merge's input (a squeeze-and-excitation block's Multiply of HxWxC by 1x1xC),
// and Dropout's noise_shape (one mask value per sample: [None, 1, 1, 1]). Axes include the
// batch. Host and device alike.
struct Broadcast {
  static constexpr int kMaxDims = 6;
  int rank = 0;                      // 0: the input has the output's shape
  std::int64_t dims[kMaxDims] = {};  // the output's
  bool spread[kMaxDims] = {};        // the input has 1 here, the output dims[d]

  // Where output element e reads the input.
  MIXLAB_HD std::int64_t input_index(std::int64_t e) const {
    if (rank == 0) return e;
    std::int64_t in = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const std::int64_t coord = e % dims[d];
      e /= dims[d];
      if (!spread[d]) {
        in += coord * stride;
        stride *= dims[d];
      }
    }
    return in;
  }
  // How many output elements read each input element.
  MIXLAB_HD std::int64_t fan() const {
    std::int64_t n = 1;
    for (int d = 0; d < rank; ++d) n *= spread[d] ? dims[d] : 1;
    return n;
  }
  // The k-th (of fan()) output element that reads input element j.
  MIXLAB_HD std::int64_t output_index(std::int64_t j, std::int64_t k) const {
    std::int64_t out = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      std::int64_t coord = 0;
      if (spread[d]) {
        coord = k % dims[d];
        k /= dims[d];
      } else {
        coord = j % dims[d];
        j /= dims[d];
      }
      out += coord * stride;
      stride *= dims[d];
    }
    return out;
  }
};

// The broadcast of a tensor of dims `in` into one of dims `out` of the same rank (with the
// batch; 1 in `in` where `out` has more); rank 0 when they are equal. Host only.
template <class Dims>
Broadcast broadcast_of(const Dims& in, const Dims& out) {
  Broadcast b;
  if (in == out) return b;
  b.rank = static_cast<int>(out.size());
  for (int d = 0; d < b.rank && d < Broadcast::kMaxDims; ++d) {
    b.dims[d] = out[static_cast<std::size_t>(d)];
    b.spread[d] = in[static_cast<std::size_t>(d)] != out[static_cast<std::size_t>(d)];
  }
  return b;
}

}  // namespace mixlab
