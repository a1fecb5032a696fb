#include "engine/backend/cuda/fused_attention.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/fused_attention_graph.h"

namespace mixlab::cuda {

using namespace attention_graph;

namespace {

std::size_t align_up(std::size_t bytes) {
  return (bytes + kScratchAlignment - 1) / kScratchAlignment * kScratchAlignment;
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
        {q, "q"}, {k, "k"}, {v, "v"}, {o, "o"}, {stats, "stats"}, {workspace, "workspace"}};
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
