// The table row of a token id, as both backends read it: ids travel as float32 (exact up to
// 2^24); one outside [0, vocabulary) reads the nearest row (no read out of bounds; the trainer
// refuses data with such ids before a run, naming the id and the layer).
#pragma once

#include <cstdint>

#include "engine/core/hd.h"

namespace mixlab {

MIXLAB_HD std::int64_t embedding_row(float id, std::int64_t vocabulary) {
  if (!(id > 0.0f)) return 0;  // NaN too
  const auto row = static_cast<std::int64_t>(id);
  return row >= vocabulary ? vocabulary - 1 : row;
}

}  // namespace mixlab
