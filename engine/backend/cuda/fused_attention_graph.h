// The operation graphs of cuDNN's fused attention (fused_attention.h), built on cuDNN's backend
// API as cudnn-frontend builds them for its sdpa and sdpa_backward nodes: the tensors' layouts,
// the descriptors' ownership, the two graphs, their finalisation and their plans. Internal to
// fused_attention.cpp (and its dry run); nothing here runs a kernel.
#pragma once

#include <cudnn.h>

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cuda/fused_attention.h"

namespace mixlab::cuda::attention_graph {

// Unique ids of the tensors MixLab passes at execution (and of the backward's scratch); the
// graphs' virtual tensors and fused scalars are numbered from kFirstInternalUid.
constexpr std::int64_t kQ = 1, kK = 2, kV = 3, kO = 4, kStats = 5, kDO = 6, kDQ = 7, kDK = 8,
                       kDV = 9, kDQAccum = 10, kSoftmaxSum = 11, kSeqLenQ = 12, kSeqLenKV = 13;
constexpr std::int64_t kFirstInternalUid = 100;
constexpr std::int64_t kTensorAlignment = 16;   // what the frontend declares for every tensor
constexpr std::size_t kScratchAlignment = 256;  // the backward's scratch and cuDNN's workspace

// cuDNN's status with its own explanation (cudnnGetLastErrorString): for the graph API the
// status alone ("CUDNN_STATUS_NOT_SUPPORTED") rarely says which attribute or engine refused.
std::string status_text(cudnnStatus_t status);
// Throws BackendError naming the call unless `status` is success.
void check_cudnn(cudnnStatus_t status, const char* expr, const char* file, int line);

#define FA_CHECK(expr) \
  ::mixlab::cuda::attention_graph::check_cudnn((expr), #expr, __FILE__, __LINE__)
// Sets one attribute; the message names the attribute.
#define FA_SET(desc, attr, type, count, value)                                                    \
  ::mixlab::cuda::attention_graph::check_cudnn(                                                   \
      cudnnBackendSetAttribute((desc), (attr), (type), (count), (value)), "set " #attr, __FILE__, \
      __LINE__)

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

// The frontend's choices for `shape` and the cuDNN loaded now.
GraphOptions graph_options(const FusedAttentionShape& shape);

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

// The frontend's CompositeSDPANode in training mode (generate_stats) with a fused attn_scale and
// optionally causal_mask, its softmax the CompositeSoftmaxNode (cuDNN before 9.21).
void build_forward(Graph& graph, const Layout& l, const GraphOptions& o);
// The frontend's CompositeSDPABackwardNode without dropout or bias, for cuDNN 9 (dQ through a
// float32 accumulator, not the dP workspace of 8.9), with its padding-mask workaround.
void build_backward(Graph& graph, const Layout& l, const GraphOptions& o);

// Finalises the operation graph: cuDNN checks the graph as a whole here. Returns why it refused,
// empty when it did not. The handle may be null (a device-less build; cuDNN 9.10 takes that).
std::string finalize_graph(Graph& g, cudnnHandle_t handle, const char* direction);

// Asks the heuristics (mode A, then the fallback list) for the finalised graph and keeps the
// first engine config that finalises into a plan, as the frontend's
// build_plans(HEURISTICS_CHOICE) does. Mode B is left out: for these graphs cuDNN answers it by
// redirecting to mode A, which would compile the same failing configs twice. Without a handle,
// `device_properties` stands in for it. Returns why no plan was built, empty when one was.
std::string build_plan(Graph& g, cudnnHandle_t handle, cudnnBackendDescriptor_t device_properties,
                       const char* direction);

}  // namespace mixlab::cuda::attention_graph
