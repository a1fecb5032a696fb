#include "engine/core/fp8_table.h"

#include <vector>

namespace mixlab {

namespace {

std::vector<float> build(Fp8Format format) {
  std::vector<float> table(0x8000);
  for (std::uint32_t b = 0; b < 0x8000; ++b) table[b] = round_to_fp8(format, bits_float(b << 16));
  return table;
}

}  // namespace

const float* fp8_rounding_table(Fp8Format format) {
  static const std::vector<float> e4m3 = build(Fp8Format::e4m3);
  static const std::vector<float> e5m2 = build(Fp8Format::e5m2);
  return format == Fp8Format::e5m2 ? e5m2.data() : e4m3.data();
}

}  // namespace mixlab
