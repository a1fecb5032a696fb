#include "engine/backend/cuda/sequence_nodes.h"

#include <cmath>
#include <cstddef>

#include "engine/core/error.h"
#include "engine/ops/layer_norm.h"

namespace mixlab::cuda {

namespace {

ParamSlot only_slot(const ExecutionPlan& plan, const PlanNode& node, const std::string& label) {
  if (node.params.size() != 1) {
    throw BackendError(label + ": the plan gives the layer " + std::to_string(node.params.size()) +
                       " parameter groups, not its table");
  }
  return param_slot(plan.params.at(static_cast<std::size_t>(node.params.front())));
}

}  // namespace

EmbeddingNode::EmbeddingNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec)
    : CudaNode(node.layer, node.out_dtype, node.label),
      vocabulary_(spec.input_dim),
      width_(spec.output_dim),
      table_(only_slot(plan, node, node.label)) {}

void EmbeddingNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::embedding_forward(static_cast<const float*>(x.data), ctx.master + table_.offset, y.data,
                             y.dtype, x.elements(), vocabulary_, width_, ctx.stream);
}

void EmbeddingNode::backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                             const DTensor*) {
  kernels::embedding_backward(static_cast<const float*>(x.data), dy.data, dy.dtype,
                              ctx.gradient(table_), x.elements(), vocabulary_, width_, ctx.stream);
}

PositionEmbeddingNode::PositionEmbeddingNode(const ExecutionPlan& plan, const PlanNode& node)
    : CudaNode(node.layer, node.out_dtype, node.label), table_(only_slot(plan, node, node.label)) {}

void PositionEmbeddingNode::forward(CudaContext& ctx, const DTensor&, const DTensor& y) {
  const auto samples = static_cast<int>(y.dims.front());
  kernels::position_embedding_forward(ctx.master + table_.offset, y.data, y.dtype, samples,
                                      y.elements() / samples, ctx.stream);
}

void PositionEmbeddingNode::backward(CudaContext& ctx, const DTensor&, const DTensor&,
                                     const DTensor& dy, const DTensor*) {
  const auto samples = static_cast<int>(dy.dims.front());
  kernels::position_embedding_backward(dy.data, dy.dtype, ctx.gradient(table_), samples,
                                       dy.elements() / samples, table_.count, ctx.stream);
}

LayerNormNode::LayerNormNode(const ExecutionPlan& plan, const PlanNode& node, const LayerSpec& spec)
    : CudaNode(node.layer, node.out_dtype, node.label),
      epsilon_(static_cast<float>(spec.epsilon)),
      rows_(plan.batch * num_elements(node.in_shape) / node.in_shape.back()),
      width_(static_cast<int>(node.in_shape.back())) {
  for (const int p : node.params) {
    slots_.push_back(param_slot(plan.params.at(static_cast<std::size_t>(p))));
  }
  for (ParamSlot& s : slots_) {
    if (s.kind == ParamKind::gamma) gamma_ = &s;
    if (s.kind == ParamKind::beta) beta_ = &s;
  }
}

std::vector<ParamSlot*> LayerNormNode::params() {
  std::vector<ParamSlot*> out;
  for (ParamSlot& s : slots_) out.push_back(&s);
  return out;
}

void LayerNormNode::reserve(DeviceArena& arena) {
  stats_id_ = arena.reserve(static_cast<std::size_t>(rows_) * sizeof(RowStats), Purpose::workspace);
  partials_id_ = arena.reserve(
      static_cast<std::size_t>(kernels::layer_norm_partials_floats(width_)) * sizeof(float),
      Purpose::workspace);
}

void LayerNormNode::bind(const DeviceArena& arena) {
  stats_ = arena.ptr(stats_id_);
  partials_ = arena.as<float>(partials_id_);
}

void LayerNormNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  kernels::layer_norm_forward(x.data, y.data, x.dtype, rows_, width_, epsilon_,
                              gamma_ ? ctx.master + gamma_->offset : nullptr,
                              beta_ ? ctx.master + beta_->offset : nullptr, stats_, ctx.stream);
}

void LayerNormNode::backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                             const DTensor* dx) {
  kernels::layer_norm_backward(x.data, dy.data, dx ? dx->data : nullptr, x.dtype, rows_, width_,
                               gamma_ ? ctx.master + gamma_->offset : nullptr, stats_,
                               gamma_ ? ctx.gradient(*gamma_) : nullptr,
                               beta_ ? ctx.gradient(*beta_) : nullptr, partials_, ctx.stream);
}

AttentionNode::AttentionNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
                             AttentionKernels kernels, double compute_capability,
                             FusedAttentionCache& cache)
    : CudaNode(node.layer, node.out_dtype, node.label), dtype_(node.out_dtype) {
  shape_.batch = plan.batch;
  shape_.steps = static_cast<int>(node.out_shape.front());
  shape_.heads = node.heads;
  shape_.key_dim = node.key_dim;
  shape_.value_dim = node.value_dim;
  shape_.causal = node.causal;
  if (kernels != AttentionKernels::unfused) {
    const FusedAttentionShape f{.batch = shape_.batch,
                                .steps = shape_.steps,
                                .heads = shape_.heads,
                                .key_dim = shape_.key_dim,
                                .value_dim = shape_.value_dim,
                                .causal = shape_.causal,
                                .dtype = dtype_};
    const int major = static_cast<int>(compute_capability + 1e-9);
    const int minor = static_cast<int>(std::lround((compute_capability - major) * 10.0));
    const auto key =
        std::tuple{f.batch, f.steps, f.heads, f.key_dim, f.value_dim, f.causal, f.dtype};
    auto found = cache.find(key);
    if (found == cache.end()) {
      FusedAttentionBuilt built;
      built.why_not = fused_attention_unsupported(f, major, minor);
      if (built.why_not.empty()) {
        try {
          built.kernels = std::make_shared<const FusedAttention>(
              ctx.dnn, f, label + " (cuDNN's fused attention)");
        } catch (const BackendError& e) {
          built.why_not = e.what();
        }
      }
      found = cache.emplace(key, std::move(built)).first;
    }
    fused_ = found->second.kernels;
    const std::string& why = found->second.why_not;
    if (!fused_) {
      if (kernels == AttentionKernels::fused) {
        throw BackendError(label + ": attention fused: " + why +
                           "; run with --attention auto or unfused");
      }
      unfused_reason_ = why;
    }
  }
  if (fused_) return;
  products_ = attention_products(shape_.batch, shape_.steps, shape_.heads, shape_.key_dim,
                                 shape_.value_dim, dtype_, ctx.tf32);
  const auto lt = [&](const LtMatmulShape& s, const char* what) {
    return LtMatmul(ctx.lt, s, ctx.lt_workspace_bytes, label + " " + what);
  };
  scores_ = lt(products_.scores, "scores (Q K^T)");
  values_ = lt(products_.values, "weighted values (P V)");
  probs_grad_ = lt(products_.probs_grad, "weights' gradient (dY V^T)");
  values_grad_ = lt(products_.values_grad, "values' gradient (P^T dY)");
  keys_grad_ = lt(products_.keys_grad, "keys' gradient (dS^T Q)");
  query_grad_ = lt(products_.query_grad, "queries' gradient (dS K)");
}

AttentionNode::~AttentionNode() = default;

std::size_t AttentionNode::dnn_workspace_bytes() const {
  return fused_ ? fused_->workspace_bytes() : 0;
}

void AttentionNode::reserve(DeviceArena& arena) {
  const auto rows = static_cast<std::size_t>(shape_.batch) *
                    static_cast<std::size_t>(shape_.heads) * static_cast<std::size_t>(shape_.steps);
  const std::size_t scores = rows * static_cast<std::size_t>(shape_.steps);
  const std::size_t elements = static_cast<std::size_t>(shape_.batch) *
                               static_cast<std::size_t>(shape_.steps) *
                               static_cast<std::size_t>(shape_.heads) *
                               static_cast<std::size_t>(2 * shape_.key_dim + shape_.value_dim);
  const std::size_t in_bytes = dtype_bytes(dtype_);
  if (fused_) {
    kept_id_ = arena.reserve(rows * sizeof(float), Purpose::activations);
    grads_id_ = arena.reserve(elements * in_bytes, Purpose::workspace);
    return;
  }
  kept_id_ = arena.reserve(scores * in_bytes, Purpose::activations);
  dprobs_id_ = arena.reserve(scores * sizeof(float), Purpose::workspace);
  dscores_id_ = arena.reserve(scores * in_bytes, Purpose::workspace);
  grads_id_ = arena.reserve(elements * sizeof(float), Purpose::workspace);
}

void AttentionNode::bind(const DeviceArena& arena) {
  kept_ = arena.ptr(kept_id_);
  grads_ = arena.ptr(grads_id_);
  if (fused_) return;
  dprobs_ = arena.as<float>(dprobs_id_);
  dscores_ = arena.ptr(dscores_id_);
}

void AttentionNode::forward(CudaContext&, const DTensor&, const DTensor&) {
  throw BackendError(label + ": forward() of one input; the executor calls forward_inputs()");
}

void AttentionNode::backward(CudaContext&, const DTensor&, const DTensor&, const DTensor&,
                             const DTensor*) {
  throw BackendError(label + ": backward() of one input; the executor calls backward_input()");
}

namespace {

const void* at(const void* base, std::int64_t elements, DType dtype) {
  return static_cast<const std::byte*>(base) +
         elements * static_cast<std::int64_t>(dtype_bytes(dtype));
}
void* at(void* base, std::int64_t elements, DType dtype) {
  return static_cast<std::byte*>(base) + elements * static_cast<std::int64_t>(dtype_bytes(dtype));
}

}  // namespace

void AttentionNode::forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs,
                                   const DTensor& y) {
  const void *q = xs[0]->data, *k = xs[1]->data, *v = xs[2]->data;
  if (fused_) {
    fused_->forward(q, k, v, y.data, static_cast<float*>(kept_), ctx.dnn_workspace, ctx.stream);
    return;
  }
  const AttentionProducts& p = products_;
  for (int h = 0; h < shape_.heads; ++h) {
    scores_.run(at(k, p.key_offset(h), dtype_), at(q, p.key_offset(h), dtype_),
                at(kept_, p.scores_offset(h), dtype_), nullptr, ctx.lt_workspace, ctx.stream);
  }
  kernels::attention_softmax(kept_, dtype_, shape_, ctx.stream);
  for (int h = 0; h < shape_.heads; ++h) {
    values_.run(at(v, p.value_offset(h), dtype_), at(kept_, p.scores_offset(h), dtype_),
                at(y.data, p.value_offset(h), dtype_), nullptr, ctx.lt_workspace, ctx.stream);
  }
}

void AttentionNode::backward_input(CudaContext& ctx, std::span<const DTensor* const> xs,
                                   const DTensor& y, const DTensor& dy, int i, const DTensor& dx) {
  const std::int64_t q_elements = xs[0]->elements();
  const DType grad_dtype = fused_ ? dtype_ : DType::f32;
  void* dq = grads_;
  void* dk = at(dq, q_elements, grad_dtype);
  void* dv = at(dk, q_elements, grad_dtype);
  if (i == 0) {
    const void *q = xs[0]->data, *k = xs[1]->data, *v = xs[2]->data;
    if (fused_) {
      fused_->backward(q, k, v, y.data, dy.data, static_cast<const float*>(kept_), dq, dk, dv,
                       ctx.dnn_workspace, ctx.stream);
    } else {
      const AttentionProducts& p = products_;
      const auto f32 = DType::f32;
      for (int h = 0; h < shape_.heads; ++h) {
        const std::int64_t vo = p.value_offset(h), so = p.scores_offset(h);
        probs_grad_.run(at(v, vo, dtype_), at(dy.data, vo, dtype_), at(dprobs_, so, f32), nullptr,
                        ctx.lt_workspace, ctx.stream);
        values_grad_.run(at(dy.data, vo, dtype_), at(kept_, so, dtype_), at(dv, vo, f32), nullptr,
                         ctx.lt_workspace, ctx.stream);
      }
      kernels::attention_softmax_backward(kept_, dprobs_, dscores_, dtype_, shape_, ctx.stream);
      for (int h = 0; h < shape_.heads; ++h) {
        const std::int64_t ko = p.key_offset(h), so = p.scores_offset(h);
        keys_grad_.run(at(q, ko, dtype_), at(dscores_, so, dtype_), at(dk, ko, f32), nullptr,
                       ctx.lt_workspace, ctx.stream);
        query_grad_.run(at(k, ko, dtype_), at(dscores_, so, dtype_), at(dq, ko, f32), nullptr,
                        ctx.lt_workspace, ctx.stream);
      }
    }
  }
  const void* src = i == 0 ? dq : i == 1 ? dk : dv;
  kernels::cast(src, grad_dtype, dx.data, dx.dtype, dx.elements(), ctx.stream);
}

}  // namespace mixlab::cuda
