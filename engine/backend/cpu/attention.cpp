#include "engine/backend/cpu/attention.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/attention.h"

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

// The same rows transposed: (dim, steps), so that a row's dot products with every step run as
// one vectorised loop over the steps (each still summed over the dimension in order).
void load_head_transposed(const Tensor& t, std::int64_t sample, int head, int heads, int dim,
                          std::int64_t steps, float* out) {
  const std::int64_t row = static_cast<std::int64_t>(heads) * dim;
  const std::int64_t base = sample * steps * row + static_cast<std::int64_t>(head) * dim;
  with_storage(t.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
    for (std::int64_t i = 0; i < steps; ++i)
      for (int c = 0; c < dim; ++c) out[c * steps + i] = load<S>(t.data, base + i * row + c);
  });
}

// row[j] = sum over c of a[c] * t[c][j] for j < n, of (dim, steps) t (n < steps: a causal row's
// keys, the later ones masked anyway).
void dots(const float* a, const float* t, int dim, std::int64_t steps, std::int64_t n, float* row) {
  std::fill(row, row + n, 0.0f);
  for (int c = 0; c < dim; ++c) {
    const float x = a[c];
    const float* tc = t + c * steps;
    for (std::int64_t j = 0; j < n; ++j) row[j] += x * tc[j];
  }
}

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
#pragma omp parallel
  {
    std::vector<float> qh(static_cast<std::size_t>(s * kd)), kh(qh.size()),
        vh(static_cast<std::size_t>(s * vd)), out(static_cast<std::size_t>(vd));
#pragma omp for schedule(static)
    for (std::int64_t u = 0; u < units; ++u) {
      const std::int64_t b = u / heads;
      const int h = static_cast<int>(u % heads);
      load_head(q, b, h, heads, kd, s, qh.data());
      load_head_transposed(k, b, h, heads, kd, s, kh.data());
      load_head(v, b, h, heads, vd, s, vh.data());
      float* probs = probs_ + u * s * s;
      for (std::int64_t i = 0; i < s; ++i) {
        float* row = probs + i * s;
        const std::int64_t n = causal_ ? i + 1 : s;  // the keys it attends to
        dots(qh.data() + i * kd, kh.data(), kd, s, n, row);
        // The scores einsum's output, in the layer's dtype (the masked ones are set below).
        for (std::int64_t j = 0; j < n; ++j) row[j] = rounded(storage, row[j]);
        attention_softmax_row(row, static_cast<int>(s), static_cast<int>(i), scale_, causal_);
        for (std::int64_t j = 0; j < s; ++j) row[j] = rounded(storage, row[j]);
        std::fill(out.begin(), out.end(), 0.0f);
        for (std::int64_t j = 0; j < n; ++j) {
          const float p = row[j];
          if (p == 0.0f) continue;
          const float* vj = vh.data() + j * vd;
          for (int c = 0; c < vd; ++c) out[c] += p * vj[c];
        }
        const std::int64_t base = (b * s + i) * heads * vd + static_cast<std::int64_t>(h) * vd;
        with_storage(storage, [&](auto st) {
          constexpr Storage S = decltype(st)::value;
          for (int c = 0; c < vd; ++c) store<S>(y.data, base + c, out[c]);
        });
      }
    }
  }
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
#pragma omp parallel
    {
      std::vector<float> qh(static_cast<std::size_t>(s * kd)), kh(qh.size()),
          vh(static_cast<std::size_t>(s * vd)), doh(vh.size()), dqh(qh.size()), dkh(qh.size()),
          dvh(vh.size()), dp(static_cast<std::size_t>(s)), vt(vh.size());
#pragma omp for schedule(static)
      for (std::int64_t u = 0; u < units; ++u) {
        const std::int64_t b = u / heads;
        const int h = static_cast<int>(u % heads);
        load_head(q, b, h, heads, kd, s, qh.data());
        load_head(k, b, h, heads, kd, s, kh.data());
        load_head(v, b, h, heads, vd, s, vh.data());
        load_head_transposed(v, b, h, heads, vd, s, vt.data());
        load_head(dy, b, h, heads, vd, s, doh.data());
        std::fill(dqh.begin(), dqh.end(), 0.0f);
        std::fill(dkh.begin(), dkh.end(), 0.0f);
        std::fill(dvh.begin(), dvh.end(), 0.0f);
        const float* probs = probs_ + u * s * s;
        for (std::int64_t r = 0; r < s; ++r) {
          const float* p = probs + r * s;
          const float* dor = doh.data() + r * vd;
          // dP = dO v^T; dV += P^T dO; softmax backward; the scale into the unscaled scores.
          const std::int64_t n = causal_ ? r + 1 : s;  // the weights that are not 0
          dots(dor, vt.data(), vd, s, n, dp.data());
          float dot_pd = 0.0f;
          for (std::int64_t j = 0; j < n; ++j) {
            if (p[j] == 0.0f) continue;
            float* dvj = dvh.data() + j * vd;
            for (int c = 0; c < vd; ++c) dvj[c] += p[j] * dor[c];
            dot_pd += p[j] * dp[static_cast<std::size_t>(j)];
          }
          const float* qr = qh.data() + r * kd;
          float* dqr = dqh.data() + r * kd;
          for (std::int64_t j = 0; j < n; ++j) {
            if (p[j] == 0.0f) continue;
            const float ds = p[j] * (dp[static_cast<std::size_t>(j)] - dot_pd) * scale_;
            const float* kj = kh.data() + j * kd;
            float* dkj = dkh.data() + j * kd;
            for (int c = 0; c < kd; ++c) {
              dqr[c] += ds * kj[c];
              dkj[c] += ds * qr[c];
            }
          }
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
  }
  const float* src = i == 0 ? dq : i == 1 ? dk : dv;
  convert(src, Storage::f32, dx.data, dx.storage, dx.elements());
}

}  // namespace mixlab::cpu
