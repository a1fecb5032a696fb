#include "engine/backend/cpu/attention.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/attention.h"
#include "engine/ops/fast_math.h"

namespace mixlab::cpu {

namespace {

// Rounds to a storage's 16-bit type where it has one (what storing the value would round).
float rounded(Storage s, float v) {
  switch (s) {
    case Storage::f16:
      return round_to_f16(v);
    case Storage::bf16:
    case Storage::bf16_emulated:
      return round_to_bf16(v);
    case Storage::f32:
      break;
  }
  return v;
}

// Head h's (steps, dim) rows of a (steps, heads * dim) sample into float32 `out`.
void load_head(const Tensor& t, std::int64_t sample, int head, int heads, int dim,
               std::int64_t steps, float* out) {
  const std::int64_t row = static_cast<std::int64_t>(heads) * dim;
  const std::int64_t base = sample * steps * row + static_cast<std::int64_t>(head) * dim;
  with_storage(t.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
    for (std::int64_t i = 0; i < steps; ++i)
      for (int c = 0; c < dim; ++c) out[i * dim + c] = load<S>(t.data, base + i * row + c);
  });
}

// Row-major C (m x n, ldc) = op(A) op(B), float32, by oneDNN's sgemm (single-threaded inside
// the node's OpenMP region: oneDNN runs sequentially when called from a parallel region). A
// failure clears `ok` (nothing may be thrown out of an OpenMP region); the caller throws.
void gemm(char ta, char tb, std::int64_t m, std::int64_t n, std::int64_t k, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float* c, std::int64_t ldc,
          bool& ok) {
  if (m <= 0 || n <= 0) return;
  if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) != dnnl_success) {
    ok = false;
  }
}

// The score GEMMs run on blocks of query rows: a causal block of rows [r0, r1) needs the keys
// before r1 only, so the zero upper triangle is mostly skipped while each GEMM stays large.
constexpr std::int64_t kRowBlock = 32;

}  // namespace

AttentionNode::AttentionNode(int layer_index, const PlanNode& node, std::int64_t batch,
                             Storage storage)
    : batch_(batch),
      steps_(node.out_shape.front()),
      heads_(node.heads),
      key_dim_(node.key_dim),
      value_dim_(node.value_dim),
      causal_(node.causal),
      scale_(1.0f / std::sqrt(static_cast<float>(node.key_dim))) {
  layer = layer_index;
  label = "Attention";
  out_storage = storage;
}

std::size_t AttentionNode::reserve(Arena& arena) {
  const auto probs = static_cast<std::size_t>(batch_ * heads_ * steps_ * steps_);
  const auto grads =
      static_cast<std::size_t>(batch_ * steps_ * heads_ * (2 * key_dim_ + value_dim_));
  probs_id_ = arena.reserve(probs * sizeof(float), Purpose::activations);
  grads_id_ = arena.reserve(grads * sizeof(float), Purpose::workspace);
  return 0;
}

void AttentionNode::bind(const Arena& arena, const dnnl::memory&) {
  probs_ = arena.as<float>(probs_id_);
  grads_ = arena.as<float>(grads_id_);
}

void AttentionNode::forward(CpuContext&, const Tensor&, const Tensor&, Phase, std::uint64_t) {
  throw BackendError("attention: forward() of one input; the executor calls forward_inputs()");
}

void AttentionNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor&,
                             const Tensor*) {
  throw BackendError("attention: backward() of one input; the executor calls backward_input()");
}

void AttentionNode::forward_inputs(std::span<const Tensor* const> xs, const Tensor& y) {
  const Tensor &q = *xs[0], &k = *xs[1], &v = *xs[2];
  const std::int64_t s = steps_;
  const int kd = key_dim_, vd = value_dim_, heads = heads_;
  const Storage storage = y.storage;
  const std::int64_t units = batch_ * heads;
  const bool causal = causal_;
  const float scale = scale_;
  bool ok = true;
#pragma omp parallel reduction(&& : ok)
  {
    std::vector<float> qh(static_cast<std::size_t>(s * kd)), kh(qh.size()),
        vh(static_cast<std::size_t>(s * vd)), out(vh.size());
#pragma omp for schedule(static)
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t b = u / heads;
      const int h = static_cast<int>(u % heads);
      load_head(q, b, h, heads, kd, s, qh.data());
      load_head(k, b, h, heads, kd, s, kh.data());
      load_head(v, b, h, heads, vd, s, vh.data());
      float* probs = probs_ + u * s * s;
      for (std::int64_t r0 = 0; r0 < s; r0 += kRowBlock) {
        const std::int64_t r1 = std::min(s, r0 + kRowBlock);
        const std::int64_t keys = causal ? r1 : s;
        // The scores einsum's output (Q K^T), rounded to the layer's dtype row by row below.
        gemm('N', 'T', r1 - r0, keys, kd, qh.data() + r0 * kd, kd, kh.data(), kd, probs + r0 * s, s,
             ok);
        for (std::int64_t i = r0; i < r1; ++i) {
          float* row = probs + i * s;
          const std::int64_t n = causal ? i + 1 : s;  // the keys it attends to
          // engine/ops/attention.h's attention_softmax_row, over the attended keys only (the
          // masked ones' exp() is 0 there), with a vectorised exp.
          float m = kMaskedScore;
          for (std::int64_t j = 0; j < n; ++j) {
            row[j] = rounded(storage, row[j]) * scale;
            m = std::max(m, row[j]);
          }
          float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
          for (std::int64_t j = 0; j < n; ++j) {
            row[j] = exp_nonpositive(row[j] - m);
            sum += row[j];
          }
          for (std::int64_t j = 0; j < n; ++j) row[j] = rounded(storage, row[j] / sum);
          std::fill(row + n, row + s, 0.0f);
        }
        // The weighted values: rows [r0, r1) of P V, over the keys they attend to.
        gemm('N', 'N', r1 - r0, vd, keys, probs + r0 * s, s, vh.data(), vd, out.data() + r0 * vd,
             vd, ok);
      }
      with_storage(storage, [&](auto st) {
        constexpr Storage S = decltype(st)::value;
        for (std::int64_t i = 0; i < s; ++i) {
          const std::int64_t base = (b * s + i) * heads * vd + static_cast<std::int64_t>(h) * vd;
          for (int c = 0; c < vd; ++c) store<S>(y.data, base + c, out[i * vd + c]);
        }
      });
    }
  }
  if (!ok) throw BackendError("attention: oneDNN's sgemm failed (forward)");
}

void AttentionNode::backward_input(std::span<const Tensor* const> xs, const Tensor& dy, int i,
                                   const Tensor& dx) {
  const std::int64_t s = steps_;
  const int kd = key_dim_, vd = value_dim_, heads = heads_;
  const std::int64_t q_elements = batch_ * s * heads * kd;
  float* dq = grads_;
  float* dk = dq + q_elements;
  float* dv = dk + q_elements;
  if (i == 0) {
    const Tensor &q = *xs[0], &k = *xs[1], &v = *xs[2];
    const std::int64_t units = batch_ * heads;
    const bool causal = causal_;
    const float scale = scale_;
    const Storage storage = out_storage;
    bool ok = true;
#pragma omp parallel reduction(&& : ok)
    {
      std::vector<float> qh(static_cast<std::size_t>(s * kd)), kh(qh.size()),
          vh(static_cast<std::size_t>(s * vd)), doh(vh.size()), dqh(qh.size()), dkh(qh.size()),
          dvh(vh.size()), ds(static_cast<std::size_t>(s * s));
#pragma omp for schedule(static)
      for (std::int64_t u = 0; u < units; ++u) {
        const std::int64_t b = u / heads;
        const int h = static_cast<int>(u % heads);
        load_head(q, b, h, heads, kd, s, qh.data());
        load_head(k, b, h, heads, kd, s, kh.data());
        load_head(v, b, h, heads, vd, s, vh.data());
        load_head(dy, b, h, heads, vd, s, doh.data());
        const float* probs = probs_ + u * s * s;
        // dP = dO V^T, then the softmax's backward and the scale in place: dS, the gradient of
        // the unscaled scores (0 where masked). Both in the layer's dtype, as Keras's: dP is the
        // weighted values' einsum's gradient, dS reaches the scores' einsum through a cast.
        for (std::int64_t r0 = 0; r0 < s; r0 += kRowBlock) {
          const std::int64_t r1 = std::min(s, r0 + kRowBlock);
          gemm('N', 'T', r1 - r0, causal ? r1 : s, vd, doh.data() + r0 * vd, vd, vh.data(), vd,
               ds.data() + r0 * s, s, ok);
          for (std::int64_t r = r0; r < r1; ++r) {
            const float* p = probs + r * s;
            float* d = ds.data() + r * s;
            const std::int64_t n = causal ? r + 1 : s;
            for (std::int64_t j = 0; j < n; ++j) d[j] = rounded(storage, d[j]);
            float dot_pd = 0.0f;
#pragma omp simd reduction(+ : dot_pd)
            for (std::int64_t j = 0; j < n; ++j) dot_pd += p[j] * d[j];
            for (std::int64_t j = 0; j < n; ++j) {
              d[j] = rounded(storage, p[j] * (d[j] - dot_pd) * scale);
            }
            std::fill(d + n, d + s, 0.0f);
          }
          // dQ's rows [r0, r1) = dS K over the keys they attend to.
          gemm('N', 'N', r1 - r0, kd, causal ? r1 : s, ds.data() + r0 * s, s, kh.data(), kd,
               dqh.data() + r0 * kd, kd, ok);
        }
        // dV = P^T dO and dK = dS^T Q, by blocks of key rows [c0, c1): causal, only the queries
        // from c0 on attend to them.
        for (std::int64_t c0 = 0; c0 < s; c0 += kRowBlock) {
          const std::int64_t c1 = std::min(s, c0 + kRowBlock);
          const std::int64_t first = causal ? c0 : 0;
          gemm('T', 'N', c1 - c0, vd, s - first, probs + first * s + c0, s, doh.data() + first * vd,
               vd, dvh.data() + c0 * vd, vd, ok);
          gemm('T', 'N', c1 - c0, kd, s - first, ds.data() + first * s + c0, s,
               qh.data() + first * kd, kd, dkh.data() + c0 * kd, kd, ok);
        }
        // Into the (batch, steps, heads * dim) float32 gradients.
        for (std::int64_t r = 0; r < s; ++r) {
          const std::int64_t qbase = (b * s + r) * heads * kd + static_cast<std::int64_t>(h) * kd;
          const std::int64_t vbase = (b * s + r) * heads * vd + static_cast<std::int64_t>(h) * vd;
          std::copy_n(dqh.data() + r * kd, kd, dq + qbase);
          std::copy_n(dkh.data() + r * kd, kd, dk + qbase);
          std::copy_n(dvh.data() + r * vd, vd, dv + vbase);
        }
      }
    }
    if (!ok) throw BackendError("attention: oneDNN's sgemm failed (backward)");
  }
  const float* src = i == 0 ? dq : i == 1 ? dk : dv;
  convert(src, Storage::f32, dx.data, dx.storage, dx.elements());
}

}  // namespace mixlab::cpu
