#include "engine/backend/cuda/fused_attention.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/backend/cuda/cuda_check.h"

namespace mixlab::cuda {

namespace {

// Unique ids of the tensors MixLab passes at execution (and of the backward's scratch); the
// graphs' virtual tensors and fused scalars are numbered from kFirstInternalUid.
constexpr std::int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kStats = 5, kDO = 6, kDQ = 7, kDK = 8,
                       kDV = 9, kDQAccum = 10, kSoftmaxSum = 11, kSeqLenQ = 12, kSeqLenKV = 13;
constexpr std::int64_t kFirstInternalUid = 100;
constexpr std::int64_t kTensorAlignment = 16;   // what the frontend declares for every tensor
constexpr std::size_t kScratchAlignment = 256;  // the backward's scratch and cuDNN's workspace

std::size_t align_up(std::size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
}

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

#define FA_CHECK(expr) check_cudnn((expr), #expr, __FILE__, __LINE__)
// Sets one attribute; the message names the attribute.
#define FA_SET(desc, attr, type, count, value)                                                  \
  check_cudnn(cudnnBackendSetAttribute((desc), (attr), (type), (count), (value)), "set " #attr, \
              __FILE__, __LINE__)

// One backend descriptor, destroyed with its owner unless released.
class Descriptor {
 public:
  explicit Descriptor(cudnnBackendDescriptorType_t type) {
    FA_CHECK(cudnnBackendCreateDescriptor(type, &desc_));
  }
  ~Descriptor() {
    if (desc_ != nullptr) cudnnBackendDestroyDescriptor(desc_);
  }
  Descriptor(Descriptor&& other) noexcept : desc_(std::exchange(other.desc_, nullptr)) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  Descriptor& operator=(Descriptor&&) = delete;

  cudnnBackendDescriptor_t get() const { return desc_; }
  cudnnBackendDescriptor_t release() { return std::exchange(desc_, nullptr); }

 private:
  cudnnBackendDescriptor_t desc_ = nullptr;
};

// Every descriptor of one graph, destroyed in the reverse order of their creation: the plan
// before its engine config and operation graph, operations before their tensors.
class Descriptors {
 public:
  Descriptors() = default;
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;
  ~Descriptors() {
    for (auto it = list_.rbegin(); it != list_.rend(); ++it) {
      if (*it != nullptr) cudnnBackendDestroyDescriptor(*it);
    }
  }
  // The slot is made first, so that a failure leaks nothing.
  cudnnBackendDescriptor_t create(cudnnBackendDescriptorType_t type) {
    list_.push_back(nullptr);
    FA_CHECK(cudnnBackendCreateDescriptor(type, &list_.back()));
    return list_.back();
  }
  cudnnBackendDescriptor_t adopt(Descriptor& desc) {
    list_.push_back(nullptr);
    return list_.back() = desc.release();
  }

 private:
  std::vector<cudnnBackendDescriptor_t> list_;
};

using Dims = std::array<std::int64_t, 4>;

// cuDNN's [b, h, s, d] views of MixLab's (batch, steps, heads * dim) buffers, and the shapes of
// the graphs' inner tensors. K and V enter the matmuls transposed (KT = [b, h, dk, s]): the
// frontend swaps their last two dims and strides, as the backend's matmul takes B as [k, n].
struct Layout {
  explicit Layout(const FusedAttentionShape& s)
      : b(s.batch), h(s.heads), n(s.steps), dk(s.key_dim), dv(s.value_dim) {}
  std::int64_t b, h, n, dk, dv;

  Dims q() const { return {b, h, n, dk}; }
  Dims q_strides() const { return {n * h * dk, dk, h * dk, 1}; }
  Dims kt() const { return {b, h, dk, n}; }
  Dims kt_strides() const { return {n * h * dk, dk, 1, h * dk}; }
  Dims v() const { return {b, h, n, dv}; }
  Dims v_strides() const { return {n * h * dv, dv, h * dv, 1}; }
  Dims vt() const { return {b, h, dv, n}; }
  Dims vt_strides() const { return {n * h * dv, dv, 1, h * dv}; }
  Dims scores() const { return {b, h, n, n}; }
  Dims scores_strides() const { return {h * n * n, n * n, n, 1}; }
  Dims scores_t_strides() const { return {h * n * n, n * n, 1, n}; }  // [b, h, s_kv, s_q]
  Dims rows() const { return {b, h, n, 1}; }
  Dims rows_strides() const { return {h * n, n, 1, 1}; }
  // dO * O before its row sum: the frontend's strides, mixing BHSD and BSHD (virtual: no layout).
  Dims do_o_strides() const { return {h * n * dv, n * dv, h * dv, 1}; }
  Dims dq_accum_strides() const { return {h * n * dk, n * dk, dk, 1}; }  // BHSD, dense
  Dims per_batch() const { return {b, 1, 1, 1}; }
};

// What the graphs depend on besides the shape: the frontend's choices for the cuDNN loaded now.
struct GraphOptions {
  cudnnDataType_t io = CUDNN_DATA_BFLOAT16;
  float scale = 1.0f;    // 1 / sqrt(key_dim), as Keras's MultiHeadAttention scales
  float mask_value = 0;  // -inf from cuDNN 9.10, the lowest float before (the frontend's choice)
  bool causal = false;
  bool set_deterministic = false;   // CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC exists from 9.11
  bool padding_workaround = false;  // see graph_options
  bool second_padding = false;      // padding applied again after the stats, cuDNN 9.0 to 9.9
};

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

// A fused scalar: its value travels in the variant pack by address, not in device memory.
struct Scalar {
  std::int64_t uid;
  float value;
};

// One operation graph and, once built, its plan.
struct Graph {
  Descriptors owned;
  std::vector<cudnnBackendDescriptor_t> ops;
  std::vector<Scalar> scalars;     // not resized after building: execute passes their addresses
  std::vector<std::string> lines;  // one per operation, for the dry run
  cudnnBackendDescriptor_t op_graph = nullptr;
  cudnnBackendDescriptor_t plan = nullptr;
  std::size_t plan_workspace_bytes = 0;
};

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
  // A float scalar fused by value, as the frontend's Tensor_attributes(float): dims and strides
  // of ones in the rank of the operation's other tensors.
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
    if (options_.set_deterministic) {
      const bool deterministic = false;  // the frontend's default
      FA_SET(desc, CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC, CUDNN_TYPE_BOOLEAN, 1, &deterministic);
    }
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
      // Deprecated on the plan in recent cuDNN 9 releases but required by the first ones; the
      // frontend set it until version 1.18.
      if (handle != nullptr) {
        FA_SET(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
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

// The backward's scratch at the start of the workspace, cuDNN's workspace after it, each
// 256-byte aligned: the frontend's dQ accumulator and softmax_sum, and the workaround's
// sequence lengths (seq_len_q then seq_len_kv, 16 bytes apart at least).
struct Scratch {
  std::size_t dq_accum = 0, softmax_sum = 0, seq_lens = 0, cudnn = 0;  // offsets
  std::size_t dq_accum_bytes = 0, seq_len_kv_offset = 0, seq_lens_bytes = 0, total = 0;
};

Scratch scratch_layout(const FusedAttentionShape& s, const GraphOptions& o,
                       std::size_t plan_bytes) {
  const auto rows = static_cast<std::size_t>(s.batch) * s.heads * s.steps;
  Scratch w;
  w.dq_accum_bytes = rows * s.key_dim * sizeof(float);
  w.softmax_sum = align_up(w.dq_accum_bytes);
  w.seq_lens = w.softmax_sum + align_up(rows * sizeof(float));
  if (o.padding_workaround) {
    w.seq_len_kv_offset = (s.batch * sizeof(std::int32_t) + 15) / 16 * 16;
    w.seq_lens_bytes = w.seq_len_kv_offset + s.batch * sizeof(std::int32_t);
  }
  w.cudnn = w.seq_lens + align_up(w.seq_lens_bytes);
  w.total = w.cudnn + plan_bytes;
  return w;
}

void require_aligned(const void* ptr, const char* name) {
  if (reinterpret_cast<std::uintptr_t>(ptr) % kTensorAlignment != 0) {
    throw BackendError(std::string(name) + " is not 16-byte aligned (cuDNN's attention tensors " +
                       "declare 16)");
  }
}

void execute(cudnnHandle_t handle, const Graph& g, std::vector<std::int64_t> uids,
             std::vector<void*> pointers, void* workspace, cudaStream_t stream) {
  for (const Scalar& s : g.scalars) {
    uids.push_back(s.uid);
    pointers.push_back(const_cast<float*>(&s.value));  // read by cuDNN, never written
  }
  CUDNN_CHECK(cudnnSetStream(handle, stream));
  Descriptor pack(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  FA_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR,
         static_cast<std::int64_t>(pointers.size()), pointers.data());
  FA_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64,
         static_cast<std::int64_t>(uids.size()), uids.data());
  FA_SET(pack.get(), CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  FA_CHECK(cudnnBackendFinalize(pack.get()));
  FA_CHECK(cudnnBackendExecute(handle, g.plan, pack.get()));
}

// Prefixes a message with `what` unless it already starts with it.
[[noreturn]] void rethrow_with(const std::string& what, const std::exception& e) {
  const std::string_view message = e.what();
  if (message.substr(0, what.size()) == what) throw BackendError(std::string(message));
  throw BackendError(what + ": " + std::string(message));
}

}  // namespace

struct FusedAttention::Impl {
  Impl() = default;
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;
  ~Impl() {
    if (seq_lens_host != nullptr) cudaFreeHost(seq_lens_host);
  }

  cudnnHandle_t handle = nullptr;
  FusedAttentionShape shape;
  std::string what;
  GraphOptions options;
  Graph fwd, bwd;
  Scratch scratch;
  bool zero_dq_accum = false;  // cuDNN before 9.6 expects the accumulator zeroed
  // The workaround's sequence lengths in pinned memory, laid out as in the workspace: copied
  // there by each backward, which a CUDA graph can capture (a copy from pageable memory it
  // could not).
  std::int32_t* seq_lens_host = nullptr;
};

std::string fused_attention_unsupported(const FusedAttentionShape& s, int cc_major, int cc_minor) {
  const int version = static_cast<int>(cudnnGetVersion());
  if (s.dtype == DType::f32) return "float32 (cuDNN's fused attention takes float16 or bfloat16)";
  if (s.batch <= 0 || s.steps <= 0 || s.heads <= 0 || s.key_dim <= 0 || s.value_dim <= 0) {
    return "an empty shape";
  }
  if (cc_major < 8) {
    return "compute capability " + std::to_string(cc_major) + "." + std::to_string(cc_minor) +
           " (cuDNN's fused attention needs 8.0 or newer)";
  }
  if (version < 90000) return "cuDNN " + std::to_string(version) + " (these graphs need cuDNN 9)";
  if (version == 91000 || version == 91001) {
    return "cuDNN 9.10.0 or 9.10.1 (known bugs in fused attention; 9.10.2 or newer works)";
  }
  if (s.key_dim % 8 != 0 || s.value_dim % 8 != 0) {
    return "key_dim " + std::to_string(s.key_dim) + ", value_dim " + std::to_string(s.value_dim) +
           " (head sizes must be multiples of 8)";
  }
  // The backward's limits, the tighter: 256 on Hopper, 128 elsewhere (Blackwell also takes
  // key_dim 192 with value_dim 128 from cuDNN 9.11).
  const int limit = cc_major == 9 ? 256 : 128;
  const bool blackwell_192 =
      cc_major == 10 && version >= 91100 && s.key_dim == 192 && s.value_dim == 128;
  if ((s.key_dim > limit || s.value_dim > limit) && !blackwell_192) {
    return "key_dim " + std::to_string(s.key_dim) + ", value_dim " + std::to_string(s.value_dim) +
           " (head sizes above " + std::to_string(limit) + " on compute capability " +
           std::to_string(cc_major) + "." + std::to_string(cc_minor) + ")";
  }
  if (cc_major == 9 && version >= 91100 && version < 91300 && s.key_dim > 128 && s.key_dim <= 192 &&
      s.value_dim > 64 && s.value_dim <= 128 && s.value_dim != 128 && s.key_dim != 192) {
    return "key_dim " + std::to_string(s.key_dim) + " with value_dim " +
           std::to_string(s.value_dim) + " on cuDNN 9.11 and 9.12 (value_dim must be 128)";
  }
  if (s.steps == 1) return "one step (cuDNN's fused attention backward needs two or more)";
  return {};
}

std::vector<std::string> fused_attention_dry_run(const FusedAttentionShape& shape,
                                                 const std::string& what,
                                                 cudnnBackendDescriptor_t device_properties) {
  try {
    const GraphOptions options = graph_options(shape);
    const Layout layout(shape);
    Graph fwd, bwd;
    build_forward(fwd, layout, options);
    build_backward(bwd, layout, options);
    std::vector<std::string> lines;
    for (auto [graph, direction] : {std::pair{&fwd, "forward"}, std::pair{&bwd, "backward"}}) {
      // Both graphs, whatever the first gives: a dry run reports rather than stops.
      std::string why = finalize_graph(*graph, nullptr, direction);
      if (why.empty() && device_properties != nullptr) {
        why = build_plan(*graph, nullptr, device_properties, direction);
      }
      for (const std::string& line : graph->lines) lines.push_back(direction + (" " + line));
      if (!why.empty()) lines.push_back(direction + (" no plan: " + why));
    }
    return lines;
  } catch (const std::exception& e) {
    rethrow_with(what, e);
  }
}

FusedAttention::FusedAttention(cudnnHandle_t handle, const FusedAttentionShape& shape,
                               std::string what)
    : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.handle = handle;
  m.shape = shape;
  m.what = std::move(what);
  try {
    if (handle == nullptr) throw BackendError("no cuDNN handle");
    int device = 0, major = 0, minor = 0;
    CUDA_CHECK(cudaGetDevice(&device));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const std::string why = fused_attention_unsupported(shape, major, minor);
    if (!why.empty()) throw BackendError("cuDNN's fused attention cannot run " + why);

    m.options = graph_options(shape);
    const Layout layout(shape);
    build_forward(m.fwd, layout, m.options);
    build_backward(m.bwd, layout, m.options);
    for (auto [graph, direction] : {std::pair{&m.fwd, "forward"}, std::pair{&m.bwd, "backward"}}) {
      std::string why = finalize_graph(*graph, handle, direction);
      if (why.empty()) why = build_plan(*graph, handle, nullptr, direction);
      if (!why.empty()) throw BackendError(why);
    }
    m.scratch = scratch_layout(shape, m.options, m.bwd.plan_workspace_bytes);
    m.zero_dq_accum = cudnnGetVersion() < 90600;
    if (m.options.padding_workaround) {
      CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&m.seq_lens_host), m.scratch.seq_lens_bytes,
                               cudaHostAllocDefault));
      for (int b = 0; b < shape.batch; ++b) {
        m.seq_lens_host[b] = shape.steps;
        m.seq_lens_host[m.scratch.seq_len_kv_offset / sizeof(std::int32_t) + b] = shape.steps;
      }
    }
  } catch (const std::exception& e) {
    rethrow_with(m.what, e);
  }
}

FusedAttention::~FusedAttention() = default;
FusedAttention::FusedAttention(FusedAttention&& other) noexcept = default;
FusedAttention& FusedAttention::operator=(FusedAttention&& other) noexcept = default;

std::size_t FusedAttention::workspace_bytes() const {
  return std::max(impl_->fwd.plan_workspace_bytes, impl_->scratch.total);
}

void FusedAttention::forward(const void* q, const void* k, const void* v, void* o, float* stats,
                             void* workspace, cudaStream_t stream) const {
  const Impl& m = *impl_;
  try {
    const std::pair<const void*, const char*> tensors[] = {
        {q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {stats, "stats"}};
    for (const auto& [ptr, name] : tensors) require_aligned(ptr, name);
    const auto in = [](const void* ptr) { return const_cast<void*>(ptr); };
    execute(m.handle, m.fwd, {kQ, kK, kV, kO, kStats}, {in(q), in(k), in(v), o, stats}, workspace,
            stream);
  } catch (const std::exception& e) {
    rethrow_with(m.what, e);
  }
}

void FusedAttention::backward(const void* q, const void* k, const void* v, const void* o,
                              const void* d_o, const float* stats, void* dq, void* dk, void* dv,
                              void* workspace, cudaStream_t stream) const {
  const Impl& m = *impl_;
  try {
    const std::pair<const void*, const char*> tensors[] = {
        {q, "q"},   {k, "k"},   {v, "v"},   {o, "o"},         {d_o, "dO"},
        {dq, "dq"}, {dk, "dk"}, {dv, "dv"}, {stats, "stats"}, {workspace, "workspace"}};
    for (const auto& [ptr, name] : tensors) require_aligned(ptr, name);
    char* base = static_cast<char*>(workspace);
    const Scratch& w = m.scratch;
    if (m.zero_dq_accum) {
      CUDA_CHECK(cudaMemsetAsync(base + w.dq_accum, 0, w.dq_accum_bytes, stream));
    }
    if (m.seq_lens_host != nullptr) {
      CUDA_CHECK(cudaMemcpyAsync(base + w.seq_lens, m.seq_lens_host, w.seq_lens_bytes,
                                 cudaMemcpyHostToDevice, stream));
    }
    const auto in = [](const void* ptr) { return const_cast<void*>(ptr); };
    std::vector<std::int64_t> uids = {kQ,  kK,  kV,  kO,       kStats,     kDO,
                                      kDQ, kDK, kDV, kDQAccum, kSoftmaxSum};
    std::vector<void*> pointers = {in(q), in(k), in(v), in(o), in(stats), in(d_o), dq, dk, dv};
    pointers.insert(pointers.end(), {base + w.dq_accum, base + w.softmax_sum});
    if (m.options.padding_workaround) {
      uids.insert(uids.end(), {kSeqLenQ, kSeqLenKV});
      pointers.insert(pointers.end(), {base + w.seq_lens, base + w.seq_lens + w.seq_len_kv_offset});
    }
    execute(m.handle, m.bwd, std::move(uids), std::move(pointers), base + w.cudnn, stream);
  } catch (const std::exception& e) {
    rethrow_with(m.what, e);
  }
}

}  // namespace mixlab::cuda
