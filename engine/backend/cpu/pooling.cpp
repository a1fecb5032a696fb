#include "engine/backend/cpu/pooling.h"

#include <algorithm>

#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab::cpu {

using tag = dnnl::memory::format_tag;
using dnnl::memory;

PoolingNode::PoolingNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info,
                         std::int64_t batch, Storage storage)
    : storage_(storage), max_(pool_window(spec, info).max) {
  layer = info.index;
  label = std::string(to_string(spec.type));
  out_storage = storage;
  const PoolWindow window = pool_window(spec, info);
  const Shape in = pool_image_shape(spec, info);
  const auto type = dnnl_type(storage);
  const memory::desc src_md({batch, in[2], in[0], in[1]}, type, tag::nhwc);
  const memory::desc dst_md({batch, in[2], window.out_h, window.out_w}, type, tag::nhwc);
  const memory::dims strides{window.strides.h, window.strides.w};
  const memory::dims kernel{window.size.h, window.size.w};
  const memory::dims pad_l{info.pad_top, info.pad_left};
  const memory::dims pad_r{info.pad_bottom, info.pad_right};
  const auto algo =
      max_ ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
  const auto attr = scratchpad_attr();
  fwd_pd_ = DNNL_CHECK(dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, algo, src_md, dst_md, strides,
                                  kernel, pad_l, pad_r),
      attr, ctx.engine));
  bwd_pd_ = DNNL_CHECK(dnnl::pooling_backward::primitive_desc(
      dnnl::pooling_backward::desc(algo, src_md, dst_md, strides, kernel, pad_l, pad_r), attr,
      ctx.engine, fwd_pd_));
  fwd_ = dnnl::pooling_forward(fwd_pd_);
  bwd_ = dnnl::pooling_backward(bwd_pd_);
}

std::size_t PoolingNode::reserve(Arena& arena) {
  if (max_)
    workspace_id_ = arena.reserve(fwd_pd_.workspace_desc().get_size(), Purpose::activations);
  return std::max(fwd_pd_.scratchpad_desc().get_size(), bwd_pd_.scratchpad_desc().get_size());
}

void PoolingNode::bind(const Arena& arena, const dnnl::memory& scratchpad) {
  const auto& eng = fwd_pd_.get_engine();
  src_ = memory(fwd_pd_.src_desc(), eng, nullptr);
  dst_ = memory(fwd_pd_.dst_desc(), eng, nullptr);
  diff_dst_ = memory(bwd_pd_.diff_dst_desc(), eng, nullptr);
  diff_src_ = memory(bwd_pd_.diff_src_desc(), eng, nullptr);
  fwd_args_ = {{DNNL_ARG_SRC, src_}, {DNNL_ARG_DST, dst_}};
  bwd_args_ = {{DNNL_ARG_DIFF_DST, diff_dst_}, {DNNL_ARG_DIFF_SRC, diff_src_}};
  if (max_) {
    workspace_ = memory(fwd_pd_.workspace_desc(), eng, arena.ptr(workspace_id_));
    fwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
    bwd_args_[DNNL_ARG_WORKSPACE] = workspace_;
  }
  fwd_args_[DNNL_ARG_SCRATCHPAD] = scratchpad;
  bwd_args_[DNNL_ARG_SCRATCHPAD] = scratchpad;
}

void PoolingNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase, std::uint64_t) {
  src_.set_data_handle(x.data);
  dst_.set_data_handle(y.data);
  execute(ctx, fwd_, fwd_args_, label, "forward");
  if (!max_) round_inplace(storage_, static_cast<float*>(y.data), y.elements());
}

void PoolingNode::backward(CpuContext& ctx, const Tensor&, const Tensor&, const Tensor& dy,
                           const Tensor* dx) {
  if (!dx) return;
  diff_dst_.set_data_handle(dy.data);
  diff_src_.set_data_handle(dx->data);
  execute(ctx, bwd_, bwd_args_, label, "backward");
  round_inplace(storage_, static_cast<float*>(dx->data), dx->elements());
}

}  // namespace mixlab::cpu
