#include "engine/backend/cpu/conv2d.h"

#include <algorithm>

#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab::cpu {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dnnl::memory;

Conv2DNode::Conv2DNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info,
                       std::int64_t batch, Storage storage)
    : storage_(storage), use_bias_(spec.use_bias) {
  layer = info.index;
  label = "Conv2D";
  out_storage = storage;
  const auto& in = info.input_shape;    // H, W, C
  const auto& out = info.output_shape;  // OH, OW, filters
  const dt type = dnnl_type(storage);
  const memory::desc src_md({batch, in[2], in[0], in[1]}, type, tag::nhwc);
  const memory::desc dst_md({batch, out[2], out[0], out[1]}, type, tag::nhwc);
  const memory::dims wdims{out[2], in[2], spec.kernel_size.h, spec.kernel_size.w};
  const memory::desc weights_any(wdims, type, tag::any);
  const memory::desc diff_weights_any(wdims, dt::f32, tag::any);
  const memory::desc bias_md({out[2]}, dt::f32, tag::a);
  const memory::dims strides{spec.strides.h, spec.strides.w};
  const memory::dims pad_l{info.pad_top, info.pad_left};
  const memory::dims pad_r{info.pad_bottom, info.pad_right};
  const auto attr = scratchpad_attr();
  const auto& eng = ctx.engine;
  const auto algo = dnnl::algorithm::convolution_direct;

  using fwd = dnnl::convolution_forward;
  using bwd_d = dnnl::convolution_backward_data;
  using bwd_w = dnnl::convolution_backward_weights;
  fwd_pd_ = DNNL_CHECK(
      fwd::primitive_desc(use_bias_ ? fwd::desc(dnnl::prop_kind::forward_training, algo, src_md,
                                                weights_any, bias_md, dst_md, strides, pad_l, pad_r)
                                    : fwd::desc(dnnl::prop_kind::forward_training, algo, src_md,
                                                weights_any, dst_md, strides, pad_l, pad_r),
                          attr, eng));
  bwd_data_pd_ = DNNL_CHECK(bwd_d::primitive_desc(
      bwd_d::desc(algo, src_md, weights_any, dst_md, strides, pad_l, pad_r), attr, eng, fwd_pd_));
  bwd_weights_pd_ = DNNL_CHECK(bwd_w::primitive_desc(
      use_bias_
          ? bwd_w::desc(algo, src_md, diff_weights_any, bias_md, dst_md, strides, pad_l, pad_r)
          : bwd_w::desc(algo, src_md, diff_weights_any, dst_md, strides, pad_l, pad_r),
      attr, eng, fwd_pd_));
  fwd_ = fwd(fwd_pd_);
  bwd_data_ = bwd_d(bwd_data_pd_);
  bwd_weights_ = bwd_w(bwd_weights_pd_);

  kernel_.layer = layer;
  kernel_.kind = ParamKind::kernel;
  kernel_.keras_desc = memory::desc(wdims, dt::f32, tag::hwio);  // Keras: (kh, kw, in, filters)
  kernel_.master_desc = bwd_weights_pd_.diff_weights_desc();
  kernel_.copy_desc = fwd_pd_.weights_desc();
  if (bwd_data_pd_.weights_desc() != kernel_.copy_desc) {
    kernel_.backward_copy_desc = bwd_data_pd_.weights_desc();
  }
  kernel_.copy_storage = storage;
  kernel_.copy_is_master = storage == Storage::f32 && kernel_.copy_desc == kernel_.master_desc;
  const std::int64_t window = spec.kernel_size.h * spec.kernel_size.w;
  kernel_.fan_in = window * in[2];
  kernel_.fan_out = window * out[2];

  bias_.layer = layer;
  bias_.kind = ParamKind::bias;
  bias_.keras_desc = bias_.master_desc = bias_.copy_desc = bias_md;
  bias_.copy_storage = storage == Storage::f16 ? Storage::f16 : Storage::f32;
  bias_.copy_is_master = storage != Storage::f16;
}

std::vector<ParamSlot*> Conv2DNode::params() {
  if (use_bias_) return {&kernel_, &bias_};
  return {&kernel_};
}

std::size_t Conv2DNode::reserve(Arena&) {
  return std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                   bwd_weights_pd_.scratchpad_desc().get_size()});
}

void Conv2DNode::bind(const Arena&, const dnnl::memory& scratchpad) {
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
}

void Conv2DNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  src_.set_data_handle(x.data);
  dst_.set_data_handle(y.data);
  execute(ctx, fwd_, fwd_args_, label, "forward");
  if (storage_ == Storage::f16) round_to_f16_inplace(static_cast<float*>(y.data), y.elements());
}

void Conv2DNode::backward(CpuContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy,
                          const Tensor* dx) {
  src_.set_data_handle(x.data);
  diff_dst_.set_data_handle(dy.data);
  execute(ctx, bwd_weights_, bwd_weights_args_, label, "backward (weights)");
  if (storage_ == Storage::f16) {
    round_to_f16_inplace(static_cast<float*>(kernel_.grad.get_data_handle()), kernel_.count);
    if (use_bias_)
      round_to_f16_inplace(static_cast<float*>(bias_.grad.get_data_handle()), bias_.count);
  }
  if (dx) {
    diff_src_.set_data_handle(dx->data);
    execute(ctx, bwd_data_, bwd_data_args_, label, "backward (data)");
    if (storage_ == Storage::f16)
      round_to_f16_inplace(static_cast<float*>(dx->data), dx->elements());
  }
}

}  // namespace mixlab::cpu
