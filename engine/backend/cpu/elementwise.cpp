#include "engine/backend/cpu/elementwise.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"
#include "engine/ops/loss.h"

namespace mixlab::cpu {

namespace {

// y[i] = f(x[i], i) with x read in its storage and y written in its own. The loops are
// instantiated per storage pair (and per activation by the callers) so that they vectorise.
template <class F>
void map1(const Tensor& x, const Tensor& y, F f) {
  const std::int64_t n = y.elements();
  const void* const in = x.data;
  void* const out = y.data;
  with_storage(x.storage, [&](auto si) {
    with_storage(y.storage, [&](auto so) {
#pragma omp parallel for simd schedule(static)
      for (std::int64_t i = 0; i < n; ++i) store<so()>(out, i, f(load<si()>(in, i), i));
    });
  });
}

// out[i] = f(a[i], b[i]) with a and b in their storages (b may be a's, or another).
template <class F>
void map2(const Tensor& a, const Tensor& b, const Tensor& out, F f) {
  const std::int64_t n = out.elements();
  const void* const pa = a.data;
  const void* const pb = b.data;
  void* const po = out.data;
  with_storage(a.storage, [&](auto sa) {
    with_storage(b.storage, [&](auto sb) {
      with_storage(out.storage, [&](auto so) {
#pragma omp parallel for simd schedule(static)
        for (std::int64_t i = 0; i < n; ++i) {
          store<so()>(po, i, f(load<sa()>(pa, i), load<sb()>(pb, i)));
        }
      });
    });
  });
}

}  // namespace

CastNode::CastNode(int layer_index, Storage to) {
  layer = layer_index;
  label = "Cast";
  out_storage = to;
}

void CastNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  convert(x.data, x.storage, y.data, y.storage, y.elements());
}

void CastNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor& dy,
                        const Tensor* dx) {
  if (dx) convert(dy.data, dy.storage, dx->data, dx->storage, dx->elements());
}

ActivationNode::ActivationNode(int layer_index, ActivationFn fn, std::int64_t row_length,
                               std::int64_t elements, Storage storage, const ReluArgs& relu)
    : fn_(fn), relu_(relu), row_length_(row_length), elements_(elements) {
  layer = layer_index;
  label = std::string("Activation(") + std::string(to_string(fn)) + ")";
  out_storage = storage;
}

std::size_t ActivationNode::reserve(Arena& arena) {
  if (fn_ == ActivationFn::softmax) {
    for (auto& id : stage_ids_) {
      id = arena.reserve(static_cast<std::size_t>(elements_) * sizeof(float), Purpose::workspace);
    }
  }
  return 0;
}

void ActivationNode::bind(const Arena& arena, const dnnl::memory&) {
  if (fn_ == ActivationFn::softmax) {
    for (int i = 0; i < 2; ++i) stage_[i] = arena.as<float>(stage_ids_[i]);
  }
}

void ActivationNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  if (fn_ != ActivationFn::softmax) {
    const ReluArgs relu = relu_;
    // Keras's ReLU layer with arguments takes them at run time; every other function (relu at
    // its defaults among them) has its constants folded into a loop of plain selects.
    const bool with_args = fn_ == ActivationFn::relu && relu != ReluArgs{};
    with_elementwise_activation(fn_, [&](auto fn) {
      constexpr ActivationFn kFn = decltype(fn)::value;
      if (with_args) {
        map1(x, y, [relu](float v, std::int64_t) { return activation_forward(kFn, v, relu); });
      } else {
        map1(x, y, [](float v, std::int64_t) { return activation_forward(kFn, v); });
      }
    });
    return;
  }
  const std::int64_t k = row_length_;
  const std::int64_t rows = y.elements() / k;
  float* in = stage_[0];
  float* out = stage_[1];
  convert(x.data, x.storage, in, Storage::f32, y.elements());
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) softmax_row(in + r * k, static_cast<int>(k), out + r * k);
  convert(out, Storage::f32, y.data, y.storage, y.elements());
}

void ActivationNode::backward(CpuContext&, const Tensor& x, const Tensor& y, const Tensor& dy,
                              const Tensor* dx) {
  if (!dx) return;
  if (fn_ != ActivationFn::softmax) {
    const ReluArgs relu = relu_;
    const bool with_args = fn_ == ActivationFn::relu && relu != ReluArgs{};
    with_elementwise_activation(fn_, [&](auto fn) {
      constexpr ActivationFn kFn = decltype(fn)::value;
      if constexpr (activation_backward_needs_input(kFn)) {
        map2(x, dy, *dx, [](float xv, float g) { return activation_backward(kFn, xv, 0.0f, g); });
      } else if (with_args) {
        map2(y, dy, *dx,
             [relu](float yv, float g) { return activation_backward(kFn, 0.0f, yv, g, relu); });
      } else {
        map2(y, dy, *dx, [](float yv, float g) { return activation_backward(kFn, 0.0f, yv, g); });
      }
    });
    return;
  }
  const std::int64_t k = row_length_;
  const std::int64_t rows = y.elements() / k;
  float* ys = stage_[0];
  float* gs = stage_[1];
  convert(y.data, y.storage, ys, Storage::f32, y.elements());
  convert(dy.data, dy.storage, gs, Storage::f32, y.elements());
  // dx = y * (dy - <dy, y>), written over the staged gradient row by row.
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < rows; ++r) {
    softmax_backward_row(ys + r * k, gs + r * k, static_cast<int>(k), gs + r * k);
  }
  convert(gs, Storage::f32, dx->data, dx->storage, dx->elements());
}

RescalingNode::RescalingNode(int layer_index, double scale, double offset, Storage storage)
    : scale_(static_cast<float>(scale)), offset_(static_cast<float>(offset)) {
  layer = layer_index;
  label = "Rescaling";
  out_storage = storage;
}

void RescalingNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  const float scale = scale_, offset = offset_;
  map1(x, y, [=](float v, std::int64_t) { return v * scale + offset; });
}

void RescalingNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor& dy,
                             const Tensor* dx) {
  if (!dx) return;
  const float scale = scale_;
  map1(dy, *dx, [=](float g, std::int64_t) { return g * scale; });
}

NormalizationNode::NormalizationNode(int layer_index, const LayerSpec& layer, const LayerInfo& info,
                                     DType dtype, Storage storage)
    : constants_(
          normalization_constants(layer.mean, layer.variance, info.output_shape.back(), dtype)) {
  this->layer = layer_index;
  label = "Normalization";
  out_storage = storage;
}

void NormalizationNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase,
                                std::uint64_t) {
  const float* mean = constants_.mean.data();
  const float* divisor = constants_.divisor.data();
  const auto channels = static_cast<std::int64_t>(constants_.mean.size());
  map1(x, y, [=](float v, std::int64_t i) {
    const std::int64_t c = i % channels;
    return (v - mean[c]) / divisor[c];
  });
}

void NormalizationNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor& dy,
                                 const Tensor* dx) {
  if (!dx) return;
  const float* divisor = constants_.divisor.data();
  const auto channels = static_cast<std::int64_t>(constants_.divisor.size());
  map1(dy, *dx, [=](float g, std::int64_t i) { return g / divisor[i % channels]; });
}

DropoutNode::DropoutNode(int layer_index, double rate, Storage storage,
                         std::vector<std::int64_t> noise_shape)
    : rate_(rate), noise_shape_(std::move(noise_shape)) {
  layer = layer_index;
  label = "Dropout";
  out_storage = storage;
}

void DropoutNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
                          std::uint64_t step) {
  trained_ = phase == Phase::train && rate_ > 0.0;
  step_ = step;
  if (!trained_) {
    map1(x, y, [](float v, std::int64_t) { return v; });
    return;
  }
  const DropoutMask mask = make_dropout_mask(rate_, ctx.seed, layer, step);
  const Broadcast noise = dropout_noise(noise_shape_, x.dims);
  map1(x, y, [mask, noise](float v, std::int64_t i) {
    return v * mask.factor(static_cast<std::uint64_t>(noise.input_index(i)));
  });
}

void DropoutNode::backward(CpuContext& ctx, const Tensor&, const Tensor&, const Tensor& dy,
                           const Tensor* dx) {
  if (!dx) return;
  if (!trained_) {
    map1(dy, *dx, [](float g, std::int64_t) { return g; });
    return;
  }
  const DropoutMask mask = make_dropout_mask(rate_, ctx.seed, layer, step_);
  const Broadcast noise = dropout_noise(noise_shape_, dy.dims);
  map1(dy, *dx, [mask, noise](float g, std::int64_t i) {
    return g * mask.factor(static_cast<std::uint64_t>(noise.input_index(i)));
  });
}

ZeroPaddingNode::ZeroPaddingNode(int layer_index, const LayerInfo& info, Storage storage)
    : h_(info.input_shape[0]),
      w_(info.input_shape[1]),
      c_(info.input_shape[2]),
      out_h_(info.output_shape[0]),
      out_w_(info.output_shape[1]),
      top_(info.pad_top),
      left_(info.pad_left) {
  layer = layer_index;
  label = "ZeroPadding2D";
  out_storage = storage;
}

template <class F>
void ZeroPaddingNode::rows(std::int64_t batch, F f) const {
#pragma omp parallel for schedule(static)
  for (std::int64_t r = 0; r < batch * h_; ++r) {
    const std::int64_t n = r / h_, i = r % h_;
    f(r * w_ * c_, ((n * out_h_ + i + top_) * out_w_ + left_) * c_, w_ * c_);
  }
}

void ZeroPaddingNode::forward(CpuContext&, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  with_storage(y.storage, [&](auto so) {
    const std::int64_t n = y.elements();
    void* out = y.data;
#pragma omp parallel for simd schedule(static)
    for (std::int64_t i = 0; i < n; ++i) store<so()>(out, i, 0.0f);
    with_storage(x.storage, [&](auto si) {
      const void* in = x.data;
      rows(x.dims.front(), [&](std::int64_t from, std::int64_t to, std::int64_t count) {
        for (std::int64_t j = 0; j < count; ++j) store<so()>(out, to + j, load<si()>(in, from + j));
      });
    });
  });
}

void ZeroPaddingNode::backward(CpuContext&, const Tensor&, const Tensor&, const Tensor& dy,
                               const Tensor* dx) {
  if (!dx) return;
  with_storage(dy.storage, [&](auto sg) {
    with_storage(dx->storage, [&](auto so) {
      const void* g = dy.data;
      void* out = dx->data;
      rows(dx->dims.front(), [&](std::int64_t to, std::int64_t from, std::int64_t count) {
        for (std::int64_t j = 0; j < count; ++j) store<so()>(out, to + j, load<sg()>(g, from + j));
      });
    });
  });
}

FlattenNode::FlattenNode(int layer_index, Storage storage) {
  layer = layer_index;
  label = "Flatten";
  out_storage = storage;
}

double elementwise_add_seconds(Storage storage, std::int64_t n) {
  std::vector<std::byte> buffers(3 * static_cast<std::size_t>(n) * storage_bytes(storage));
  std::byte* base = buffers.data();
  const std::size_t stride = static_cast<std::size_t>(n) * storage_bytes(storage);
  const Tensor a{base, storage, {n}}, b{base + stride, storage, {n}},
      y{base + 2 * stride, storage, {n}};
  const auto add = [&] { map2(a, b, y, [](float u, float v) { return u + v; }); };
  add();  // first touch
  double best = 1e30;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) add();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 4);
  }
  return best;
}

}  // namespace mixlab::cpu
