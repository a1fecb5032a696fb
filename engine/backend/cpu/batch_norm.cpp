#include "engine/backend/cpu/batch_norm.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "engine/backend/cpu/dnnl_check.h"
#include "engine/core/error.h"

namespace mixlab::cpu {

namespace {

void describe_vector(ParamSlot& slot, ParamKind kind, std::int64_t channels) {
  const dnnl::memory::desc md({channels}, dnnl::memory::data_type::f32,
                              dnnl::memory::format_tag::a);
  slot.kind = kind;
  slot.keras_desc = slot.grad_desc = slot.master_desc = slot.copy_desc = md;
  slot.grad_storage = slot.copy_storage = Storage::f32;
  slot.copy_mode = CopyMode::master;  // float32 statistics and affine transform
}

const float* data_of(const ParamSlot& slot) {
  return static_cast<const float*>(slot.master.get_data_handle());
}

}  // namespace

BatchNormNode::BatchNormNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info,
                             std::int64_t batch, Storage storage)
    : channels_(info.input_shape.back()), batch_(batch), storage_(storage) {
  layer = info.index;
  label = "BatchNormalization";
  out_storage = storage;
  args_.momentum = static_cast<float>(spec.momentum);
  args_.epsilon = static_cast<float>(spec.epsilon);
  args_.has_gamma = spec.scale_gamma;
  args_.has_beta = spec.center;
  for (ParamSlot* s : {&gamma_, &beta_, &moving_mean_, &moving_variance_}) s->layer = layer;
  describe_vector(gamma_, ParamKind::gamma, channels_);
  describe_vector(beta_, ParamKind::beta, channels_);
  describe_vector(moving_mean_, ParamKind::moving_mean, channels_);
  describe_vector(moving_variance_, ParamKind::moving_variance, channels_);

  onednn_ = storage == Storage::f32 || storage == Storage::bf16;
  if (!onednn_) return;
  // Images as NHWC (oneDNN's jitted channels-last kernels; as (rows, channels) it picks a
  // reference one, 25 to 100 times slower on resnet20's layers), features as (batch, channels).
  const Shape& in = info.input_shape;
  const dnnl::memory::desc data =
      in.size() == 3 ? dnnl::memory::desc({batch, channels_, in[0], in[1]}, dnnl_type(storage),
                                          dnnl::memory::format_tag::nhwc)
                     : dnnl::memory::desc({batch * num_elements(in) / channels_, channels_},
                                          dnnl_type(storage), dnnl::memory::format_tag::nc);
  const auto attr = scratchpad_attr();
  const float eps = args_.epsilon;
  train_pd_ = DNNL_CHECK(dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, eps,
                                              flags()),
      attr, ctx.engine));
  infer_pd_ = DNNL_CHECK(dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(
          dnnl::prop_kind::forward_inference, data, eps,
          flags() | dnnl::normalization_flags::use_global_stats),
      attr, ctx.engine));
  const bool affine = args_.has_gamma || args_.has_beta;
  bwd_pd_ = DNNL_CHECK(dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(
          affine ? dnnl::prop_kind::backward : dnnl::prop_kind::backward_data, data, data, eps,
          flags()),
      attr, ctx.engine, train_pd_));
  train_ = dnnl::batch_normalization_forward(train_pd_);
  infer_ = dnnl::batch_normalization_forward(infer_pd_);
  bwd_ = dnnl::batch_normalization_backward(bwd_pd_);
}

dnnl::normalization_flags BatchNormNode::flags() const {
  auto f = dnnl::normalization_flags::none;
  if (args_.has_gamma) f |= dnnl::normalization_flags::use_scale;
  if (args_.has_beta) f |= dnnl::normalization_flags::use_shift;
  return f;
}

std::vector<ParamSlot*> BatchNormNode::params() {
  std::vector<ParamSlot*> out;  // Keras's order
  if (args_.has_gamma) out.push_back(&gamma_);
  if (args_.has_beta) out.push_back(&beta_);
  out.push_back(&moving_mean_);
  out.push_back(&moving_variance_);
  return out;
}

std::size_t BatchNormNode::reserve(Arena& arena) {
  stats_id_ =
      arena.reserve(static_cast<std::size_t>(channels_) * (5 * sizeof(float) + 2 * sizeof(double)),
                    Purpose::workspace);
  if (!onednn_) return 0;
  return std::max({train_pd_.scratchpad_desc().get_size(), infer_pd_.scratchpad_desc().get_size(),
                   bwd_pd_.scratchpad_desc().get_size()});
}

void BatchNormNode::bind(const Arena& arena, const dnnl::memory& scratchpad) {
  auto* base = arena.as<double>(stats_id_);
  sums_ = base;
  auto* f = reinterpret_cast<float*>(base + 2 * channels_);
  mean_ = f;
  inv_std_ = f + channels_;
  a_ = f + 2 * channels_;
  b_ = f + 3 * channels_;
  variance_ = f + 4 * channels_;
  if (!onednn_) return;
  const auto& eng = train_pd_.get_engine();
  src_ = dnnl::memory(train_pd_.src_desc(), eng, nullptr);
  dst_ = dnnl::memory(train_pd_.dst_desc(), eng, nullptr);
  diff_dst_ = dnnl::memory(bwd_pd_.diff_dst_desc(), eng, nullptr);
  diff_src_ = dnnl::memory(bwd_pd_.diff_src_desc(), eng, nullptr);
  mean_mem_ = dnnl::memory(train_pd_.mean_desc(), eng, mean_);
  variance_mem_ = dnnl::memory(train_pd_.variance_desc(), eng, variance_);
  scratchpad_ = scratchpad;
}

bool BatchNormNode::onednn_applies(const Tensor& x, const Tensor& y,
                                   std::int64_t real_samples) const {
  return onednn_ && x.storage == storage_ && y.storage == storage_ && x.dims.front() == batch_ &&
         (real_samples <= 0 || real_samples >= batch_);
}

void BatchNormNode::onednn_forward(CpuContext& ctx, const Tensor& x, const Tensor& y) {
  src_.set_data_handle(x.data);
  dst_.set_data_handle(y.data);
  ArgMap args{{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}, {DNNL_ARG_SCRATCHPAD, scratchpad_}};
  if (args_.has_gamma) args[DNNL_ARG_SCALE] = gamma_.master;
  if (args_.has_beta) args[DNNL_ARG_SHIFT] = beta_.master;
  if (trained_) {
    args[DNNL_ARG_MEAN] = mean_mem_;
    args[DNNL_ARG_VARIANCE] = variance_mem_;
    execute(ctx, train_, args, label, "forward");
    auto* moving_mean = static_cast<float*>(moving_mean_.master.get_data_handle());
    auto* moving_var = static_cast<float*>(moving_variance_.master.get_data_handle());
    for (std::int64_t k = 0; k < channels_; ++k) {
      inv_std_[k] = channel_affine(mean_[k], variance_[k], 1.0f, 0.0f, args_.epsilon).inv_std;
      moving_mean[k] = moving_update(moving_mean[k], mean_[k], args_.momentum);
      moving_var[k] = moving_update(moving_var[k], variance_[k], args_.momentum);
    }
  } else {
    args[DNNL_ARG_MEAN] = moving_mean_.master;
    args[DNNL_ARG_VARIANCE] = moving_variance_.master;
    execute(ctx, infer_, args, label, "forward");
  }
}

void BatchNormNode::onednn_backward(CpuContext& ctx, const Tensor& x, const Tensor& dy,
                                    const Tensor& dx) {
  src_.set_data_handle(x.data);
  diff_dst_.set_data_handle(dy.data);
  diff_src_.set_data_handle(dx.data);
  ArgMap args{{DNNL_ARG_SRC, src_},
              {DNNL_ARG_MEAN, mean_mem_},
              {DNNL_ARG_VARIANCE, variance_mem_},
              {DNNL_ARG_DIFF_DST, diff_dst_},
              {DNNL_ARG_DIFF_SRC, diff_src_},
              {DNNL_ARG_SCRATCHPAD, scratchpad_}};
  if (args_.has_gamma) {
    args[DNNL_ARG_SCALE] = gamma_.master;
    args[DNNL_ARG_DIFF_SCALE] = gamma_.grad;
  }
  if (args_.has_beta) {  // oneDNN 2.6 asks for the shift in backward too
    args[DNNL_ARG_SHIFT] = beta_.master;
    args[DNNL_ARG_DIFF_SHIFT] = beta_.grad;
  }
  execute(ctx, bwd_, args, label, "backward");
}

// Each thread sums a static share of the rows; the shares are added in thread order, so that a
// run gives the same bits every time at a given thread count.
template <class F>
void BatchNormNode::channel_sums(std::int64_t rows, double* out, F f) const {
  const std::int64_t c = channels_;
  std::vector<double> partial(static_cast<std::size_t>(omp_get_max_threads() * c), 0.0);
  int threads = 1;
#pragma omp parallel
  {
#pragma omp single
    threads = omp_get_num_threads();
    double* local = partial.data() + static_cast<std::int64_t>(omp_get_thread_num()) * c;
#pragma omp for schedule(static)
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t k = 0; k < c; ++k) local[k] += f(r * c + k, k);
    }
  }
  std::fill(out, out + c, 0.0);
  for (int t = 0; t < threads; ++t) {
    for (std::int64_t k = 0; k < c; ++k) out[k] += partial[static_cast<std::size_t>(t * c + k)];
  }
}

void BatchNormNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
                            std::uint64_t) {
  const std::int64_t c = channels_;
  const std::int64_t per_sample = x.elements() / x.dims.front();
  const std::int64_t all_rows = x.elements() / c;
  const float* gamma = args_.has_gamma ? data_of(gamma_) : nullptr;
  const float* beta = args_.has_beta ? data_of(beta_) : nullptr;
  auto* moving_mean = const_cast<float*>(data_of(moving_mean_));
  auto* moving_var = const_cast<float*>(data_of(moving_variance_));
  trained_ = phase == Phase::train;
  used_onednn_ = onednn_applies(x, y, ctx.real_samples);
  if (used_onednn_) {
    rows_ = x.elements() / c;
    onednn_forward(ctx, x, y);
    return;
  }
  with_storage(x.storage, [&](auto si) {
    constexpr Storage kIn = si();
    const void* in = x.data;
    if (trained_) {
      rows_ = std::max<std::int64_t>(1, ctx.real_samples) * per_sample / c;
      const double m = static_cast<double>(rows_);
      channel_sums(rows_, sums_, [&](std::int64_t i, std::int64_t) { return load<kIn>(in, i); });
      for (std::int64_t k = 0; k < c; ++k) mean_[k] = static_cast<float>(sums_[k] / m);
      const float* mean = mean_;
      channel_sums(rows_, sums_, [&](std::int64_t i, std::int64_t k) {
        const double d = static_cast<double>(load<kIn>(in, i)) - mean[k];
        return d * d;
      });
      for (std::int64_t k = 0; k < c; ++k) {
        const auto variance = static_cast<float>(sums_[k] / m);
        const ChannelAffine t = channel_affine(mean_[k], variance, gamma ? gamma[k] : 1.0f,
                                               beta ? beta[k] : 0.0f, args_.epsilon);
        a_[k] = t.a;
        b_[k] = t.b;
        inv_std_[k] = t.inv_std;
        moving_mean[k] = moving_update(moving_mean[k], mean_[k], args_.momentum);
        moving_var[k] = moving_update(moving_var[k], variance, args_.momentum);
      }
    } else {
      for (std::int64_t k = 0; k < c; ++k) {
        const ChannelAffine t =
            channel_affine(moving_mean[k], moving_var[k], gamma ? gamma[k] : 1.0f,
                           beta ? beta[k] : 0.0f, args_.epsilon);
        a_[k] = t.a;
        b_[k] = t.b;
      }
    }
    const float* a = a_;
    const float* b = b_;
    with_storage(y.storage, [&](auto so) {
      void* out = y.data;
#pragma omp parallel for schedule(static)
      for (std::int64_t r = 0; r < all_rows; ++r) {
        for (std::int64_t k = 0; k < c; ++k) {
          const std::int64_t i = r * c + k;
          store<so()>(out, i, load<kIn>(in, i) * a[k] + b[k]);
        }
      }
    });
  });
}

void BatchNormNode::backward(CpuContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy,
                             const Tensor* dx) {
  if (!trained_) throw BackendError(label + ": backward after an inference forward");
  if (used_onednn_ && dx != nullptr && dy.storage == storage_ && dx->storage == storage_) {
    onednn_backward(ctx, x, dy, *dx);
    return;
  }
  // Otherwise MixLab's loops, from the step's mean and 1/sqrt(var + eps) whichever path made
  // them.
  const std::int64_t c = channels_;
  const std::int64_t all_rows = x.elements() / c;
  const std::int64_t rows = rows_;
  const float* gamma = args_.has_gamma ? data_of(gamma_) : nullptr;
  double* dbeta = sums_;
  double* dgamma = sums_ + c;
  with_storage(x.storage, [&](auto si) {
    constexpr Storage kIn = si();
    with_storage(dy.storage, [&](auto sg) {
      constexpr Storage kGrad = sg();
      const void* in = x.data;
      const void* g = dy.data;
      const float* mean = mean_;
      const float* inv_std = inv_std_;
      channel_sums(rows, dbeta, [&](std::int64_t i, std::int64_t) { return load<kGrad>(g, i); });
      channel_sums(rows, dgamma, [&](std::int64_t i, std::int64_t k) {
        return static_cast<double>(load<kGrad>(g, i)) * ((load<kIn>(in, i) - mean[k]) * inv_std[k]);
      });
      if (args_.has_gamma) {
        auto* out = static_cast<float*>(gamma_.grad.get_data_handle());
        for (std::int64_t k = 0; k < c; ++k) out[k] = static_cast<float>(dgamma[k]);
      }
      if (args_.has_beta) {
        auto* out = static_cast<float*>(beta_.grad.get_data_handle());
        for (std::int64_t k = 0; k < c; ++k) out[k] = static_cast<float>(dbeta[k]);
      }
      if (!dx) return;
      // The sums as float, once (the forward's a and b are free now): gamma / sqrt(var + eps),
      // sum dy and sum dy * xhat.
      std::vector<float> sum_dy_xhat(static_cast<std::size_t>(c));
      for (std::int64_t k = 0; k < c; ++k) {
        a_[k] = (gamma ? gamma[k] : 1.0f) * inv_std[k];
        b_[k] = static_cast<float>(dbeta[k]);
        sum_dy_xhat[static_cast<std::size_t>(k)] = static_cast<float>(dgamma[k]);
      }
      const float* scale = a_;
      const float* sum_dy = b_;
      const float* sdx = sum_dy_xhat.data();
      const auto m = static_cast<float>(rows);
      with_storage(dx->storage, [&](auto so) {
        void* out = dx->data;
#pragma omp parallel for schedule(static)
        for (std::int64_t r = 0; r < all_rows; ++r) {
          for (std::int64_t k = 0; k < c; ++k) {
            const std::int64_t i = r * c + k;
            const float v = r < rows ? batch_norm_dx(load<kGrad>(g, i),
                                                     (load<kIn>(in, i) - mean[k]) * inv_std[k],
                                                     scale[k], m, sum_dy[k], sdx[k])
                                     : 0.0f;
            store<so()>(out, i, v);
          }
        }
      });
    });
  });
}

}  // namespace mixlab::cpu
