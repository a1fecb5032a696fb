#include "engine/backend/cpu/cpu_tensor.h"

#include <cmath>

namespace mixlab::cpu {

void convert(const void* src, Storage src_storage, void* dst, Storage dst_storage, std::int64_t n) {
  with_storage(src_storage, [&](auto s) {
    with_storage(dst_storage, [&](auto d) {
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < n; ++i) store<d()>(dst, i, load<s()>(src, i));
    });
  });
}

void round_inplace(Storage storage, float* data, std::int64_t n) {
  if (storage == Storage::f16) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) data[i] = round_to_f16(data[i]);
  } else if (storage == Storage::bf16_emulated) {
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) data[i] = round_to_bf16(data[i]);
  }
}

bool all_finite(const void* data, Storage storage, std::int64_t n) {
  int bad = 0;
  if (storage == Storage::bf16) {
    const auto* h = static_cast<const std::uint16_t*>(data);
#pragma omp parallel for simd schedule(static) reduction(| : bad)
    for (std::int64_t i = 0; i < n; ++i) bad |= (h[i] & 0x7f80u) == 0x7f80u;
    return bad == 0;
  }
  const auto* f = static_cast<const float*>(data);
#pragma omp parallel for simd schedule(static) reduction(| : bad)
  for (std::int64_t i = 0; i < n; ++i) {
    // Exponent all ones: inf or NaN. Works under -ffast-math too.
    bad |= (float_bits(f[i]) & 0x7f800000u) == 0x7f800000u;
  }
  return bad == 0;
}

std::int64_t count_nonfinite(const void* data, Storage storage, std::int64_t n) {
  std::int64_t bad = 0;
  if (storage == Storage::bf16) {
    const auto* h = static_cast<const std::uint16_t*>(data);
#pragma omp parallel for simd schedule(static) reduction(+ : bad)
    for (std::int64_t i = 0; i < n; ++i) bad += (h[i] & 0x7f80u) == 0x7f80u;
    return bad;
  }
  const auto* f = static_cast<const float*>(data);
#pragma omp parallel for simd schedule(static) reduction(+ : bad)
  for (std::int64_t i = 0; i < n; ++i) bad += (float_bits(f[i]) & 0x7f800000u) == 0x7f800000u;
  return bad;
}

}  // namespace mixlab::cpu
