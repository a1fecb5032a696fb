// MixLab's CUDA kernels for the merge layers (kernels.h): Add, Subtract, Multiply, Average and
// Maximum forward and backward with engine/ops/merge.h's math, and the gradient accumulation
// of a tensor read by several layers. Concatenate is strided copies (cudaMemcpy2DAsync).
#include "engine/backend/cuda/kernels.h"

#include "engine/backend/cuda/kernels_common.cuh"
#include "engine/ops/merge.h"

namespace mixlab::cuda::kernels {

namespace {

using namespace detail;

// The inputs of one launch, by value (a graph captures them with the launch).
template <class T>
struct Inputs {
  const T* p[kMaxMergeInputs];
  Broadcast b[kMaxMergeInputs];
  int count;
  __device__ float at(int i, std::int64_t e) const { return to_float(p[i][b[i].input_index(e)]); }
};

template <class T>
Inputs<T> inputs_of(const void* const* inputs, int count, const Broadcast* broadcasts) {
  Inputs<T> in{};
  for (int i = 0; i < count; ++i) {
    in.p[i] = static_cast<const T*>(inputs[i]);
    if (broadcasts) in.b[i] = broadcasts[i];
  }
  in.count = count;
  return in;
}

template <class T>
__global__ void merge_forward_kernel(MergeOp op, Inputs<T> in, T* y, std::int64_t n, bool relu) {
  for (std::int64_t e = thread_index(); e < n; e += thread_stride()) {
    float acc = 0.0f;
    for (int i = 0; i < in.count; ++i) acc = merge_step(op, acc, in.at(i, e), i, in.count);
    y[e] = from_float<T>(fused_relu(acc, relu));
  }
}

// Input `which`'s gradient from output element e.
template <class T>
__device__ float merge_gradient(MergeOp op, const Inputs<T>& in, const T* y, const T* dy,
                                int which, std::int64_t e, bool relu) {
  const float g = relu_gate(to_float(dy[e]), relu ? y : nullptr, e);
  if (op == MergeOp::multiply) {
    float v = g;
    for (int j = 0; j < in.count; ++j) {
      if (j != which) v = multiply_grad_step(v, in.at(j, e));
    }
    return v;
  }
  if (op == MergeOp::maximum) {
    const float best = to_float(y[e]);
    bool first = true;
    for (int j = 0; j < which; ++j) first = first && in.at(j, e) != best;
    return maximum_grad(g, in.at(which, e), best, first);
  }
  return merge_grad_linear(op, g, which, in.count);
}

// n: dx's elements. A broadcast input sums, in float32, over the output elements that read
// each of its elements.
template <class T>
__global__ void merge_backward_kernel(MergeOp op, Inputs<T> in, const T* y, const T* dy, T* dx,
                                      int which, std::int64_t n, bool relu) {
  const Broadcast& mine = in.b[which];
  const std::int64_t fan = mine.fan();
  for (std::int64_t j = thread_index(); j < n; j += thread_stride()) {
    float v = 0.0f;
    if (mine.rank == 0) {
      v = merge_gradient(op, in, y, dy, which, j, relu);
    } else {
      for (std::int64_t k = 0; k < fan; ++k)
        v += merge_gradient(op, in, y, dy, which, mine.output_index(j, k), relu);
    }
    dx[j] = from_float<T>(v);
  }
}

template <class T>
__global__ void accumulate_kernel(const T* src, T* dst, std::int64_t n) {
  for (std::int64_t e = thread_index(); e < n; e += thread_stride()) {
    dst[e] = from_float<T>(to_float(dst[e]) + to_float(src[e]));
  }
}

void check_count(int count) {
  if (count < 1 || count > kMaxMergeInputs) {
    throw BackendError("CUDA merge kernels: " + std::to_string(count) + " inputs (1 to " +
                       std::to_string(kMaxMergeInputs) + ")");
  }
}

// A fused ReLU only follows a linear merge: Maximum's and Multiply's backward read y as the
// merge's own output.
void check_relu(MergeOp op, bool relu) {
  if (relu && op != MergeOp::add && op != MergeOp::subtract && op != MergeOp::average) {
    throw BackendError("CUDA merge kernels: a fused ReLU after " + std::string(to_string(op)));
  }
}

}  // namespace

void merge_forward(MergeOp op, const void* const* inputs, int count, void* y, DType dtype,
                   std::int64_t n, cudaStream_t stream, bool relu,
                   const Broadcast* broadcasts) {
  check_count(count);
  check_relu(op, relu);
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    merge_forward_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        op, inputs_of<T>(inputs, count, broadcasts), static_cast<T*>(y), n, relu);
  });
  MIXLAB_CHECK_LAUNCH("merge_forward_kernel");
}

void merge_backward(MergeOp op, const void* const* inputs, int count, const void* y,
                    const void* dy, void* dx, int which, DType dtype, std::int64_t n,
                    cudaStream_t stream, bool relu, const Broadcast* broadcasts) {
  check_count(count);
  check_relu(op, relu);
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    merge_backward_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(
        op, inputs_of<T>(inputs, count, broadcasts), static_cast<const T*>(y), static_cast<const T*>(dy),
        static_cast<T*>(dx), which, n, relu);
  });
  MIXLAB_CHECK_LAUNCH("merge_backward_kernel");
}

void accumulate(const void* src, void* dst, DType dtype, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  with_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    accumulate_kernel<T><<<grid_for(n), kBlock, 0, stream>>>(static_cast<const T*>(src),
                                                             static_cast<T*>(dst), n);
  });
  MIXLAB_CHECK_LAUNCH("accumulate_kernel");
}

}  // namespace mixlab::cuda::kernels
