#include "engine/backend/cpu/conv2d.h"

#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab::cpu {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dnnl::memory;

Conv2DNode::Conv2DNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info,
                       std::int64_t batch, Storage storage)
    : WeightedNode(info.index,
                   spec.type == LayerType::DepthwiseConv2D ? "DepthwiseConv2D" : "Conv2D", storage,
                   spec.use_bias) {
  const auto& in = info.input_shape;    // H, W, C
  const auto& out = info.output_shape;  // OH, OW, filters
  const dt type = dnnl_type(storage);
  const memory::desc src_md({batch, in[2], in[0], in[1]}, type, tag::nhwc);
  const memory::desc dst_md({batch, out[2], out[0], out[1]}, type, tag::nhwc);
  // DepthwiseConv2D: a convolution of in[2] groups of one input channel and depth_multiplier
  // filters, whose (g, o, i, h, w) weights Keras lays out as (kh, kw, in, multiplier): hwigo.
  const bool depthwise = spec.type == LayerType::DepthwiseConv2D;
  const memory::dims wdims =
      depthwise
          ? memory::dims{in[2], spec.depth_multiplier, 1, spec.kernel_size.h, spec.kernel_size.w}
          : memory::dims{out[2], in[2], spec.kernel_size.h, spec.kernel_size.w};
  const memory::desc weights_any(wdims, type, tag::any);
  const memory::desc bias_md({out[2]}, dt::f32, tag::a);
  const memory::dims strides{spec.strides.h, spec.strides.w};
  const memory::dims pad_l{info.pad_top, info.pad_left};
  const memory::dims pad_r{info.pad_bottom, info.pad_right};
  const auto attr = scratchpad_attr();
  const auto& eng = ctx.engine;
  const auto algo = dnnl::algorithm::convolution_direct;
  const bool bias = spec.use_bias;

  using fwd = dnnl::convolution_forward;
  using bwd_d = dnnl::convolution_backward_data;
  using bwd_w = dnnl::convolution_backward_weights;
  const auto training = dnnl::prop_kind::forward_training;
  const auto fwd_pd = DNNL_CHECK(fwd::primitive_desc(
      bias ? fwd::desc(training, algo, src_md, weights_any, bias_md, dst_md, strides, pad_l, pad_r)
           : fwd::desc(training, algo, src_md, weights_any, dst_md, strides, pad_l, pad_r),
      attr, eng));
  const auto bwd_data_pd = DNNL_CHECK(bwd_d::primitive_desc(
      bwd_d::desc(algo, src_md, weights_any, dst_md, strides, pad_l, pad_r), attr, eng, fwd_pd));
  const auto make_bwd_weights = [&](const memory::desc& diff_weights) -> dnnl::primitive_desc {
    return DNNL_CHECK(bwd_w::primitive_desc(
        bias ? bwd_w::desc(algo, src_md, diff_weights, bias_md, dst_md, strides, pad_l, pad_r)
             : bwd_w::desc(algo, src_md, diff_weights, dst_md, strides, pad_l, pad_r),
        attr, eng, fwd_pd));
  };
  const std::int64_t window = spec.kernel_size.h * spec.kernel_size.w;
  // Keras: (kh, kw, in, filters); fans as Keras's glorot_uniform computes them.
  init(fwd_pd, bwd_data_pd, make_bwd_weights, wdims,
       memory::desc(wdims, dt::f32, depthwise ? tag::hwigo : tag::hwio), window * in[2],
       window * (depthwise ? spec.depth_multiplier : out[2]), bias_md);
}

}  // namespace mixlab::cpu
