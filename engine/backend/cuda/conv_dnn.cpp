#include "engine/backend/cuda/conv_dnn.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "engine/backend/cuda/cuda_check.h"

namespace mixlab::cuda {

namespace {

// Workspace an algorithm may ask for; faster ones needing more are passed over.
constexpr std::size_t kMaxConvWorkspace = std::size_t{1} << 30;

struct Choice {
  int algo = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t bytes = 0;
};

struct Algorithms {
  Choice fwd, bwd_data, bwd_filter;
};

// Benchmarked choices by shape, for the process: a second run of the same model skips cudnnFind.
std::mutex cache_mutex;
std::map<std::string, Algorithms>& algorithm_cache() {
  static std::map<std::string, Algorithms> cache;
  return cache;
}

std::string cache_key(const ConvShape& s) {
  // Per GPU: another model of GPU in the same process benchmarks its own choices.
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  std::string key = std::to_string(device) + ':' + prop.name + ':';
  for (int v : {s.n, s.h, s.w, s.c, s.k, s.r, s.s, s.oh, s.ow, s.pad_h, s.pad_w, s.stride_h,
                s.stride_w, static_cast<int>(s.dtype), static_cast<int>(s.tf32), s.groups}) {
    key += std::to_string(v) + ',';
  }
  return key;
}

cudnnMathType_t requested_math(const ConvShape& s) {
  if (s.dtype != DType::f32) return CUDNN_TENSOR_OP_MATH;
  return s.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;  // FMA: no TF32 for strict float32
}

// The fastest result that succeeded and fits the workspace cap; strict float32 takes only
// FMA-math algorithms (cudnnFind may also return TF32 ones).
template <class Perf>
Choice pick(const Perf* results, int count, bool strict_fp32, const std::string& what,
            const char* direction) {
  for (int i = 0; i < count; ++i) {
    if (strict_fp32 && results[i].mathType != CUDNN_FMA_MATH) continue;
    if (results[i].status == CUDNN_STATUS_SUCCESS && results[i].memory <= kMaxConvWorkspace) {
      return {static_cast<int>(results[i].algo), results[i].mathType, results[i].memory};
    }
  }
  throw BackendError(what + ": cuDNN has no " + direction +
                     " convolution algorithm for this shape");
}

}  // namespace

cudnnDataType_t cudnn_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return CUDNN_DATA_FLOAT;
    case DType::f16:
      return CUDNN_DATA_HALF;
    case DType::bf16:
      return CUDNN_DATA_BFLOAT16;
  }
  return CUDNN_DATA_FLOAT;
}

DnnConv::DnnConv(cudnnHandle_t handle, const ConvShape& s, std::string what)
    : handle_(handle), what_(std::move(what)) {
  try {
    const cudnnDataType_t type = cudnn_type(s.dtype);
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
    CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
    CUDNN_CHECK(cudnnCreateFilterDescriptor(&w_));
    CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&conv_));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, type, s.n, s.c, s.h, s.w));
    CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, type, s.n, s.k, s.oh, s.ow));
    CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(w_, type, CUDNN_TENSOR_NHWC, s.k, s.c / s.groups, s.r, s.s));
    // Keras's Conv2D is a cross-correlation; accumulation in float32 for every policy.
    CUDNN_CHECK(cudnnSetConvolution2dDescriptor(conv_, s.pad_h, s.pad_w, s.stride_h, s.stride_w, 1,
                                                1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
    CUDNN_CHECK(cudnnSetConvolutionGroupCount(conv_, s.groups));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, requested_math(s)));
    int oh = 0, ow = 0, on = 0, oc = 0;
    CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &on, &oc, &oh, &ow));
    if (oh != s.oh || ow != s.ow || oc != s.k) {
      throw BackendError(what_ + ": cuDNN computes an output of " + std::to_string(oh) + "x" +
                         std::to_string(ow) + "x" + std::to_string(oc) + ", the model " +
                         std::to_string(s.oh) + "x" + std::to_string(s.ow) + "x" +
                         std::to_string(s.k));
    }

    Algorithms algos;
    const std::string key = cache_key(s);
    bool cached = false;
    {
      std::lock_guard lock(cache_mutex);
      auto it = algorithm_cache().find(key);
      if (it != algorithm_cache().end()) {
        algos = it->second;
        cached = true;
      }
    }
    if (!cached) {
      const bool strict = s.dtype == DType::f32 && !s.tf32;
      constexpr int kMax = 16;
      int found = 0;
      cudnnConvolutionFwdAlgoPerf_t fwd[kMax];
      CUDNN_CHECK(
          cudnnFindConvolutionForwardAlgorithm(handle_, x_, w_, conv_, y_, kMax, &found, fwd));
      algos.fwd = pick(fwd, found, strict, what_, "forward");
      cudnnConvolutionBwdDataAlgoPerf_t bwd_data[kMax];
      CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle_, w_, y_, conv_, x_, kMax,
                                                            &found, bwd_data));
      algos.bwd_data = pick(bwd_data, found, strict, what_, "backward-data");
      cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[kMax];
      CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle_, x_, y_, conv_, w_, kMax,
                                                              &found, bwd_filter));
      algos.bwd_filter = pick(bwd_filter, found, strict, what_, "backward-filter");
      std::lock_guard lock(cache_mutex);
      algorithm_cache().emplace(key, algos);
    }
    fwd_algo_ = static_cast<cudnnConvolutionFwdAlgo_t>(algos.fwd.algo);
    bwd_data_algo_ = static_cast<cudnnConvolutionBwdDataAlgo_t>(algos.bwd_data.algo);
    bwd_filter_algo_ = static_cast<cudnnConvolutionBwdFilterAlgo_t>(algos.bwd_filter.algo);
    // Each direction runs with the math type it was benchmarked with; the descriptor is set
    // before each call (a host-side change, nothing launched).
    fwd_math_ = algos.fwd.math;
    bwd_data_math_ = algos.bwd_data.math;
    bwd_filter_math_ = algos.bwd_filter.math;
    std::size_t fwd_bytes = 0, data_bytes = 0, filter_bytes = 0;
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, fwd_math_));
    CUDNN_CHECK(
        cudnnGetConvolutionForwardWorkspaceSize(handle_, x_, w_, conv_, y_, fwd_algo_, &fwd_bytes));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, bwd_data_math_));
    CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(handle_, w_, y_, conv_, x_,
                                                             bwd_data_algo_, &data_bytes));
    CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, bwd_filter_math_));
    CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(handle_, x_, y_, conv_, w_,
                                                               bwd_filter_algo_, &filter_bytes));
    workspace_bytes_ = std::max({fwd_bytes, data_bytes, filter_bytes});
  } catch (const BackendError& e) {
    release();
    if (std::string(e.what()).rfind(what_, 0) == 0) throw;
    throw BackendError(what_ + ": " + e.what());
  }
}

DnnConv::~DnnConv() {
  release();
}

void DnnConv::release() {
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_);
  if (w_) cudnnDestroyFilterDescriptor(w_);
  if (y_) cudnnDestroyTensorDescriptor(y_);
  if (x_) cudnnDestroyTensorDescriptor(x_);
  conv_ = nullptr;
  w_ = nullptr;
  x_ = y_ = nullptr;
}

void DnnConv::forward(const void* x, const void* w, void* y, void* workspace,
                      bool accumulate) const {
  const float alpha = 1.0f, beta = accumulate ? 1.0f : 0.0f;
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, fwd_math_));
  CUDNN_CHECK(cudnnConvolutionForward(handle_, &alpha, x_, x, w_, w, conv_, fwd_algo_, workspace,
                                      workspace_bytes_, &beta, y_, y));
}

void DnnConv::backward_data(const void* dy, const void* w, void* dx, void* workspace) const {
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, bwd_data_math_));
  CUDNN_CHECK(cudnnConvolutionBackwardData(handle_, &alpha, w_, w, y_, dy, conv_, bwd_data_algo_,
                                           workspace, workspace_bytes_, &beta, x_, dx));
}

void DnnConv::backward_filter(const void* x, const void* dy, void* dw, void* workspace) const {
  const float alpha = 1.0f, beta = 0.0f;
  CUDNN_CHECK(cudnnSetConvolutionMathType(conv_, bwd_filter_math_));
  CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle_, &alpha, x_, x, y_, dy, conv_,
                                             bwd_filter_algo_, workspace, workspace_bytes_, &beta,
                                             w_, dw));
}

DnnPool::DnnPool(cudnnHandle_t handle, const PoolDnnShape& s, std::string what)
    : handle_(handle), what_(std::move(what)) {
  try {
    setup(s);
  } catch (const BackendError& e) {
    release();
    throw BackendError(what_ + ": " + e.what());
  }
}

void DnnPool::setup(const PoolDnnShape& s) {
  const cudnnDataType_t type = cudnn_type(s.dtype);
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&x_));
  CUDNN_CHECK(cudnnCreateTensorDescriptor(&y_));
  CUDNN_CHECK(cudnnCreatePoolingDescriptor(&pool_));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, type, s.n, s.c, s.h, s.w));
  CUDNN_CHECK(cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, type, s.n, s.c, s.oh, s.ow));
  CUDNN_CHECK(cudnnSetPooling2dDescriptor(
      pool_, s.max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING,
      CUDNN_PROPAGATE_NAN, s.kh, s.kw, s.pad_h, s.pad_w, s.sh, s.sw));
  int on = 0, oc = 0, oh = 0, ow = 0;
  CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool_, x_, &on, &oc, &oh, &ow));
  if (oh != s.oh || ow != s.ow) {
    throw BackendError("cuDNN pools to " + std::to_string(oh) + "x" + std::to_string(ow) +
                       ", the model to " + std::to_string(s.oh) + "x" + std::to_string(s.ow));
  }
}

DnnPool::~DnnPool() {
  release();
}

void DnnPool::release() {
  if (pool_) cudnnDestroyPoolingDescriptor(pool_);
  if (y_) cudnnDestroyTensorDescriptor(y_);
  if (x_) cudnnDestroyTensorDescriptor(x_);
  pool_ = nullptr;
  x_ = y_ = nullptr;
}

namespace {

// cuDNN 9's "not supported" statuses: CUDNN_STATUS_NOT_SUPPORTED and its 3001-3999 refinements.
bool not_supported(cudnnStatus_t status) {
  const int code = static_cast<int>(status);
  return code >= static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) && code < 4000;
}

}  // namespace

bool DnnPool::forward(const void* x, void* y) const {
  const float alpha = 1.0f, beta = 0.0f;
  const cudnnStatus_t status = cudnnPoolingForward(handle_, pool_, &alpha, x_, x, &beta, y_, y);
  if (not_supported(status)) return false;
  CUDNN_CHECK(status);
  return true;
}

bool DnnPool::backward(const void* x, const void* y, const void* dy, void* dx) const {
  const float alpha = 1.0f, beta = 0.0f;
  const cudnnStatus_t status =
      cudnnPoolingBackward(handle_, pool_, &alpha, y_, y, y_, dy, x_, x, &beta, x_, dx);
  if (not_supported(status)) return false;
  CUDNN_CHECK(status);
  return true;
}

}  // namespace mixlab::cuda
