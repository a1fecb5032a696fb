// MultiHeadAttention's core, softmax(scale * Q K^T, causal mask optional) V, as cuDNN 9's fused
// flash-attention kernels: the forward writes each row's log-sum-exp for the backward. cuDNN
// offers these kernels only through its graph ("backend") API, as a graph of matmul, pointwise,
// reduction and reshape operations that its runtime-fusion engine recognises as attention. The
// graphs (fused_attention_graph.h) are the ones cudnn-frontend 1.23 builds for its sdpa and
// sdpa_backward nodes (include/cudnn_frontend/node/scaled_dot_product_flash_attention.h), op for
// op and tensor for tensor, since that is the pattern cuDNN's engine is built to match; the
// frontend itself is a header library that no distribution packages, so MixLab cannot depend on
// it.
#pragma once

#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "engine/core/precision.h"

namespace mixlab::cuda {

// MultiHeadAttention's core, as MixLab lays it out: q, k row-major (batch, steps, heads * key_dim),
// v, o, dO (batch, steps, heads * value_dim), in `dtype` (f16 or bf16); stats float32 (batch,
// heads, steps). Self-attention: one `steps` for queries and keys.
struct FusedAttentionShape {
  int batch = 0, steps = 0, heads = 0, key_dim = 0, value_dim = 0;
  bool causal = false;  // query i sees keys j <= i (the frontend's top-left causal mask)
  DType dtype = DType::bf16;
};

// Why cuDNN's fused attention cannot run `shape` on a GPU of compute capability major.minor with
// the cuDNN loaded now, by the limits cudnn-frontend checks before it builds these graphs (empty
// when it may; building the graphs decides the rest), e.g. "float32 (cuDNN's fused attention
// takes float16 or bfloat16)".
std::string fused_attention_unsupported(const FusedAttentionShape& shape, int cc_major,
                                        int cc_minor);

class FusedAttention {
 public:
  // Builds and finalises the forward (training, with stats) and backward execution plans on
  // `handle`; `what` (e.g. "attention (layer 3)") begins every error's message. A graph that
  // cuDNN cannot run (no engine for it) throws BackendError, and the caller falls back to its
  // own kernels.
  FusedAttention(cudnnHandle_t handle, const FusedAttentionShape& shape, std::string what);
  ~FusedAttention();
  FusedAttention(FusedAttention&& other) noexcept;
  FusedAttention& operator=(FusedAttention&& other) noexcept;
  FusedAttention(const FusedAttention&) = delete;
  FusedAttention& operator=(const FusedAttention&) = delete;

  // The larger of the two plans' workspaces, the backward's scratch included.
  std::size_t workspace_bytes() const;
  // o = attention(q, k, v); stats = each query row's log-sum-exp of its scaled, masked scores.
  // On `stream` (set on the handle), without host synchronisation: capturable in a CUDA graph.
  // Every pointer 16-byte aligned; workspace at least workspace_bytes(), 256-byte aligned.
  void forward(const void* q, const void* k, const void* v, void* o, float* stats, void* workspace,
               cudaStream_t stream) const;
  // dq, dk, dv from d_o and the forward's q, k, v, o and stats (all overwritten, in `dtype`).
  void backward(const void* q, const void* k, const void* v, const void* o, const void* d_o,
                const float* stats, void* dq, void* dk, void* dv, void* workspace,
                cudaStream_t stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The constructor without a GPU, for checks and logs: creates and finalises every tensor and
// operation descriptor of both graphs as the cuDNN loaded now would get them, and both operation
// graphs without a handle (cuDNN 9.10 and later allow that); returns one line per operation. With
// `device_properties` (a finalised CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR, e.g. from a GPU's JSON)
// it also asks the heuristics and builds the plans for that device, reporting per graph the plan
// or why there is none; the last step needs the CUDA driver. Other failures throw BackendError,
// as in the constructor.
std::vector<std::string> fused_attention_dry_run(
    const FusedAttentionShape& shape, const std::string& what,
    cudnnBackendDescriptor_t device_properties = nullptr);

}  // namespace mixlab::cuda
