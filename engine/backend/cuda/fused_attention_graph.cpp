#include "engine/backend/cuda/fused_attention_graph.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cuda/cuda_check.h"

namespace mixlab::cuda::attention_graph {

// CUDNN_CHECK with cuDNN's own explanation added: for the graph API the status alone
// ("CUDNN_STATUS_NOT_SUPPORTED") rarely says which attribute or engine refused.
std::string status_text(cudnnStatus_t status) {
  char detail[2048] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  std::string text = cudnnGetErrorString(status);
  if (detail[0] != '\0') text += std::string(" (") + detail + ")";
  return text;
}

void check_cudnn(cudnnStatus_t status, const char* expr, const char* file, int line) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw_backend_error("cuDNN", status_text(status), expr, file, line);
}

GraphOptions graph_options(const FusedAttentionShape& shape) {
  const int version = static_cast<int>(cudnnGetVersion());
  GraphOptions o;
  o.io = shape.dtype == DType::f16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
  o.scale = 1.0f / std::sqrt(static_cast<float>(shape.key_dim));
  o.mask_value = version < 91000 ? std::numeric_limits<float>::lowest()
                                 : -std::numeric_limits<float>::infinity();
  o.causal = shape.causal;
  o.set_deterministic = version >= 91100;
  // The frontend's workaround of a backward bug up to cuDNN 9.15.0: a sequence length not a
  // multiple of 128 is run as a padding mask with every sequence full.
  o.padding_workaround = shape.steps % 128 != 0 && version <= 91500;
  o.second_padding = o.padding_workaround && version >= 90000 && version < 91000;
  return o;
}

namespace {

struct Tensor {
  cudnnBackendDescriptor_t desc = nullptr;
  std::int64_t uid = 0;
  std::string name;
};

// Creates and finalises the tensors and operations of one graph, as cudnn-frontend lowers its
// Tensor_attributes and its pointwise, reduction, matmul and reshape nodes.
class GraphBuilder {
 public:
  GraphBuilder(Graph& graph, const GraphOptions& options) : g_(graph), options_(options) {}

  // A tensor passed at execution: MixLab's, or scratch in the workspace.
  Tensor tensor(const char* name, std::int64_t uid, cudnnDataType_t type, Dims dims, Dims strides) {
    return make(name, uid, type, dims, strides, false, false);
  }
  // A virtual tensor: exists only inside the fused kernel.
  Tensor temp(std::string name, cudnnDataType_t type, Dims dims, Dims strides) {
    return make(std::move(name), next_uid_++, type, dims, strides, true, false);
  }
  // A float scalar fused by value, as the frontend's Tensor_attributes(float), which gives it
  // rank 1; rank 4 here (ones), which cuDNN finalises into the same fused pattern.
  Tensor scalar(std::string name, float value) {
    Tensor t = make(std::move(name), next_uid_++, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1},
                    false, true);
    g_.scalars.push_back({t.uid, value});
    return t;
  }

  // y = mode(inputs), the inputs X, B, T in that order; axis for GEN_INDEX only.
  void pointwise(const std::string& name, cudnnPointwiseMode_t mode, cudnnDataType_t math,
                 std::initializer_list<Tensor> inputs, const Tensor& y, std::int64_t axis = -1) {
    cudnnBackendDescriptor_t desc = g_.owned.create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    FA_SET(desc, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    FA_SET(desc, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &math);
    if (mode == CUDNN_POINTWISE_GEN_INDEX) {
      FA_SET(desc, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
    }
    FA_CHECK(cudnnBackendFinalize(desc));

    cudnnBackendDescriptor_t op = g_.owned.create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    FA_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, kDesc, 1, &desc);
    static constexpr cudnnBackendAttributeName_t kPorts[] = {CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                                             CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                                             CUDNN_ATTR_OPERATION_POINTWISE_TDESC};
    std::size_t port = 0;
    std::string line = "pointwise " + name + ": (";
    for (const Tensor& in : inputs) {
      check_cudnn(cudnnBackendSetAttribute(op, kPorts[port], kDesc, 1, &in.desc),
                  "set CUDNN_ATTR_OPERATION_POINTWISE_XDESC/BDESC/TDESC", __FILE__, __LINE__);
      line += (port++ ? ", " : "") + label(in);
    }
    FA_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, kDesc, 1, &y.desc);
    const float one = 1.0f;  // the frontend always sets both alphas to 1
    FA_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    FA_SET(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    add(op, line + ") -> " + label(y));
  }
  // The same into a new virtual tensor, named as the frontend names a node's output.
  Tensor apply(const std::string& name, cudnnPointwiseMode_t mode, cudnnDataType_t math,
               std::initializer_list<Tensor> inputs, cudnnDataType_t type, Dims dims, Dims strides,
               std::int64_t axis = -1) {
    Tensor y = temp(name + "::OUT_0", type, dims, strides);
    pointwise(name, mode, math, inputs, y, axis);
    return y;
  }

  void reduction(const char* name, cudnnReduceTensorOp_t mode, const Tensor& x, const Tensor& y) {
    cudnnBackendDescriptor_t desc = g_.owned.create(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    FA_SET(desc, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &math);
    FA_SET(desc, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
#if CUDNN_VERSION >= 91100  // the attribute's first headers, as the frontend guards it
    if (options_.set_deterministic) {
      const bool deterministic = false;  // the frontend's default
      FA_SET(desc, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
    }
#endif
    FA_CHECK(cudnnBackendFinalize(desc));

    cudnnBackendDescriptor_t op = g_.owned.create(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    FA_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, kDesc, 1, &desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, kDesc, 1, &x.desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, kDesc, 1, &y.desc);
    add(op, std::string("reduction ") + name + ": " + label(x) + " -> " + label(y));
  }

  // c = a . b, with the frontend's optional GEMM size overrides (the backward's padding mask).
  void matmul(const char* name, const Tensor& a, const Tensor& b, const Tensor& c,
              const Tensor* m = nullptr, const Tensor* n = nullptr, const Tensor* k = nullptr) {
    cudnnBackendDescriptor_t desc = g_.owned.create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t math = CUDNN_DATA_FLOAT;
    FA_SET(desc, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &math);
    FA_CHECK(cudnnBackendFinalize(desc));

    cudnnBackendDescriptor_t op = g_.owned.create(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    FA_SET(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, kDesc, 1, &a.desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, kDesc, 1, &b.desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, kDesc, 1, &c.desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, kDesc, 1, &desc);
    std::string line = std::string("matmul ") + name + ": " + label(a) + " . " + label(b);
    const std::pair<cudnnBackendAttributeName_t, const Tensor*> overrides[] = {
        {CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC, m},
        {CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC, n},
        {CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC, k}};
    for (const auto& [attr, tensor] : overrides) {
      if (tensor == nullptr) continue;
      check_cudnn(cudnnBackendSetAttribute(op, attr, kDesc, 1, &tensor->desc),
                  "set CUDNN_ATTR_OPERATION_MATMUL_GEMM_M/N/K_OVERRIDE_DESC", __FILE__, __LINE__);
      line += ", override " + label(*tensor);
    }
    add(op, line + " -> " + label(c));
  }

  // A view of x with y's dims and strides (the frontend's transposes of P, dS and K).
  void reshape(const char* name, const Tensor& x, const Tensor& y) {
    cudnnBackendDescriptor_t op = g_.owned.create(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    FA_SET(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, kDesc, 1, &x.desc);
    FA_SET(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, kDesc, 1, &y.desc);
    add(op, std::string("reshape ") + name + ": " + label(x) + " -> " + label(y));
  }

 private:
  static constexpr cudnnBackendAttributeType_t kDesc = CUDNN_TYPE_BACKEND_DESCRIPTOR;

  Tensor make(std::string name, std::int64_t uid, cudnnDataType_t type, Dims dims, Dims strides,
              bool is_virtual, bool by_value) {
    cudnnBackendDescriptor_t desc = g_.owned.create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    FA_SET(desc, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
    FA_SET(desc, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data());
    FA_SET(desc, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data());
    FA_SET(desc, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    FA_SET(desc, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &kTensorAlignment);
    if (is_virtual) FA_SET(desc, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
    if (by_value) FA_SET(desc, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
    FA_CHECK(cudnnBackendFinalize(desc));
    return {desc, uid, std::move(name)};
  }

  void add(cudnnBackendDescriptor_t op, std::string line) {
    FA_CHECK(cudnnBackendFinalize(op));
    g_.ops.push_back(op);
    g_.lines.push_back(std::move(line));
  }

  static std::string label(const Tensor& t) { return t.name + "[" + std::to_string(t.uid) + "]"; }

  Graph& g_;
  const GraphOptions& options_;
  std::int64_t next_uid_ = kFirstInternalUid;
};

constexpr cudnnDataType_t kFloat = CUDNN_DATA_FLOAT;
constexpr cudnnDataType_t kInt32 = CUDNN_DATA_INT32;
constexpr cudnnDataType_t kBool = CUDNN_DATA_BOOLEAN;

// The frontend's causal_mask: a right-bound diagonal band mask, top-left aligned, bound 0, as
// its CompositeDiagonalBandMaskNode lowers it (cuDNN before 9.21): keep score (i, j) when i >= j.
// The index generators compute in the graph's type (float), the comparison in boolean.
Tensor causal_mask(GraphBuilder& g, const Layout& l, const Tensor& score, float mask_value) {
  const Dims d = l.scores(), s = l.scores_strides();
  const Tensor fill = g.scalar("negative_inf", mask_value);
  const Tensor row =
      g.apply("gen_row_index", CUDNN_POINTWISE_GEN_INDEX, kFloat, {score}, kInt32, d, s, 2);
  const Tensor col =
      g.apply("gen_col_index", CUDNN_POINTWISE_GEN_INDEX, kFloat, {score}, kInt32, d, s, 3);
  const Tensor keep = g.apply("row>col", CUDNN_POINTWISE_CMP_GE, kBool, {row, col}, kBool, d, s);
  const Tensor out = g.temp("right_bound_diagonal_mask::Y", kFloat, d, s);
  g.pointwise("binary_select", CUDNN_POINTWISE_BINARY_SELECT, kFloat, {score, fill, keep}, out);
  return out;
}

// The frontend's padding_mask: keep score (i, j) when i < seq_len_q[b] and j < seq_len_kv[b].
// Here the index generators compute in int32.
Tensor padding_mask(GraphBuilder& g, const Layout& l, const Tensor& score, const Tensor& seq_q,
                    const Tensor& seq_kv, float mask_value, const std::string& suffix) {
  const Dims d = l.scores(), s = l.scores_strides();
  const Tensor row =
      g.apply("gen_row_idx" + suffix, CUDNN_POINTWISE_GEN_INDEX, kInt32, {score}, kInt32, d, s, 2);
  const Tensor col =
      g.apply("gen_col_idx" + suffix, CUDNN_POINTWISE_GEN_INDEX, kInt32, {score}, kInt32, d, s, 3);
  const Tensor row_in =
      g.apply("lt_row_sq" + suffix, CUDNN_POINTWISE_CMP_LT, kBool, {row, seq_q}, kBool, d, s);
  const Tensor col_in =
      g.apply("lt_col_skv" + suffix, CUDNN_POINTWISE_CMP_LT, kBool, {col, seq_kv}, kBool, d, s);
  const Tensor keep = g.apply("and_row_col" + suffix, CUDNN_POINTWISE_LOGICAL_AND, kBool,
                              {row_in, col_in}, kBool, d, s);
  const Tensor fill = g.scalar("negative_inf" + suffix, mask_value);
  return g.apply("select" + suffix, CUDNN_POINTWISE_BINARY_SELECT, kFloat, {score, fill, keep},
                 kFloat, d, s);
}

}  // namespace

// The frontend's CompositeSDPANode in training mode (generate_stats) with a fused attn_scale and
// optionally causal_mask, its softmax the CompositeSoftmaxNode (cuDNN before 9.21).
void build_forward(Graph& graph, const Layout& l, const GraphOptions& o) {
  GraphBuilder g(graph, o);
  const Tensor q = g.tensor("Q", kQ, o.io, l.q(), l.q_strides());
  const Tensor kt = g.tensor("K", kK, o.io, l.kt(), l.kt_strides());
  const Tensor v = g.tensor("V", kV, o.io, l.v(), l.v_strides());
  const Tensor out = g.tensor("O", kO, o.io, l.v(), l.v_strides());
  const Tensor stats = g.tensor("Stats", kStats, kFloat, l.rows(), l.rows_strides());
  const Dims sd = l.scores(), ss = l.scores_strides(), rd = l.rows(), rs = l.rows_strides();

  const Tensor s = g.temp("bmm1::C", kFloat, sd, ss);
  g.matmul("bmm1", q, kt, s);
  const Tensor scale = g.scalar("attn_scale", o.scale);
  Tensor last = g.apply("attn_scale", CUDNN_POINTWISE_MUL, kFloat, {s, scale}, kFloat, sd, ss);
  if (o.causal) last = causal_mask(g, l, last, o.mask_value);

  const Tensor max = g.temp("Max::Y", kFloat, rd, rs);
  g.reduction("Max", CUDNN_REDUCE_TENSOR_MAX, last, max);
  const Tensor shifted = g.apply("sub", CUDNN_POINTWISE_SUB, kFloat, {last, max}, kFloat, sd, ss);
  const Tensor e = g.apply("exp", CUDNN_POINTWISE_EXP, kFloat, {shifted}, kFloat, sd, ss);
  const Tensor sum = g.temp("SumExp", kFloat, rd, rs);
  g.reduction("sum", CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const Tensor log_sum = g.apply("log", CUDNN_POINTWISE_LOG, kFloat, {sum}, kFloat, rd, rs);
  g.pointwise("add", CUDNN_POINTWISE_ADD, kFloat, {max, log_sum}, stats);
  // P in the I/O type: the backend takes the second matmul's A in the type of V.
  const Tensor p = g.temp("softmax::S", o.io, sd, ss);
  g.pointwise("div", CUDNN_POINTWISE_DIV, kFloat, {e, sum}, p);
  g.matmul("bmm2", p, v, out);
}

// The frontend's CompositeSDPABackwardNode without dropout or bias, for cuDNN 9 (dQ through a
// float32 accumulator, not the dP workspace of 8.9), with its padding-mask workaround.
void build_backward(Graph& graph, const Layout& l, const GraphOptions& o) {
  GraphBuilder g(graph, o);
  const Tensor q = g.tensor("Q", kQ, o.io, l.q(), l.q_strides());
  const Tensor kt = g.tensor("K", kK, o.io, l.kt(), l.kt_strides());
  const Tensor vt = g.tensor("V", kV, o.io, l.vt(), l.vt_strides());
  const Tensor out = g.tensor("O", kO, o.io, l.v(), l.v_strides());
  const Tensor stats = g.tensor("Stats", kStats, kFloat, l.rows(), l.rows_strides());
  const Tensor d_o = g.tensor("dO", kDO, o.io, l.v(), l.v_strides());
  const Tensor dq = g.tensor("dQ", kDQ, o.io, l.q(), l.q_strides());
  const Tensor dk = g.tensor("dK", kDK, o.io, l.q(), l.q_strides());
  const Tensor dv = g.tensor("dV", kDV, o.io, l.v(), l.v_strides());
  const Dims sd = l.scores(), ss = l.scores_strides(), rd = l.rows(), rs = l.rows_strides();
  const Tensor scale = g.scalar("attn_scale", o.scale);  // one tensor for both of its uses

  Tensor seq_q, seq_kv;
  const Tensor *m_q = nullptr, *m_kv = nullptr;  // the matmuls' size overrides
  if (o.padding_workaround) {
    seq_q = g.tensor("seq_len_q", kSeqLenQ, kInt32, l.per_batch(), {1, 1, 1, 1});
    seq_kv = g.tensor("seq_len_kv", kSeqLenKV, kInt32, l.per_batch(), {1, 1, 1, 1});
    m_q = &seq_q;
    m_kv = &seq_kv;
  }

  // softmax_sum = rowsum(dO * O), float32 in the workspace.
  const Tensor do_o =
      g.apply("mul_dO_O", CUDNN_POINTWISE_MUL, kFloat, {d_o, out}, kFloat, l.v(), l.do_o_strides());
  const Tensor row_sum = g.temp("reduce_dO_o::Y", kFloat, rd, rs);
  g.reduction("reduce_dO_o", CUDNN_REDUCE_TENSOR_ADD, do_o, row_sum);
  const Tensor softmax_sum = g.tensor("softmax_sum", kSoftmaxSum, kFloat, rd, rs);
  const Tensor one = g.scalar("one", 1.0f);
  g.pointwise("scale_dropout_inv", CUDNN_POINTWISE_MUL, kFloat, {row_sum, one}, softmax_sum);

  // P = exp(scale * Q K^T, masked, - stats), recomputed.
  const Tensor s = g.temp("matmul_Q_KT::C", kFloat, sd, ss);
  g.matmul("matmul_Q_KT", q, kt, s, m_q, m_kv);
  Tensor last =
      g.apply("mul_s_attn_scale", CUDNN_POINTWISE_MUL, kFloat, {s, scale}, kFloat, sd, ss);
  if (o.padding_workaround)
    last = padding_mask(g, l, last, seq_q, seq_kv, o.mask_value, "_padding");
  last = g.apply("sub_s_m", CUDNN_POINTWISE_SUB, kFloat, {last, stats}, kFloat, sd, ss);
  if (o.second_padding) {
    last = padding_mask(g, l, last, seq_q, seq_kv, o.mask_value, "_2nd_padding");
  }
  if (o.causal) last = causal_mask(g, l, last, o.mask_value);
  const Tensor p = g.apply("exp_s", CUDNN_POINTWISE_EXP, kFloat, {last}, kFloat, sd, ss);

  // dV = P^T dO.
  const Tensor pt = g.temp("reshape_p::Y", o.io, sd, l.scores_t_strides());
  g.reshape("reshape_p", p, pt);
  g.matmul("matmul_pT_dO", pt, d_o, dv, m_kv, nullptr, m_q);

  // dS = P * (dO V^T - softmax_sum) * scale.
  const Tensor dp = g.temp("matmul_dO_VT::C", kFloat, sd, ss);
  g.matmul("matmul_dO_VT", d_o, vt, dp, m_q, m_kv);
  last =
      g.apply("sub_dP_softmax_sum", CUDNN_POINTWISE_SUB, kFloat, {dp, softmax_sum}, kFloat, sd, ss);
  last = g.apply("mul_dP_exp_s", CUDNN_POINTWISE_MUL, kFloat, {last, p}, kFloat, sd, ss);
  const Tensor ds =
      g.apply("mul_dS_attn_scale", CUDNN_POINTWISE_MUL, kFloat, {last, scale}, kFloat, sd, ss);

  // dK = dS^T Q.
  const Tensor dst = g.temp("reshape_dS::Y", o.io, sd, l.scores_t_strides());
  g.reshape("reshape_dS", ds, dst);
  g.matmul("matmul_dST_Q", dst, q, dk, m_kv, nullptr, m_q);

  // dQ = dS K into a float32 accumulator, then rounded to dQ. The frontend leaves K's view
  // untyped, so it takes the intermediate type (float).
  const Tensor k = g.temp("reshape_k::Y", kFloat, l.q(), l.q_strides());
  g.reshape("reshape_k", kt, k);
  const Tensor dq_accum = g.tensor("dQ_accum", kDQAccum, kFloat, l.q(), l.dq_accum_strides());
  g.matmul("matmul_dS_K", ds, k, dq_accum, m_q, nullptr, m_kv);
  g.pointwise("identity_dQ", CUDNN_POINTWISE_IDENTITY, kFloat, {dq_accum}, dq);
}

// Finalises the operation graph: cuDNN checks the graph as a whole here. Returns why it refused,
// empty when it did not. The handle may be null (a device-less build; cuDNN 9.10 takes that).
std::string finalize_graph(Graph& g, cudnnHandle_t handle, const char* direction) {
  g.op_graph = g.owned.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  FA_SET(g.op_graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
         static_cast<std::int64_t>(g.ops.size()), g.ops.data());
  if (handle != nullptr) {
    FA_SET(g.op_graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  }
  const cudnnStatus_t status = cudnnBackendFinalize(g.op_graph);
  if (status == CUDNN_STATUS_SUCCESS) return {};
  return std::string("cuDNN does not accept the fused attention ") + direction +
         " graph: " + status_text(status);
}

// Asks the heuristics (mode A, then the fallback list) for the finalised graph and keeps the
// first engine config that finalises into a plan, as the frontend's
// build_plans(HEURISTICS_CHOICE) does. Mode B is left out: for these graphs cuDNN answers it by
// redirecting to mode A, which would compile the same failing configs twice. Without a handle,
// `device_properties` stands in for it. Returns why no plan was built, empty when one was.
std::string build_plan(Graph& g, cudnnHandle_t handle, cudnnBackendDescriptor_t device_properties,
                       const char* direction) {
  std::string failures;
  int tried = 0;
  const std::pair<cudnnBackendHeurMode_t, const char*> modes[] = {
      {CUDNN_HEUR_MODE_A, "A"}, {CUDNN_HEUR_MODE_FALLBACK, "fallback"}};
  for (const auto& [mode, mode_name] : modes) {
    Descriptor heuristics(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    FA_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR,
           1, &g.op_graph);
    FA_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (device_properties != nullptr) {
      FA_SET(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_DEVICEPROP, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &device_properties);
    }
    cudnnStatus_t status = cudnnBackendFinalize(heuristics.get());
    if (status != CUDNN_STATUS_SUCCESS) {
      failures += std::string("; heuristics ") + mode_name + ": " + status_text(status);
      continue;
    }
    // The count first, then the configs: those cuDNN's support checks rejected are left out.
    std::int64_t count = 0;
    FA_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                      CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr));
    std::vector<Descriptor> configs;
    std::vector<cudnnBackendDescriptor_t> raw;
    configs.reserve(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      raw.push_back(configs.back().get());
    }
    std::int64_t returned = 0;
    if (count > 0) {
      FA_CHECK(cudnnBackendGetAttribute(heuristics.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &returned,
                                        raw.data()));
    }
    if (returned == 0) failures += std::string("; heuristics ") + mode_name + ": no engine";
    for (std::int64_t i = 0; i < returned && i < count; ++i) {
      ++tried;
      Descriptor plan(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      // Deprecated on the plan in recent cuDNN 9 releases (recent frontends no longer set it)
      // but wanted by the first ones: set where taken, and a release that refuses it is no
      // reason to refuse the plan.
      if (handle != nullptr) {
        (void)cudnnBackendSetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                                       CUDNN_TYPE_HANDLE, 1, &handle);
      }
      FA_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &raw[static_cast<std::size_t>(i)]);
      status = cudnnBackendFinalize(plan.get());
      if (status != CUDNN_STATUS_SUCCESS) {
        failures += std::string("; ") + mode_name + " config " + std::to_string(i) + ": " +
                    status_text(status);
        continue;
      }
      g.owned.adopt(configs[static_cast<std::size_t>(i)]);
      g.plan = g.owned.adopt(plan);
      std::int64_t bytes = 0, elements = 0;
      FA_CHECK(cudnnBackendGetAttribute(g.plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                        CUDNN_TYPE_INT64, 1, &elements, &bytes));
      g.plan_workspace_bytes = static_cast<std::size_t>(bytes);
      g.lines.push_back(std::string("plan: heuristics ") + mode_name + ", config " +
                        std::to_string(i) + " of " + std::to_string(returned) + ", workspace " +
                        std::to_string(bytes) + " bytes");
      return {};
    }
  }
  return std::string("cuDNN has no engine for the fused attention ") + direction + " graph (" +
         std::to_string(tried) + " engine configs tried" + failures + ")";
}

}  // namespace mixlab::cuda::attention_graph
