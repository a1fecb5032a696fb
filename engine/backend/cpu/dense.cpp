#include "engine/backend/cpu/dense.h"

#include <string_view>

#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab::cpu {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using dnnl::memory;

DenseNode::DenseNode(CpuContext& ctx, const LayerSpec& spec, int layer_index, std::int64_t rows,
                     std::int64_t in, std::int64_t out, Storage storage)
    : WeightedNode(layer_index, "Dense", storage, spec.use_bias) {
  const dt type = dnnl_type(storage);
  const memory::desc src_md({rows, in}, type, tag::ab);   // (rows, in)
  const memory::desc dst_md({rows, out}, type, tag::ab);  // (rows, out)
  const memory::desc weights_any({out, in}, type, tag::any);
  const memory::desc bias_md({out}, dt::f32, tag::a);
  const auto attr = scratchpad_attr();
  const auto& eng = ctx.engine;
  const bool bias = spec.use_bias;

  using fwd = dnnl::inner_product_forward;
  using bwd_d = dnnl::inner_product_backward_data;
  using bwd_w = dnnl::inner_product_backward_weights;
  const auto fwd_pd = DNNL_CHECK(fwd::primitive_desc(
      bias ? fwd::desc(dnnl::prop_kind::forward_training, src_md, weights_any, bias_md, dst_md)
           : fwd::desc(dnnl::prop_kind::forward_training, src_md, weights_any, dst_md),
      attr, eng));
  // Backward to data reads the forward copy's layout where oneDNN has a real kernel for it: with
  // a layout of its own choosing, every step would reorder the weights into it (mixlab-cli doctor
  // measured that reorder at 28 ms of the CIFAR-10 MLP's 36 ms update on two AVX2 cores).
  auto bwd_data_pd = DNNL_CHECK(bwd_d::primitive_desc(
      bwd_d::desc(src_md, fwd_pd.weights_desc(), dst_md), attr, eng, fwd_pd, true));
  if (!bwd_data_pd || std::string_view(bwd_data_pd.impl_info_str()).starts_with("ref")) {
    bwd_data_pd = DNNL_CHECK(
        bwd_d::primitive_desc(bwd_d::desc(src_md, weights_any, dst_md), attr, eng, fwd_pd));
  }
  const auto make_bwd_weights = [&](const memory::desc& diff_weights) -> dnnl::primitive_desc {
    return DNNL_CHECK(bwd_w::primitive_desc(bias
                                                ? bwd_w::desc(src_md, diff_weights, bias_md, dst_md)
                                                : bwd_w::desc(src_md, diff_weights, dst_md),
                                            attr, eng, fwd_pd));
  };
  init(fwd_pd, bwd_data_pd, make_bwd_weights, {out, in},
       memory::desc({out, in}, dt::f32, tag::ba),  // Keras: (in, units)
       in, out, bias_md);
}

}  // namespace mixlab::cpu
