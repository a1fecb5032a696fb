// The CUDA backend's layout arithmetic, free of CUDA so that the CPU tests check it
// (tests/backend/cuda_layouts_test.cpp): the three cuBLASLt products of a Dense layer and the
// Conv2D kernel's KRSC layout.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/core/precision.h"

namespace mixlab::cuda {

enum class LtEpilogue : std::uint8_t { none, bias, relu, relu_bias };

// An FP8 operand's format (cuBLASLt's CUDA_R_8F_E4M3 / CUDA_R_8F_E5M2); none: `ab`'s dtype.
enum class LtFp8 : std::uint8_t { none, e4m3, e5m2 };

struct LtMatmulShape {
  // C (m, n) = op(A) (m, k) . op(B) (k, n), column-major, leading dimensions packed: A is stored
  // (m, k) or, transposed, (k, m); B (k, n) or (n, k).
  std::int64_t m = 0, n = 0, k = 0;
  bool transa = false, transb = false;
  DType ab = DType::f32;  // A and B
  DType cd = DType::f32;  // C and D (the bias has this type too)
  bool tf32 = false;      // float32 inputs: TF32 tensor cores
  LtEpilogue epilogue = LtEpilogue::none;
  // FP8 operands (mixed_float8): A and B in these formats, each with a dequantising scale given
  // when the product runs; cuBLASLt runs FP8 only as "TN" (A transposed, B not).
  LtFp8 a8 = LtFp8::none, b8 = LtFp8::none;
  bool fp8() const { return a8 != LtFp8::none; }
  // Leading dimensions (0: packed, the stored rows) and a strided batch of `batch` products,
  // each operand `stride_*` elements after the last (attention's heads are strided views of
  // the (batch, steps, heads * dim) tensors).
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  int batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;
  // The operands' addresses' alignment in bytes, which cuBLASLt's heuristic cannot see: unless
  // told (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES) it assumes 256, as the arena's buffers are,
  // and may pick an algorithm that a view starting 16 to 128 bytes in does not satisfy.
  int align = 256;

  std::int64_t a_rows() const { return transa ? k : m; }
  std::int64_t b_rows() const { return transb ? n : k; }
  std::int64_t lead_a() const { return lda > 0 ? lda : a_rows(); }
  std::int64_t lead_b() const { return ldb > 0 ? ldb : b_rows(); }
  std::int64_t lead_d() const { return ldd > 0 ? ldd : m; }
};

// Row-major tensors are column-major transposes, so the three products of a Dense layer with
// X (rows, in), W (in, units), Y (rows, units) are, in cuBLASLt's column-major terms, with each
// operand the row-major buffer as it is:
//   forward      Y^T (units, rows) = W^T (units, in)  . X^T (in, rows)       A = W,  B = X
//   data grad   dX^T (in, rows)    = W   (in, units)  . dY^T (units, rows)   A = W,  B = dY
//   weight grad dW^T (units, in)   = dY^T (units, rows) . X (rows, in)       A = dY, B = X
// The weight gradient is float32 whatever the inputs (the float32 gradient array).
struct DenseProducts {
  LtMatmulShape forward, data_grad, weight_grad;
};

inline DenseProducts dense_products(std::int64_t rows, std::int64_t in, std::int64_t units,
                                    DType dtype, bool tf32, bool relu, bool bias) {
  DenseProducts p;
  p.forward.m = units;
  p.forward.n = rows;
  p.forward.k = in;
  p.forward.epilogue = relu ? (bias ? LtEpilogue::relu_bias : LtEpilogue::relu)
                            : (bias ? LtEpilogue::bias : LtEpilogue::none);
  p.data_grad.m = in;
  p.data_grad.n = rows;
  p.data_grad.k = units;
  p.data_grad.transa = true;
  p.weight_grad.m = units;
  p.weight_grad.n = in;
  p.weight_grad.k = rows;
  p.weight_grad.transb = true;
  for (LtMatmulShape* s : {&p.forward, &p.data_grad, &p.weight_grad}) {
    s->ab = s->cd = dtype;
    s->tf32 = tf32;
  }
  p.weight_grad.cd = DType::f32;
  return p;
}

// mixed_float8's Dense products on FP8 tensor cores. cuBLASLt takes FP8 only as "TN", both
// operands contiguous along the reduction, so each is the row-major FP8 copy that is (the
// cast kernels write a tensor and, where a product needs it, its transpose):
//   forward      Y^T (units, rows) = op(A) (units, in) . X^T (in, rows)    A = W^T (units, in)
//   data grad   dX^T (in, rows)    = op(A) (in, units) . dY^T (units, rows) A = W  (in, units)
//   weight grad dW^T (units, in)   = op(A) (units, rows) . X (rows, in)     A = dY^T (units, rows)
//                                                                           B = X^T (in, rows)
// with B = X (rows, in) and dY (rows, units) in the first two. The input and the kernel are
// E4M3, the gradient `gradient` (E5M2 under the hybrid recipe); the kernel's gradient float32.
struct Fp8DenseProducts {
  LtMatmulShape forward, data_grad, weight_grad;
};

inline Fp8DenseProducts dense_fp8_products(std::int64_t rows, std::int64_t in, std::int64_t units,
                                           DType out, bool relu, bool bias, LtFp8 gradient) {
  Fp8DenseProducts p;
  p.forward.m = units;
  p.forward.n = rows;
  p.forward.k = in;
  p.forward.a8 = p.forward.b8 = LtFp8::e4m3;
  p.forward.epilogue = relu ? (bias ? LtEpilogue::relu_bias : LtEpilogue::relu)
                            : (bias ? LtEpilogue::bias : LtEpilogue::none);
  p.data_grad.m = in;
  p.data_grad.n = rows;
  p.data_grad.k = units;
  p.data_grad.a8 = LtFp8::e4m3;
  p.data_grad.b8 = gradient;
  p.weight_grad.m = units;
  p.weight_grad.n = in;
  p.weight_grad.k = rows;
  p.weight_grad.a8 = gradient;
  p.weight_grad.b8 = LtFp8::e4m3;
  for (LtMatmulShape* s : {&p.forward, &p.data_grad, &p.weight_grad}) {
    s->transa = true;  // TN
    s->transb = false;
    s->ab = s->cd = out;
  }
  p.weight_grad.cd = DType::f32;
  return p;
}

// cuBLASLt's FP8 GEMMs need 16-byte aligned leading dimensions (FP8: multiples of 16 elements)
// and, for a 16-bit output, its rows too: every dimension of the layer a multiple of 16 (what
// the doctor's kTensorCoreMultipleFp8 models). Off them the layer runs in bfloat16.
inline bool fp8_dense_aligned(std::int64_t rows, std::int64_t in, std::int64_t units) {
  return rows % 16 == 0 && in % 16 == 0 && units % 16 == 0;
}

// MultiHeadAttention's core on cuBLASLt, one head at a time: each product a strided batch over
// the samples. With q, k (batch, steps, heads * key_dim), v, y (batch, steps, heads * value_dim)
// row-major and the scores S, weights P (batch, heads, steps, steps), in cuBLASLt's column-major
// terms, for head h (the operands offset by the `*_offset` elements below):
//   scores       S^T (s, s)  = op(K^T) . Q^T        A = K  (T), B = Q  (N)   S  = Q K^T
//   values       Y^T (vd, s) = V^T . P^T             A = V  (N), B = P  (N)   Y  = P V
//   probs grad  dP^T (s, s)  = op(V^T) . dY^T        A = V  (T), B = dY (N)   dP = dY V^T
//   values grad dV^T (vd, s) = dY^T . op(P^T)        A = dY (N), B = P  (T)   dV = P^T dY
//   keys grad   dK^T (kd, s) = Q^T . op(dS^T)        A = Q  (N), B = dS (T)   dK = dS^T Q
//   query grad  dQ^T (kd, s) = K^T . dS^T            A = K  (N), B = dS (N)   dQ = dS K
// S, P and dS are stored in the layer's dtype (Keras's einsums' outputs; P and dS are what the
// next products read), dP and the three input gradients in float32. The scale, the causal mask
// and the float32 softmax and its backward are MixLab's kernels between the products.
struct AttentionProducts {
  LtMatmulShape scores, values, probs_grad, values_grad, keys_grad, query_grad;
  // Head h's first element: in q, k and their gradients; in v, y and theirs; in S, P, dP, dS.
  std::int64_t key_offset(int h) const { return static_cast<std::int64_t>(h) * key_dim; }
  std::int64_t value_offset(int h) const { return static_cast<std::int64_t>(h) * value_dim; }
  std::int64_t scores_offset(int h) const { return static_cast<std::int64_t>(h) * steps * steps; }
  std::int64_t steps = 0;
  int key_dim = 0, value_dim = 0;
};

// The largest power of two up to 256 dividing `bytes`: the alignment of every head's view.
inline int view_alignment(std::int64_t bytes) {
  int a = 256;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

// `tf32`: float32 products on TF32 tensor cores (--tf32), as the layer's projections run.
inline AttentionProducts attention_products(int batch, int steps, int heads, int key_dim,
                                            int value_dim, DType dtype, bool tf32 = false) {
  AttentionProducts p;
  p.steps = steps;
  p.key_dim = key_dim;
  p.value_dim = value_dim;
  const std::int64_t s = steps, qk_row = static_cast<std::int64_t>(heads) * key_dim,
                     v_row = static_cast<std::int64_t>(heads) * value_dim;
  const std::int64_t qk_sample = s * qk_row, v_sample = s * v_row,
                     scores_sample = static_cast<std::int64_t>(heads) * s * s;
  const auto set = [&](LtMatmulShape& x, std::int64_t m, std::int64_t n, std::int64_t k, bool ta,
                       bool tb, std::int64_t lda, std::int64_t ldb, std::int64_t ldd,
                       std::int64_t sa, std::int64_t sb, std::int64_t sd, DType cd) {
    x.m = m;
    x.n = n;
    x.k = k;
    x.transa = ta;
    x.transb = tb;
    x.lda = lda;
    x.ldb = ldb;
    x.ldd = ldd;
    x.batch = batch;
    x.stride_a = sa;
    x.stride_b = sb;
    x.stride_d = sd;
    x.ab = dtype;
    x.cd = cd;
    x.tf32 = tf32;
  };
  set(p.scores, s, s, key_dim, true, false, qk_row, qk_row, s, qk_sample, qk_sample, scores_sample,
      dtype);
  set(p.values, value_dim, s, s, false, false, v_row, s, v_row, v_sample, scores_sample, v_sample,
      dtype);
  set(p.probs_grad, s, s, value_dim, true, false, v_row, v_row, s, v_sample, v_sample,
      scores_sample, DType::f32);
  set(p.values_grad, value_dim, s, s, false, true, v_row, s, v_row, v_sample, scores_sample,
      v_sample, DType::f32);
  set(p.keys_grad, key_dim, s, s, false, true, qk_row, s, qk_row, qk_sample, scores_sample,
      qk_sample, DType::f32);
  set(p.query_grad, key_dim, s, s, false, false, qk_row, s, qk_row, qk_sample, scores_sample,
      qk_sample, DType::f32);
  // Every head's view starts at a multiple of its head's dims (the buffers themselves are the
  // arena's, 256-byte aligned); float32 outputs are 4-byte elements.
  const auto in_bytes = static_cast<std::int64_t>(dtype_bytes(dtype));
  const int qk = view_alignment(key_dim * in_bytes), v = view_alignment(value_dim * in_bytes);
  const int qk32 = view_alignment(key_dim * 4), v32 = view_alignment(value_dim * 4);
  const int ss = view_alignment(s * s * in_bytes), ss32 = view_alignment(s * s * 4);
  p.scores.align = std::min(qk, ss);
  p.values.align = std::min(v, ss);
  p.probs_grad.align = std::min(v, ss32);
  p.values_grad.align = std::min({v, ss, v32});
  p.keys_grad.align = std::min({qk, ss, qk32});
  p.query_grad.align = std::min({qk, ss, qk32});
  return p;
}

// A Conv2D kernel: Keras's (kh, kw, in, filters) and cuDNN's NHWC filter layout KRSC
// (filters, kh, kw, in), in which the backend keeps masters, copies and gradients.
struct ConvKernelShape {
  int kh = 1, kw = 1, in = 1, filters = 1;
  std::size_t keras_index(int o, int i, int j, int c) const {
    return ((static_cast<std::size_t>(i) * kw + j) * in + c) * filters + o;
  }
  std::size_t krsc_index(int o, int i, int j, int c) const {
    return ((static_cast<std::size_t>(o) * kh + i) * kw + j) * in + c;
  }
};

// Calls f(keras_index, krsc_index) for every element.
template <class F>
void for_each_kernel_element(const ConvKernelShape& s, F&& f) {
  for (int o = 0; o < s.filters; ++o)
    for (int i = 0; i < s.kh; ++i)
      for (int j = 0; j < s.kw; ++j)
        for (int c = 0; c < s.in; ++c) f(s.keras_index(o, i, j, c), s.krsc_index(o, i, j, c));
}

inline std::vector<float> krsc_to_keras(const ConvKernelShape& s, std::span<const float> krsc) {
  std::vector<float> keras(krsc.size());
  for_each_kernel_element(s, [&](std::size_t k, std::size_t r) { keras[k] = krsc[r]; });
  return keras;
}

inline std::vector<float> keras_to_krsc(const ConvKernelShape& s, std::span<const float> keras) {
  std::vector<float> krsc(keras.size());
  for_each_kernel_element(s, [&](std::size_t k, std::size_t r) { krsc[r] = keras[k]; });
  return krsc;
}

}  // namespace mixlab::cuda
