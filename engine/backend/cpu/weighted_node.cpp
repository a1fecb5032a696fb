#include "engine/backend/cpu/weighted_node.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string_view>

#include "engine/backend/cpu/dnnl_check.h"
#include "engine/core/fp8.h"
#include "engine/core/fp8_table.h"

namespace mixlab::cpu {

using dnnl::memory;

namespace {

// n values rounded through `format` with Keras's bfloat16 quantize-dequantize (fp8.h) into
// `dst`, with `scale`; returns the largest magnitude of `src` (NaN if it holds one, as jnp.max
// gives it) and how many values saturated or were flushed to zero.
Fp8TensorStep quantize_dequantize(const float* src, float* dst, std::int64_t n, Fp8Format format,
                                  float scale) {
  const float scale_bf16 = round_to_bf16(scale);
  const float top = fp8_max(format);
  const float* table = fp8_rounding_table(format);
  float amax = 0.0f;
  int nan = 0;
  std::int64_t saturated = 0, flushed = 0;
#pragma omp parallel for reduction(max : amax) reduction(| : nan) reduction(+ : saturated, flushed)
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = src[i];
    const float a = std::fabs(v);
    nan |= static_cast<int>(a != a);
    amax = a > amax ? a : amax;
    const float scaled = round_to_bf16(v / scale_bf16);  // fp8_quantize_bf16's first half
    saturated += static_cast<std::int64_t>(std::fabs(scaled) > top);
    const float q = round_bf16_to_fp8(table, scaled);  // round_to_fp8, by table
    flushed += static_cast<std::int64_t>(q == 0.0f && v != 0.0f);
    dst[i] = round_to_bf16(q * scale_bf16);
  }
  Fp8TensorStep r;
  r.amax = nan ? std::numeric_limits<float>::quiet_NaN() : amax;
  r.scale = scale;
  r.values = n;
  r.saturated = saturated;
  r.flushed = flushed;
  return r;
}

}  // namespace

WeightedNode::WeightedNode(int layer_index, const char* name, Storage storage, bool use_bias)
    : storage_(storage), use_bias_(use_bias) {
  layer = layer_index;
  label = name;
  out_storage = storage;
}

void WeightedNode::init(const dnnl::primitive_desc& forward_pd,
                        const dnnl::primitive_desc& backward_data_pd,
                        const BackwardWeightsFactory& make_backward_weights,
                        const memory::dims& kernel_dims, const memory::desc& keras_kernel_desc,
                        std::int64_t fan_in, std::int64_t fan_out, const memory::desc& bias_desc) {
  fwd_pd_ = forward_pd;
  bwd_data_pd_ = backward_data_pd;
  bwd_weights_pd_ = make_backward_weights(
      memory::desc(kernel_dims, memory::data_type::f32, memory::format_tag::any));
  // The float32 master (kept in the gradient's layout) in the forward copy's layout too, where
  // oneDNN has a real kernel that writes the gradient so: otherwise every update reorders the
  // whole master into the copy (mixlab-cli doctor measured those reorders at about 40% of the
  // CIFAR-100 convnet's Adam update on two AVX2 cores).
  const memory::desc forward_f32 = with_type(fwd_pd_.weights_desc(), memory::data_type::f32);
  if (bwd_weights_pd_.diff_weights_desc() != forward_f32) {
    try {
      auto same_layout = make_backward_weights(forward_f32);
      if (!std::string_view(same_layout.impl_info_str()).starts_with("ref")) {
        bwd_weights_pd_ = same_layout;
      }
    } catch (const BackendError&) {
      // no kernel for that layout: the reorder stays
    }
  }
  if (storage_ == Storage::bf16) {
    auto bf16_pd = make_backward_weights(
        memory::desc(kernel_dims, memory::data_type::bf16, memory::format_tag::any));
    if (bf16_pd.diff_weights_desc() == fwd_pd_.weights_desc()) bwd_weights_pd_ = bf16_pd;
  }
  fwd_ = DNNL_CHECK(dnnl::primitive(fwd_pd_));
  bwd_data_ = DNNL_CHECK(dnnl::primitive(bwd_data_pd_));
  bwd_weights_ = DNNL_CHECK(dnnl::primitive(bwd_weights_pd_));

  kernel_.layer = bias_.layer = layer;
  describe_kernel(kernel_, keras_kernel_desc, bwd_weights_pd_.diff_weights_desc(),
                  fwd_pd_.weights_desc(), storage_);
  if (bwd_data_pd_.weights_desc() != kernel_.copy_desc) {
    kernel_.backward_copy_desc = bwd_data_pd_.weights_desc();
  }
  kernel_.fan_in = fan_in;
  kernel_.fan_out = fan_out;
  describe_bias(bias_, bias_desc, storage_);
}

void WeightedNode::enable_fp8(const Fp8Recipe& recipe) {
  if (storage_ != Storage::bf16_emulated) {
    throw BackendError(label + ": mixed_float8 needs bfloat16 emulated as float32 values");
  }
  fp8_ = Fp8Tensors{Fp8TensorScaling(Fp8Format::e4m3, recipe),
                    Fp8TensorScaling(Fp8Format::e4m3, recipe),
                    Fp8TensorScaling(recipe.gradient_format(), recipe)};
}

bool WeightedNode::restore_fp8(Fp8StateRestorer& restorer) {
  if (!fp8_) return false;
  restorer.restore(layer, fp8_->input, fp8_->kernel, fp8_->gradient);
  return true;
}

void WeightedNode::end_training_step(bool applied) {
  if (!fp8_ || !amax_pending_) return;
  amax_pending_ = false;
  if (applied) {  // Keras's LossScaleOptimizer skips the scale updates with the step
    fp8_->input.update(steps_[0].amax);
    fp8_->kernel.update(steps_[1].amax);
    fp8_->gradient.update(steps_[2].amax);
  }
  const Fp8TensorScaling* scalings[] = {&fp8_->input, &fp8_->kernel, &fp8_->gradient};
  for (int i = 0; i < 3; ++i) {
    steps_[i].layer = layer;
    steps_[i].role = static_cast<Fp8Role>(i);
    steps_[i].next_scale = scalings[i]->scale();
  }
  reported_ = true;
}

void WeightedNode::append_fp8_steps(std::vector<Fp8TensorStep>& out) {
  if (!reported_) return;
  reported_ = false;
  out.insert(out.end(), steps_.begin(), steps_.end());
}

void WeightedNode::backward_bias_from(const Tensor& dy) {
  // Channels last (Dense's rows x units, Conv2D's NHWC): the sum over all but the last axis.
  const std::int64_t channels = bias_.count;
  const std::int64_t rows = dy.elements() / channels;
  const auto* g = static_cast<const float*>(dy.data);
  auto* out = static_cast<float*>(bias_.grad.get_data_handle());
#pragma omp parallel for
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) sum += g[r * channels + c];
    out[c] = static_cast<float>(sum);
  }
}

std::vector<ParamSlot*> WeightedNode::params() {
  if (use_bias_) return {&kernel_, &bias_};
  return {&kernel_};
}

std::size_t WeightedNode::reserve(Arena& arena) {
  if (fp8_) {
    const auto take = [&arena](Fp8Buffer& b, const memory::desc& d, Purpose purpose) {
      b.count = static_cast<std::int64_t>(d.get_size() / sizeof(float));
      b.id = arena.reserve(d.get_size(), purpose);
    };
    take(input_q_, fwd_pd_.src_desc(), Purpose::activations);
    take(gradient_q_, bwd_data_pd_.diff_dst_desc(), Purpose::workspace);
    take(kernel_q_, kernel_.copy_desc, Purpose::weight_copies);
    if (!kernel_.backward_copy_desc.is_zero()) {
      take(backward_kernel_q_, kernel_.backward_copy_desc, Purpose::weight_copies);
    }
  }
  return std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                   bwd_weights_pd_.scratchpad_desc().get_size()});
}

void WeightedNode::bind(const Arena& arena, const memory& scratchpad) {
  const auto& eng = fwd_pd_.get_engine();
  src_ = memory(fwd_pd_.src_desc(), eng, nullptr);
  dst_ = memory(fwd_pd_.dst_desc(), eng, nullptr);
  diff_dst_ = memory(bwd_data_pd_.diff_dst_desc(), eng, nullptr);
  diff_src_ = memory(bwd_data_pd_.diff_src_desc(), eng, nullptr);
  fwd_args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_WEIGHTS, kernel_.copy}, {DNNL_ARG_DST, dst_}};
  bwd_data_args_ = {{DNNL_ARG_DIFF_DST, diff_dst_},
                    {DNNL_ARG_WEIGHTS, kernel_.backward_copy},
                    {DNNL_ARG_DIFF_SRC, diff_src_}};
  bwd_weights_args_ = {
      {DNNL_ARG_SRC, src_}, {DNNL_ARG_DIFF_DST, diff_dst_}, {DNNL_ARG_DIFF_WEIGHTS, kernel_.grad}};
  if (use_bias_) {
    fwd_args_[DNNL_ARG_BIAS] = bias_.copy;
    bwd_weights_args_[DNNL_ARG_DIFF_BIAS] = bias_.grad;
  }
  for (ArgMap* args : {&fwd_args_, &bwd_data_args_, &bwd_weights_args_}) {
    (*args)[DNNL_ARG_SCRATCHPAD] = scratchpad;
  }
  if (fp8_) {
    for (Fp8Buffer* b : {&input_q_, &gradient_q_, &kernel_q_, &backward_kernel_q_}) {
      if (b->count > 0) b->data = arena.as<float>(b->id);
    }
    kernel_q_mem_ = memory(kernel_.copy_desc, eng, kernel_q_.data);
    fwd_args_[DNNL_ARG_WEIGHTS] = kernel_q_mem_;
    backward_kernel_q_mem_ = kernel_q_mem_;
    if (backward_kernel_q_.count > 0) {
      backward_kernel_q_mem_ = memory(kernel_.backward_copy_desc, eng, backward_kernel_q_.data);
    }
    bwd_data_args_[DNNL_ARG_WEIGHTS] = backward_kernel_q_mem_;
  }
}

void WeightedNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
                           std::uint64_t) {
  src_.set_data_handle(x.data);
  if (fp8_) {
    const Fp8TensorStep input =
        quantize_dequantize(static_cast<const float*>(x.data), input_q_.data, x.elements(),
                            Fp8Format::e4m3, fp8_->input.scale());
    // The kernel copy's padding (a blocked layout's) is zeros: neither amax nor counts change,
    // but the values counted are the kernel's own.
    Fp8TensorStep kernel =
        quantize_dequantize(static_cast<const float*>(kernel_.copy.get_data_handle()),
                            kernel_q_.data, kernel_q_.count, Fp8Format::e4m3, fp8_->kernel.scale());
    kernel.values = static_cast<std::int64_t>(kernel_.keras_desc.get_size() / sizeof(float));
    if (phase == Phase::train) {
      steps_[0] = input;
      steps_[1] = kernel;
      amax_pending_ = true;
    }
    src_.set_data_handle(input_q_.data);
  }
  dst_.set_data_handle(y.data);
  execute(ctx, fwd_, fwd_args_, label, "forward");
  round_inplace(storage_, static_cast<float*>(y.data), y.elements());
}

void WeightedNode::backward(CpuContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy,
                            const Tensor* dx) {
  src_.set_data_handle(x.data);
  diff_dst_.set_data_handle(dy.data);
  if (fp8_) {
    // The forward's rounded input (input_q_ still holds it) and the rounded output gradient.
    src_.set_data_handle(input_q_.data);
    steps_[2] = quantize_dequantize(static_cast<const float*>(dy.data), gradient_q_.data,
                                    dy.elements(), fp8_->gradient.format(), fp8_->gradient.scale());
    diff_dst_.set_data_handle(gradient_q_.data);
    if (backward_kernel_q_.count > 0) {
      quantize_dequantize(static_cast<const float*>(kernel_.backward_copy.get_data_handle()),
                          backward_kernel_q_.data, backward_kernel_q_.count, Fp8Format::e4m3,
                          fp8_->kernel.scale());
    }
  }
  execute(ctx, bwd_weights_, bwd_weights_args_, label, "backward (weights)");
  if (fp8_ && use_bias_) backward_bias_from(dy);
  if (is_rounded(storage_)) {
    // The gradient of a 16-bit weight copy is 16-bit (in float16 it may overflow to inf).
    round_inplace(storage_, static_cast<float*>(kernel_.grad.get_data_handle()), kernel_.count);
    if (use_bias_) {
      round_inplace(storage_, static_cast<float*>(bias_.grad.get_data_handle()), bias_.count);
    }
  }
  if (dx) {
    diff_src_.set_data_handle(dx->data);
    execute(ctx, bwd_data_, bwd_data_args_, label, "backward (data)");
    round_inplace(storage_, static_cast<float*>(dx->data), dx->elements());
  }
}

}  // namespace mixlab::cpu
