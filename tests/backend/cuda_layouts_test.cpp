// The CUDA backend's layout arithmetic, on the CPU (engine/backend/cuda/layouts.h): the three
// cuBLASLt products of a Dense layer, run here by a reference column-major GEMM with cuBLASLt's
// semantics for transposed operands and packed leading dimensions, must give the row-major
// products the layer needs; and the Conv2D kernel's KRSC layout must round-trip Keras's.
#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

#include "engine/backend/cuda/layouts.h"

namespace mixlab::cuda {
namespace {

// D (m, n) = op(A) . op(B), column-major, for each of the shape's strided batch, as cuBLASLt
// reads its layouts (LtMatmul: the leading dimensions given or packed, the batch strides), the
// operands starting `a0`, `b0` elements in and D written `d0` elements into `d`.
void gemm_into(const LtMatmulShape& s, const std::vector<double>& a, std::int64_t a0,
               const std::vector<double>& b, std::int64_t b0, std::vector<double>& d,
               std::int64_t d0) {
  const std::int64_t lda = s.lead_a(), ldb = s.lead_b(), ldd = s.lead_d();
  for (int batch = 0; batch < s.batch; ++batch) {
    const std::int64_t ao = a0 + batch * s.stride_a, bo = b0 + batch * s.stride_b,
                       dof = d0 + batch * s.stride_d;
    for (std::int64_t i = 0; i < s.m; ++i) {
      for (std::int64_t j = 0; j < s.n; ++j) {
        double sum = 0.0;
        for (std::int64_t p = 0; p < s.k; ++p) {
          const double av = s.transa ? a.at(static_cast<std::size_t>(ao + p + i * lda))
                                     : a.at(static_cast<std::size_t>(ao + i + p * lda));
          const double bv = s.transb ? b.at(static_cast<std::size_t>(bo + j + p * ldb))
                                     : b.at(static_cast<std::size_t>(bo + p + j * ldb));
          sum += av * bv;
        }
        d.at(static_cast<std::size_t>(dof + i + j * ldd)) = sum;
      }
    }
  }
}

std::vector<double> gemm(const LtMatmulShape& s, const std::vector<double>& a,
                         const std::vector<double>& b) {
  std::vector<double> c(static_cast<std::size_t>(s.m * s.n), 0.0);
  gemm_into(s, a, 0, b, 0, c, 0);
  return c;
}

std::vector<double> random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-8, 8);  // small integers: sums are exact
  std::vector<double> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Row-major (r, c) element of a rows x cols matrix.
double at(const std::vector<double>& m, std::int64_t cols, std::int64_t r, std::int64_t c) {
  return m[static_cast<std::size_t>(r * cols + c)];
}

TEST(CudaLayouts, DenseProductsAreTheLayersRowMajorProducts) {
  const std::int64_t rows = 5, in = 7, units = 3;
  const auto x = random(rows * in, 1), w = random(in * units, 2), dy = random(rows * units, 3);
  const DenseProducts p = dense_products(rows, in, units, DType::f16, false, true, true);

  // Y = X W
  const auto y = gemm(p.forward, w, x);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t u = 0; u < units; ++u) {
      double want = 0;
      for (std::int64_t i = 0; i < in; ++i) want += at(x, in, r, i) * at(w, units, i, u);
      EXPECT_EQ(at(y, units, r, u), want) << "Y[" << r << "][" << u << "]";
    }
  }
  // dX = dY W^T
  const auto dx = gemm(p.data_grad, w, dy);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t i = 0; i < in; ++i) {
      double want = 0;
      for (std::int64_t u = 0; u < units; ++u) want += at(dy, units, r, u) * at(w, units, i, u);
      EXPECT_EQ(at(dx, in, r, i), want) << "dX[" << r << "][" << i << "]";
    }
  }
  // dW = X^T dY, in Keras's (in, units) layout
  const auto dw = gemm(p.weight_grad, dy, x);
  for (std::int64_t i = 0; i < in; ++i) {
    for (std::int64_t u = 0; u < units; ++u) {
      double want = 0;
      for (std::int64_t r = 0; r < rows; ++r) want += at(x, in, r, i) * at(dy, units, r, u);
      EXPECT_EQ(at(dw, units, i, u), want) << "dW[" << i << "][" << u << "]";
    }
  }
}

// A row-major (r, c) matrix's transpose, row-major: the cast kernels' second copy.
std::vector<double> transpose(const std::vector<double>& m, std::int64_t rows, std::int64_t cols) {
  std::vector<double> t(m.size());
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < cols; ++c)
      t[static_cast<std::size_t>(c * rows + r)] = at(m, cols, r, c);
  return t;
}

// mixed_float8's products: all "TN", each on the row-major copies dense_fp8_products names.
TEST(CudaLayouts, Fp8DenseProductsAreTnOnTheCastCopies) {
  const std::int64_t rows = 5, in = 7, units = 3;
  const auto x = random(rows * in, 4), w = random(in * units, 5), dy = random(rows * units, 6);
  const Fp8DenseProducts p =
      dense_fp8_products(rows, in, units, DType::bf16, true, true, LtFp8::e5m2);
  for (const LtMatmulShape* s : {&p.forward, &p.data_grad, &p.weight_grad}) {
    EXPECT_TRUE(s->transa);
    EXPECT_FALSE(s->transb);
    EXPECT_TRUE(s->fp8());
  }
  EXPECT_EQ(p.forward.a8, LtFp8::e4m3);
  EXPECT_EQ(p.forward.b8, LtFp8::e4m3);
  EXPECT_EQ(p.data_grad.b8, LtFp8::e5m2);  // E4M3 x E5M2: cuBLASLt has no E5M2 x E5M2
  EXPECT_EQ(p.weight_grad.a8, LtFp8::e5m2);
  EXPECT_EQ(p.weight_grad.b8, LtFp8::e4m3);
  EXPECT_EQ(p.forward.epilogue, LtEpilogue::relu_bias);
  EXPECT_EQ(p.forward.cd, DType::bf16);
  EXPECT_EQ(p.weight_grad.cd, DType::f32);

  const auto y = gemm(p.forward, transpose(w, in, units), x);
  const auto dx = gemm(p.data_grad, w, dy);
  const auto dw = gemm(p.weight_grad, transpose(dy, rows, units), transpose(x, rows, in));
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t u = 0; u < units; ++u) {
      double want = 0;
      for (std::int64_t i = 0; i < in; ++i) want += at(x, in, r, i) * at(w, units, i, u);
      EXPECT_EQ(at(y, units, r, u), want) << "Y[" << r << "][" << u << "]";
    }
    for (std::int64_t i = 0; i < in; ++i) {
      double want = 0;
      for (std::int64_t u = 0; u < units; ++u) want += at(dy, units, r, u) * at(w, units, i, u);
      EXPECT_EQ(at(dx, in, r, i), want) << "dX[" << r << "][" << i << "]";
    }
  }
  for (std::int64_t i = 0; i < in; ++i) {
    for (std::int64_t u = 0; u < units; ++u) {
      double want = 0;
      for (std::int64_t r = 0; r < rows; ++r) want += at(x, in, r, i) * at(dy, units, r, u);
      EXPECT_EQ(at(dw, units, i, u), want) << "dW[" << i << "][" << u << "]";
    }
  }
  EXPECT_TRUE(fp8_dense_aligned(4096, 784, 128));  // 784 = 49 x 16
  EXPECT_FALSE(fp8_dense_aligned(4096, 100, 128));
  EXPECT_FALSE(fp8_dense_aligned(4104, 784, 128));
}

TEST(CudaLayouts, DenseProductsTypesAndEpilogues) {
  const DenseProducts bf16 = dense_products(4, 6, 2, DType::bf16, false, false, true);
  EXPECT_EQ(bf16.forward.ab, DType::bf16);
  EXPECT_EQ(bf16.forward.cd, DType::bf16);
  EXPECT_EQ(bf16.data_grad.cd, DType::bf16);
  EXPECT_EQ(bf16.weight_grad.ab, DType::bf16);
  EXPECT_EQ(bf16.weight_grad.cd, DType::f32) << "kernel gradients go to the float32 array";
  EXPECT_EQ(bf16.forward.epilogue, LtEpilogue::bias);
  EXPECT_EQ(bf16.data_grad.epilogue, LtEpilogue::none);
  EXPECT_EQ(bf16.weight_grad.epilogue, LtEpilogue::none);
  EXPECT_EQ(dense_products(4, 6, 2, DType::f32, true, true, false).forward.epilogue,
            LtEpilogue::relu);
  EXPECT_EQ(dense_products(4, 6, 2, DType::f32, true, true, true).forward.epilogue,
            LtEpilogue::relu_bias);
  EXPECT_EQ(dense_products(4, 6, 2, DType::f32, true, false, false).forward.epilogue,
            LtEpilogue::none);
  EXPECT_TRUE(dense_products(4, 6, 2, DType::f32, true, false, false).weight_grad.tf32);
}

TEST(CudaLayouts, ConvKernelKrscIsFiltersFirstAndRoundTripsKeras) {
  const ConvKernelShape s{2, 3, 4, 5};  // kh, kw, in, filters
  std::vector<float> keras(2 * 3 * 4 * 5);
  std::iota(keras.begin(), keras.end(), 0.0f);
  const auto krsc = keras_to_krsc(s, keras);
  // Keras (kh, kw, in, filters): filters vary fastest; KRSC: in varies fastest, filters slowest.
  for (int o = 0; o < 5; ++o)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        for (int c = 0; c < 4; ++c) {
          const float keras_value = static_cast<float>(((i * 3 + j) * 4 + c) * 5 + o);
          ASSERT_EQ(krsc[static_cast<std::size_t>(((o * 2 + i) * 3 + j) * 4 + c)], keras_value);
        }
  EXPECT_EQ(krsc_to_keras(s, krsc), keras);
}

}  // namespace
}  // namespace mixlab::cuda

namespace mixlab::cuda {
namespace {

// MultiHeadAttention's six products, head by head over strided batches of samples, on the
// (batch, steps, heads * dim) tensors and (batch, heads, steps, steps) scores: each must be the
// per-head row-major product the CPU backend computes (engine/backend/cpu/attention.cpp).
TEST(CudaLayouts, AttentionProductsAreEachHeadsRowMajorProducts) {
  const int batch = 2, steps = 3, heads = 2, kd = 4, vd = 5;
  const std::int64_t s = steps;
  const auto q = random(batch * s * heads * kd, 11), k = random(q.size(), 12),
             v = random(batch * s * heads * vd, 13), dy = random(v.size(), 14),
             p = random(batch * heads * s * s, 15), ds = random(p.size(), 16);
  const AttentionProducts ap = attention_products(batch, steps, heads, kd, vd, DType::bf16);
  // Element (row r, column c) of head h of sample b in a (batch, steps, heads * dim) tensor, and
  // of the (batch, heads, steps, steps) matrices.
  const auto t = [&](const std::vector<double>& x, int dim, int b, int h, std::int64_t r, int c) {
    return x[static_cast<std::size_t>(((b * s + r) * heads + h) * dim + c)];
  };
  const auto m = [&](const std::vector<double>& x, int b, int h, std::int64_t r, std::int64_t c) {
    return x[static_cast<std::size_t>(((b * heads + h) * s + r) * s + c)];
  };
  std::vector<double> scores(p.size()), y(v.size()), dp(p.size()), dv(v.size()), dk(q.size()),
      dq(q.size());
  for (int h = 0; h < heads; ++h) {
    gemm_into(ap.scores, k, ap.key_offset(h), q, ap.key_offset(h), scores, ap.scores_offset(h));
    gemm_into(ap.values, v, ap.value_offset(h), p, ap.scores_offset(h), y, ap.value_offset(h));
    gemm_into(ap.probs_grad, v, ap.value_offset(h), dy, ap.value_offset(h), dp,
              ap.scores_offset(h));
    gemm_into(ap.values_grad, dy, ap.value_offset(h), p, ap.scores_offset(h), dv,
              ap.value_offset(h));
    gemm_into(ap.keys_grad, q, ap.key_offset(h), ds, ap.scores_offset(h), dk, ap.key_offset(h));
    gemm_into(ap.query_grad, k, ap.key_offset(h), ds, ap.scores_offset(h), dq, ap.key_offset(h));
  }
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < heads; ++h) {
      for (std::int64_t i = 0; i < s; ++i) {
        for (std::int64_t j = 0; j < s; ++j) {
          double sij = 0, dpij = 0;
          for (int c = 0; c < kd; ++c) sij += t(q, kd, b, h, i, c) * t(k, kd, b, h, j, c);
          for (int c = 0; c < vd; ++c) dpij += t(dy, vd, b, h, i, c) * t(v, vd, b, h, j, c);
          EXPECT_EQ(m(scores, b, h, i, j), sij) << "S " << b << h << i << j;
          EXPECT_EQ(m(dp, b, h, i, j), dpij) << "dP " << b << h << i << j;
        }
        for (int c = 0; c < vd; ++c) {
          double yic = 0, dvic = 0;
          for (std::int64_t j = 0; j < s; ++j) {
            yic += m(p, b, h, i, j) * t(v, vd, b, h, j, c);
            dvic += m(p, b, h, j, i) * t(dy, vd, b, h, j, c);
          }
          EXPECT_EQ(t(y, vd, b, h, i, c), yic) << "Y " << b << h << i << c;
          EXPECT_EQ(t(dv, vd, b, h, i, c), dvic) << "dV " << b << h << i << c;
        }
        for (int c = 0; c < kd; ++c) {
          double dkic = 0, dqic = 0;
          for (std::int64_t j = 0; j < s; ++j) {
            dkic += m(ds, b, h, j, i) * t(q, kd, b, h, j, c);
            dqic += m(ds, b, h, i, j) * t(k, kd, b, h, j, c);
          }
          EXPECT_EQ(t(dk, kd, b, h, i, c), dkic) << "dK " << b << h << i << c;
          EXPECT_EQ(t(dq, kd, b, h, i, c), dqic) << "dQ " << b << h << i << c;
        }
      }
    }
  }
  // The scores, weights and their gradient in the layer's dtype, dP and the inputs' gradients in
  // float32; every view of this shape 8-byte aligned (key_dim 4 in bfloat16).
  EXPECT_EQ(ap.scores.cd, DType::bf16);
  EXPECT_EQ(ap.values.cd, DType::bf16);
  for (const LtMatmulShape* g : {&ap.probs_grad, &ap.values_grad, &ap.keys_grad, &ap.query_grad}) {
    EXPECT_EQ(g->ab, DType::bf16);
    EXPECT_EQ(g->cd, DType::f32);
  }
  EXPECT_EQ(ap.scores.align, 2);  // 3 x 3 bfloat16 scores a head: 18 bytes
  // Up to 256 bytes, which cuBLASLt assumes unless told: a head of 32 bfloat16 values is 64.
  EXPECT_EQ(attention_products(8, 128, 4, 32, 32, DType::bf16).scores.align, 64);
  EXPECT_EQ(attention_products(8, 128, 4, 128, 128, DType::bf16).values.align, 256);
  EXPECT_EQ(attention_products(8, 128, 4, 12, 12, DType::f16).values.align, 8);
  // --tf32 reaches the six float32 products, as it does the projections' (dense_products).
  const AttentionProducts tf32 = attention_products(2, 16, 2, 8, 8, DType::f32, true);
  for (const LtMatmulShape* s : {&tf32.scores, &tf32.values, &tf32.probs_grad, &tf32.values_grad,
                                 &tf32.keys_grad, &tf32.query_grad}) {
    EXPECT_TRUE(s->tf32);
  }
  EXPECT_FALSE(attention_products(2, 16, 2, 8, 8, DType::f32).scores.tf32);
}

}  // namespace
}  // namespace mixlab::cuda
