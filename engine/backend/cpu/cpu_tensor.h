// Element storage of the CPU backend and typed access to it.
// float16 has no arithmetic on most CPUs, so a float16 tensor is kept as float32 values rounded
// to float16 after every write: overflow, underflow and loss scaling behave as on a GPU. On CPUs
// where oneDNN has no bfloat16 kernels (below AVX-512), bfloat16 is emulated the same way.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/core/half.h"
#include "engine/core/precision.h"

namespace mixlab::cpu {

enum class Storage : std::uint8_t {
  f32,
  bf16,           // bfloat16 for oneDNN's bf16 kernels
  f16,            // float32 values rounded to float16
  bf16_emulated,  // float32 values rounded to bfloat16
};

// `bf16_kernels`: oneDNN has bfloat16 kernels on this CPU (AVX-512 and up).
inline Storage storage_for(DType dtype, bool bf16_kernels) {
  switch (dtype) {
    case DType::f32:
      return Storage::f32;
    case DType::bf16:
      return bf16_kernels ? Storage::bf16 : Storage::bf16_emulated;
    case DType::f16:
      return Storage::f16;
  }
  return Storage::f32;
}

// Float32 values kept rounded to a 16-bit type after every write.
inline bool is_rounded(Storage s) {
  return s == Storage::f16 || s == Storage::bf16_emulated;
}

inline std::size_t storage_bytes(Storage s) {
  return s == Storage::bf16 ? 2 : 4;
}

// The oneDNN type a storage is computed in.
inline dnnl::memory::data_type dnnl_type(Storage s) {
  return s == Storage::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

template <Storage S>
inline float load(const void* p, std::int64_t i) {
  if constexpr (S == Storage::bf16) {
    return bf16_bits_to_float(static_cast<const std::uint16_t*>(p)[i]);
  } else {
    return static_cast<const float*>(p)[i];
  }
}

template <Storage S>
inline void store(void* p, std::int64_t i, float v) {
  if constexpr (S == Storage::bf16) {
    static_cast<std::uint16_t*>(p)[i] = float_to_bf16_bits(v);
  } else if constexpr (S == Storage::f16) {
    static_cast<float*>(p)[i] = round_to_f16(v);
  } else if constexpr (S == Storage::bf16_emulated) {
    static_cast<float*>(p)[i] = round_to_bf16(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

// Calls f(std::integral_constant<Storage, s>{}) so loops are compiled per storage.
template <class F>
decltype(auto) with_storage(Storage s, F&& f) {
  switch (s) {
    case Storage::bf16:
      return f(std::integral_constant<Storage, Storage::bf16>{});
    case Storage::f16:
      return f(std::integral_constant<Storage, Storage::f16>{});
    case Storage::bf16_emulated:
      return f(std::integral_constant<Storage, Storage::bf16_emulated>{});
    case Storage::f32:
      break;
  }
  return f(std::integral_constant<Storage, Storage::f32>{});
}

// A tensor in the arena: (batch, ...) elements of one storage.
struct Tensor {
  void* data = nullptr;
  Storage storage = Storage::f32;
  std::vector<std::int64_t> dims;  // with the batch first; NHWC for images
  std::int64_t elements() const {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
  std::size_t bytes() const {
    return static_cast<std::size_t>(elements()) * storage_bytes(storage);
  }
};

// Converts n values between storages (the float16 rounding included).
void convert(const void* src, Storage src_storage, void* dst, Storage dst_storage, std::int64_t n);
// Rounds n float32 values in place to the 16-bit type of a rounded storage (after a oneDNN op
// wrote its data in float32); does nothing for the others.
void round_inplace(Storage storage, float* data, std::int64_t n);
// Whether all n values (float32 or bfloat16) are finite.
bool all_finite(const void* data, Storage storage, std::int64_t n);
// How many of them are NaN or inf.
std::int64_t count_nonfinite(const void* data, Storage storage, std::int64_t n);

}  // namespace mixlab::cpu
