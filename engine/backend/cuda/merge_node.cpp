#include "engine/backend/cuda/merge_node.h"

#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/kernels.h"

namespace mixlab::cuda {

namespace {

// A Concatenate's copy of one input: `rows` rows (the batch and the axes before the axis) of
// `width` bytes, one row each `pitch` bytes of the output, starting `offset` bytes in.
struct ConcatCopy {
  std::size_t rows = 0, width = 0, pitch = 0, offset = 0;
};

ConcatCopy concat_copy(const DTensor& y, std::span<const DTensor* const> xs, int axis, int i) {
  const std::size_t bytes = dtype_bytes(y.dtype);
  const auto d = static_cast<std::size_t>(axis) + 1;  // with the batch
  std::size_t rows = 1, inner = 1;
  for (std::size_t k = 0; k < d; ++k) rows *= static_cast<std::size_t>(y.dims[k]);
  for (std::size_t k = d + 1; k < y.dims.size(); ++k) inner *= static_cast<std::size_t>(y.dims[k]);
  std::size_t before = 0;
  for (int j = 0; j < i; ++j)
    before += static_cast<std::size_t>(xs[static_cast<std::size_t>(j)]->dims[d]);
  const auto extent = static_cast<std::size_t>(xs[static_cast<std::size_t>(i)]->dims[d]);
  ConcatCopy c;
  c.rows = rows;
  c.width = extent * inner * bytes;
  c.pitch = static_cast<std::size_t>(y.dims[d]) * inner * bytes;
  c.offset = before * inner * bytes;
  return c;
}

std::vector<const void*> pointers(std::span<const DTensor* const> xs) {
  std::vector<const void*> p;
  for (const DTensor* x : xs) p.push_back(x->data);
  return p;
}

// How each input spreads over the output (a squeeze-and-excitation Multiply's 1x1xC).
std::array<Broadcast, kernels::kMaxMergeInputs> broadcasts(std::span<const DTensor* const> xs,
                                                           const DTensor& y) {
  std::array<Broadcast, kernels::kMaxMergeInputs> b{};
  for (std::size_t i = 0; i < xs.size() && i < b.size(); ++i)
    b[i] = broadcast_of(xs[i]->dims, y.dims);
  return b;
}

}  // namespace

MergeNode::MergeNode(const PlanNode& node, DType dtype)
    : CudaNode(node.layer, dtype, node.label),
      op_(node.merge),
      axis_(node.axis),
      relu_(node.activation == ActivationFn::relu) {
  if (node.activation != ActivationFn::linear && (!relu_ || op_ != MergeOp::add)) {
    throw BackendError(node.label + ": the CUDA backend fuses only a ReLU, into an Add");
  }
  const auto count = static_cast<int>(node.inputs.size());
  if (op_ != MergeOp::concatenate && count > kernels::kMaxMergeInputs) {
    throw BackendError(node.label + ": the CUDA backend merges at most " +
                       std::to_string(kernels::kMaxMergeInputs) + " inputs at once, this " +
                       std::string(to_string(op_)) + " has " + std::to_string(count));
  }
}

void MergeNode::forward(CudaContext&, const DTensor&, const DTensor&) {
  throw std::logic_error("MergeNode::forward: the executor calls forward_inputs()");
}

void MergeNode::backward(CudaContext&, const DTensor&, const DTensor&, const DTensor&,
                         const DTensor*) {
  throw std::logic_error("MergeNode::backward: the executor calls backward_input()");
}

void MergeNode::forward_inputs(CudaContext& ctx, std::span<const DTensor* const> xs,
                               const DTensor& y) const {
  if (op_ == MergeOp::concatenate) {
    for (int i = 0; i < static_cast<int>(xs.size()); ++i) {
      const ConcatCopy c = concat_copy(y, xs, axis_, i);
      CUDA_CHECK(cudaMemcpy2DAsync(static_cast<std::byte*>(y.data) + c.offset, c.pitch,
                                   xs[static_cast<std::size_t>(i)]->data, c.width, c.width, c.rows,
                                   cudaMemcpyDeviceToDevice, ctx.stream));
    }
    return;
  }
  const std::vector<const void*> in = pointers(xs);
  const auto spread = broadcasts(xs, y);
  kernels::merge_forward(op_, in.data(), static_cast<int>(in.size()), y.data, y.dtype, y.elements(),
                         ctx.stream, relu_, spread.data());
}

void MergeNode::backward_input(CudaContext& ctx, std::span<const DTensor* const> xs,
                               const DTensor& y, const DTensor& dy, int i,
                               const DTensor& dx) const {
  if (op_ == MergeOp::concatenate) {
    const ConcatCopy c = concat_copy(y, xs, axis_, i);
    CUDA_CHECK(cudaMemcpy2DAsync(dx.data, c.width,
                                 static_cast<const std::byte*>(dy.data) + c.offset, c.pitch,
                                 c.width, c.rows, cudaMemcpyDeviceToDevice, ctx.stream));
    return;
  }
  const std::vector<const void*> in = pointers(xs);
  const auto spread = broadcasts(xs, y);
  kernels::merge_backward(op_, in.data(), static_cast<int>(in.size()), y.data, dy.data, dx.data, i,
                          dx.dtype, dx.elements(), ctx.stream, relu_, spread.data());
}

}  // namespace mixlab::cuda
