// Dense on oneDNN's inner product: forward, backward data and backward weights. A Dense on a
// rank-3 input acts on the last axis (Keras): the batch and leading axes fold into rows.
#pragma once

#include "engine/backend/cpu/cpu_node.h"

namespace mixlab::cpu {

class DenseNode : public CpuNode {
 public:
  // rows: batch * leading elements; in/out: features.
  DenseNode(CpuContext& ctx, const LayerSpec& spec, int layer, std::int64_t rows,
            std::int64_t in_features, std::int64_t out_features, Storage storage);

  std::size_t reserve(Arena& arena) override;
  void bind(const Arena& arena, const dnnl::memory& scratchpad) override;
  void forward(CpuContext& ctx, const Tensor& x, const Tensor& y, Phase phase,
               std::uint64_t step) override;
  void backward(CpuContext& ctx, const Tensor& x, const Tensor& y, const Tensor& dy,
                const Tensor* dx) override;
  std::vector<ParamSlot*> params() override;

 private:
  Storage storage_;
  bool use_bias_;
  std::int64_t rows_, in_, out_;
  dnnl::inner_product_forward::primitive_desc fwd_pd_;
  dnnl::inner_product_backward_data::primitive_desc bwd_data_pd_;
  dnnl::inner_product_backward_weights::primitive_desc bwd_weights_pd_;
  dnnl::inner_product_forward fwd_;
  dnnl::inner_product_backward_data bwd_data_;
  dnnl::inner_product_backward_weights bwd_weights_;
  ParamSlot kernel_, bias_;
  dnnl::memory src_, dst_, diff_dst_, diff_src_;  // (rows, in) / (rows, out)
  ArgMap fwd_args_, bwd_data_args_, bwd_weights_args_;
};

}  // namespace mixlab::cpu
