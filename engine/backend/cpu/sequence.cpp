#include "engine/backend/cpu/sequence.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "engine/ops/embedding.h"

namespace mixlab::cpu {

namespace {

// A float32 (rows, width) table in Keras's layout: master, gradient and copy alike.
void describe_table(ParamSlot& slot, int layer, ParamKind kind, std::int64_t rows,
                    std::int64_t width) {
  const dnnl::memory::desc md({rows, width}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::ab);
  slot.layer = layer;
  slot.kind = kind;
  slot.keras_desc = slot.grad_desc = slot.master_desc = slot.copy_desc = md;
  slot.grad_storage = slot.copy_storage = Storage::f32;
  slot.copy_mode = CopyMode::master;
}

void describe_vector(ParamSlot& slot, int layer, ParamKind kind, std::int64_t n) {
  const dnnl::memory::desc md({n}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a);
  slot.layer = layer;
  slot.kind = kind;
  slot.keras_desc = slot.grad_desc = slot.master_desc = slot.copy_desc = md;
  slot.grad_storage = slot.copy_storage = Storage::f32;
  slot.copy_mode = CopyMode::master;
}

float* data_of(const dnnl::memory& m) {
  return static_cast<float*>(m.get_data_handle());
}

// Feature columns per OpenMP task of a scatter: each task owns its columns of every row, so
// tokens that repeat add into a row without a race, in the same order every run.
constexpr std::int64_t kColumnBlock = 16;

}  // namespace

EmbeddingNode::EmbeddingNode(const LayerSpec& spec, int layer_index, Storage storage)
    : vocabulary_(spec.input_dim), width_(spec.output_dim) {
  layer = layer_index;
  label = "Embedding";
  out_storage = storage;
  describe_table(table_, layer, ParamKind::embeddings, vocabulary_, width_);
}

void EmbeddingNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  const auto* ids = static_cast<const float*>(x.data);  // the batch: float32
  const float* table = data_of(table_.master);
  const std::int64_t positions = x.elements();
  const std::int64_t d = width_;
  const std::int64_t vocabulary = vocabulary_;
  with_storage(y.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
#pragma omp parallel for schedule(static)
    for (std::int64_t p = 0; p < positions; ++p) {
      const float* row = table + embedding_row(ids[p], vocabulary) * d;
      for (std::int64_t j = 0; j < d; ++j) store<S>(y.data, p * d + j, row[j]);
    }
  });
}

void EmbeddingNode::backward(CpuContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                             const Tensor*) {
  const auto* ids = static_cast<const float*>(x.data);
  float* grad = data_of(table_.grad);
  const std::int64_t positions = x.elements();
  const std::int64_t d = width_;
  const std::int64_t vocabulary = vocabulary_;
  std::memset(grad, 0, static_cast<std::size_t>(vocabulary * d) * sizeof(float));
  const std::int64_t blocks = (d + kColumnBlock - 1) / kColumnBlock;
  with_storage(dy.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t j0 = b * kColumnBlock;
      const std::int64_t j1 = std::min(d, j0 + kColumnBlock);
      for (std::int64_t p = 0; p < positions; ++p) {
        float* row = grad + embedding_row(ids[p], vocabulary) * d;
        for (std::int64_t j = j0; j < j1; ++j) row[j] += load<S>(dy.data, p * d + j);
      }
    }
  });
}

PositionEmbeddingNode::PositionEmbeddingNode(const LayerSpec& spec, const LayerInfo& info,
                                             Storage storage)
    : positions_(spec.sequence_length), width_(info.input_shape.back()) {
  layer = info.index;
  label = "PositionEmbedding";
  out_storage = storage;
  describe_table(table_, layer, ParamKind::embeddings, positions_, width_);
  table_.fan_in = positions_;  // keras_hub's glorot_uniform
  table_.fan_out = width_;
}

void PositionEmbeddingNode::forward(CpuContext&, const Tensor&, const Tensor& y, Phase,
                                    std::uint64_t) {
  const float* table = data_of(table_.master);
  const std::int64_t per_sample = y.elements() / y.dims.front();  // steps * features
  const std::int64_t samples = y.dims.front();
  with_storage(y.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
#pragma omp parallel for schedule(static)
    for (std::int64_t b = 0; b < samples; ++b) {
      for (std::int64_t i = 0; i < per_sample; ++i) store<S>(y.data, b * per_sample + i, table[i]);
    }
  });
}

void PositionEmbeddingNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor& dy,
                                     const Tensor*) {
  float* grad = data_of(table_.grad);
  const std::int64_t samples = dy.dims.front();
  const std::int64_t per_sample = dy.elements() / samples;
  // Rows beyond the input's steps get no gradient.
  std::memset(grad + per_sample, 0,
              static_cast<std::size_t>(positions_ * width_ - per_sample) * sizeof(float));
  with_storage(dy.storage, [&](auto s) {
    constexpr Storage S = decltype(s)::value;
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < per_sample; ++i) {
      float sum = 0.0f;
      for (std::int64_t b = 0; b < samples; ++b) sum += load<S>(dy.data, b * per_sample + i);
      grad[i] = sum;
    }
  });
}

LayerNormNode::LayerNormNode(const LayerSpec& spec, const LayerInfo& info, std::int64_t batch,
                             Storage storage)
    : rows_(batch * num_elements(info.input_shape) / info.input_shape.back()),
      width_(info.input_shape.back()) {
  layer = info.index;
  label = "LayerNormalization";
  out_storage = storage;
  args_.epsilon = static_cast<float>(spec.epsilon);
  args_.has_gamma = spec.scale_gamma;
  args_.has_beta = spec.center;
  describe_vector(gamma_, layer, ParamKind::gamma, width_);
  describe_vector(beta_, layer, ParamKind::beta, width_);
}

std::vector<ParamSlot*> LayerNormNode::params() {
  std::vector<ParamSlot*> out;  // Keras's order
  if (args_.has_gamma) out.push_back(&gamma_);
  if (args_.has_beta) out.push_back(&beta_);
  return out;
}

std::size_t LayerNormNode::reserve(Arena& arena) {
  threads_ = std::max(1, omp_get_max_threads());
  stats_id_ = arena.reserve(static_cast<std::size_t>(rows_) * sizeof(RowStats) +
                                static_cast<std::size_t>(threads_ * 2 * width_) * sizeof(float),
                            Purpose::workspace);
  return 0;
}

void LayerNormNode::bind(const Arena& arena, const dnnl::memory&) {
  stats_ = reinterpret_cast<RowStats*>(arena.ptr(stats_id_));
  partials_ = reinterpret_cast<float*>(stats_ + rows_);
}

// The loops as plain function templates per storage: no lambda inside an OpenMP region (clang
// 14 fails to compile one that captures from an enclosing generic lambda).
template <Storage S>
struct RowReader {
  const void* data;
  std::int64_t base;
  float operator()(int j) const { return load<S>(data, base + j); }
};

template <Storage SX, Storage SY>
void layer_norm_rows(const void* x, void* y, std::int64_t rows, std::int64_t d, float eps,
                     const float* gamma, const float* beta, RowStats* stats) {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    const RowReader<SX> at{x, r * d};
    const RowStats st = layer_norm_stats(at, static_cast<int>(d), eps);
    stats[r] = st;
    for (std::int64_t j = 0; j < d; ++j) {
      const float g = gamma ? gamma[j] : 1.0f;
      const float b = beta ? beta[j] : 0.0f;
      store<SY>(y, r * d + j, layer_norm_value(at(static_cast<int>(j)), st, g, b));
    }
  }
}

// dx (when given) per row; each thread's dgamma and dbeta sums into its part of `partials`.
template <Storage SX, Storage SD, Storage SO>
void layer_norm_backward_rows(const void* x, const void* dy, void* dx, std::int64_t rows,
                              std::int64_t d, const float* gamma, const RowStats* stats,
                              float* partials, int threads) {
#pragma omp parallel num_threads(threads)
  {
    float* dgamma = partials + omp_get_thread_num() * 2 * d;
    float* dbeta = dgamma + d;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      const std::int64_t base = r * d;
      const RowStats st = stats[r];
      float mean_g = 0.0f, mean_gx = 0.0f;
      for (std::int64_t j = 0; j < d; ++j) {
        const float g = load<SD>(dy, base + j);
        const float xhat = (load<SX>(x, base + j) - st.mean) * st.inv_std;
        dgamma[j] += g * xhat;
        dbeta[j] += g;
        const float gg = g * (gamma ? gamma[j] : 1.0f);
        mean_g += gg;
        mean_gx += gg * xhat;
      }
      if (dx == nullptr) continue;
      mean_g /= static_cast<float>(d);
      mean_gx /= static_cast<float>(d);
      for (std::int64_t j = 0; j < d; ++j) {
        const float g = load<SD>(dy, base + j) * (gamma ? gamma[j] : 1.0f);
        const float xhat = (load<SX>(x, base + j) - st.mean) * st.inv_std;
        store<SO>(dx, base + j, st.inv_std * (g - mean_g - xhat * mean_gx));
      }
    }
  }
}

void LayerNormNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  const float* gamma = args_.has_gamma ? data_of(gamma_.master) : nullptr;
  const float* beta = args_.has_beta ? data_of(beta_.master) : nullptr;
  with_storage(x.storage, [&](auto sx) {
    with_storage(y.storage, [&](auto sy) {
      layer_norm_rows<decltype(sx)::value, decltype(sy)::value>(
          x.data, y.data, rows_, width_, args_.epsilon, gamma, beta, stats_);
    });
  });
}

void LayerNormNode::backward(CpuContext&, const Tensor& x, const Tensor&, const Tensor& dy,
                             const Tensor* dx) {
  const float* gamma = args_.has_gamma ? data_of(gamma_.master) : nullptr;
  const std::int64_t d = width_;
  std::fill(partials_, partials_ + threads_ * 2 * d, 0.0f);
  // Without dx the output storage is unused: the input's stands in.
  const Storage out = dx ? dx->storage : x.storage;
  with_storage(x.storage, [&](auto sx) {
    with_storage(dy.storage, [&](auto sd) {
      with_storage(out, [&](auto so) {
        layer_norm_backward_rows<decltype(sx)::value, decltype(sd)::value, decltype(so)::value>(
            x.data, dy.data, dx ? dx->data : nullptr, rows_, d, gamma, stats_, partials_,
            threads_);
      });
    });
  });
  // The threads' sums, in thread order (the same every run for a fixed thread count).
  float* dgamma = args_.has_gamma ? data_of(gamma_.grad) : nullptr;
  float* dbeta = args_.has_beta ? data_of(beta_.grad) : nullptr;
  for (std::int64_t j = 0; j < d; ++j) {
    float sg = 0.0f, sb = 0.0f;
    for (int t = 0; t < threads_; ++t) {
      sg += partials_[t * 2 * d + j];
      sb += partials_[t * 2 * d + d + j];
    }
    if (dgamma) dgamma[j] = sg;
    if (dbeta) dbeta[j] = sb;
  }
}

}  // namespace mixlab::cpu
