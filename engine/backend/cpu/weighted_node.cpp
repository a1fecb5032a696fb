#include "engine/backend/cpu/weighted_node.h"

#include <algorithm>
#include <string_view>

#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab::cpu {

using dnnl::memory;

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

std::vector<ParamSlot*> WeightedNode::params() {
  if (use_bias_) return {&kernel_, &bias_};
  return {&kernel_};
}

std::size_t WeightedNode::reserve(Arena&) {
  return std::max({fwd_pd_.scratchpad_desc().get_size(), bwd_data_pd_.scratchpad_desc().get_size(),
                   bwd_weights_pd_.scratchpad_desc().get_size()});
}

void WeightedNode::bind(const Arena&, const memory& scratchpad) {
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

void WeightedNode::forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase,
                           std::uint64_t) {
  src_.set_data_handle(x.data);
  dst_.set_data_handle(y.data);
  execute(ctx, fwd_, fwd_args_, label, "forward");
  round_inplace(storage_, static_cast<float*>(y.data), y.elements());
}

void WeightedNode::backward(CpuContext& ctx, const Tensor& x, const Tensor&, const Tensor& dy,
                            const Tensor* dx) {
  src_.set_data_handle(x.data);
  diff_dst_.set_data_handle(dy.data);
  execute(ctx, bwd_weights_, bwd_weights_args_, label, "backward (weights)");
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
