// cudasim's cuDNN (include/cudnn.h says what it covers): convolutions and pooling in NHWC with
// cuDNN's documented semantics, computed on the host when the handle's stream reaches them.
//
// What it checks: descriptors that agree with each other (channels, groups, output sizes, data
// types), every tensor inside device memory over all its bytes, alpha and beta as host floats.
// What it computes: cross-correlation with padding, strides, dilation and groups; its backward
// data and filter; max pooling (NaN propagated, the gradient to the window's first maximum) and
// average pooling without the padding; y = alpha * result + beta * y, sums in float32, float32
// inputs rounded to TF32 where the math type allows it (everything but CUDNN_FMA_MATH).
#include <cudnn.h>

#include "tests/gpu/sim/sim_math.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  bool set = false;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int n = 0, c = 0, h = 0, w = 0;
};
struct cudnnFilterStruct {
  bool set = false;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, r = 0, s = 0;
};
struct cudnnConvolutionStruct {
  bool set = false;
  int pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, groups = 1;
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};
struct cudnnPoolingStruct {
  bool set = false;
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  int wh = 1, ww = 1, ph = 0, pw = 0, sh = 1, sw = 1;
};

namespace {

thread_local std::string g_last_error;

cudnnStatus_t refuse(cudnnStatus_t status, const std::string& why) {
  g_last_error = "cudasim: " + why;
  std::fprintf(stderr, "cudasim: cuDNN: %s\n", why.c_str());
  return status;
}

std::size_t type_bytes(cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
    case CUDNN_DATA_INT32:
      return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16:
      return 2;
    default:
      return 0;
  }
}

float load(const void* p, std::size_t i, cudnnDataType_t t) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
      return static_cast<const float*>(p)[i];
    case CUDNN_DATA_HALF:
      return __half2float(static_cast<const __half*>(p)[i]);
    case CUDNN_DATA_BFLOAT16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    default:
      return NAN;
  }
}

void store(void* p, std::size_t i, cudnnDataType_t t, float v) {
  switch (t) {
    case CUDNN_DATA_FLOAT:
      static_cast<float*>(p)[i] = v;
      return;
    case CUDNN_DATA_HALF:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      return;
    case CUDNN_DATA_BFLOAT16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      return;
    default:
      return;
  }
}

std::size_t elements(const cudnnTensorStruct& t) {
  return static_cast<std::size_t>(t.n) * t.c * t.h * t.w;
}

// Index of (n, c, h, w) in a 4-d tensor of its format.
std::size_t at(const cudnnTensorStruct& t, int n, int c, int h, int w) {
  if (t.format == CUDNN_TENSOR_NHWC)
    return ((static_cast<std::size_t>(n) * t.h + h) * t.w + w) * t.c + c;
  return ((static_cast<std::size_t>(n) * t.c + c) * t.h + h) * t.w + w;
}
std::size_t at(const cudnnFilterStruct& f, int k, int c, int r, int s) {
  if (f.format == CUDNN_TENSOR_NHWC)
    return ((static_cast<std::size_t>(k) * f.r + r) * f.s + s) * f.c + c;
  return ((static_cast<std::size_t>(k) * f.c + c) * f.r + r) * f.s + s;
}

int conv_out(int in, int pad, int window, int dil, int stride) {
  return (in + 2 * pad - ((window - 1) * dil + 1)) / stride + 1;
}

cudnnStatus_t check_device(const void* p, std::size_t bytes, const char* what) {
  if (!cudasim::is_device(p, bytes))
    return refuse(CUDNN_STATUS_BAD_PARAM, std::string(what) + " is not " + std::to_string(bytes) +
                                              " bytes of device memory");
  return CUDNN_STATUS_SUCCESS;
}

// The convolution's descriptors agree: x (n, c, h, w), w (k, c / groups, r, s), y (n, k, oh, ow).
cudnnStatus_t check_conv(const cudnnTensorStruct& x, const cudnnFilterStruct& w,
                         const cudnnConvolutionStruct& conv, const cudnnTensorStruct& y) {
  if (!x.set || !w.set || !conv.set || !y.set)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a convolution descriptor that was never set");
  if (x.type != w.type || x.type != y.type)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "a convolution of mixed data types");
  if (w.c * conv.groups != x.c)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the filter's " + std::to_string(w.c) + " channels x " +
                                              std::to_string(conv.groups) +
                                              " groups are not the input's " + std::to_string(x.c));
  if (w.k % conv.groups != 0 || y.c != w.k || y.n != x.n)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the output's channels or batch do not match the filter");
  if (y.h != conv_out(x.h, conv.pad_h, w.r, conv.dil_h, conv.stride_h) ||
      y.w != conv_out(x.w, conv.pad_w, w.s, conv.dil_w, conv.stride_w))
    return refuse(CUDNN_STATUS_BAD_PARAM, "the output's height or width is not the convolution's");
  return CUDNN_STATUS_SUCCESS;
}

template <class Perf>
void one_result(Perf* results, int requested, int* returned, cudnnMathType_t math) {
  *returned = 0;
  if (requested < 1) return;
  results[0] = Perf{};
  results[0].status = CUDNN_STATUS_SUCCESS;
  results[0].time = 0.01f;
  results[0].memory = 0;
  results[0].determinism = CUDNN_DETERMINISTIC;
  // FMA unless tensor-op math was asked for (float32 under CUDNN_FMA_MATH must find one).
  results[0].mathType =
      math == CUDNN_FMA_MATH || math == CUDNN_DEFAULT_MATH ? CUDNN_FMA_MATH : math;
  *returned = 1;
}

float scalar(const void* p) {
  return *static_cast<const float*>(p);
}

enum class ConvPass { forward, backward_data, backward_filter };

// One pass of the convolution, queued on the handle's stream.
cudnnStatus_t convolve(cudnnHandle_t handle, ConvPass pass, const void* alpha, const void* beta,
                       const cudnnTensorStruct& xd, const void* x, const cudnnFilterStruct& wd,
                       const void* w, const cudnnConvolutionStruct& cd, const cudnnTensorStruct& yd,
                       const void* y, void* out) {
  CUDASIM_API;
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (const cudnnStatus_t s = check_conv(xd, wd, cd, yd)) return s;
  const std::size_t tb = type_bytes(xd.type);
  const std::size_t w_bytes = static_cast<std::size_t>(wd.k) * wd.c * wd.r * wd.s * tb;
  if (cudnnStatus_t s = check_device(x, elements(xd) * tb, "x"); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (cudnnStatus_t s = check_device(w, w_bytes, "the filter"); s != CUDNN_STATUS_SUCCESS) return s;
  if (cudnnStatus_t s = check_device(y, elements(yd) * tb, "y"); s != CUDNN_STATUS_SUCCESS)
    return s;
  const float a = scalar(alpha), b = scalar(beta);
  cudasim::enqueue(handle->stream, "cuDNN convolution", [=] {
    const bool round = xd.type == CUDNN_DATA_FLOAT && cd.math != CUDNN_FMA_MATH;
    const auto in = [&](const void* p, std::size_t i, cudnnDataType_t t) {
      const float v = load(p, i, t);
      return round ? cudasim::tf32(v) : v;
    };
    // The filter as rows of (r, s, c) per output channel, and one input patch in the same order.
    const int kg = wd.k / cd.groups;
    const std::size_t rsc = static_cast<std::size_t>(wd.r) * wd.s * wd.c;
    const auto col = [&](int r, int s, int c) {
      return (static_cast<std::size_t>(r) * wd.s + s) * wd.c + c;
    };
    std::vector<float> filter(wd.k * rsc);
    for (int k = 0; k < wd.k; ++k)
      for (int r = 0; r < wd.r; ++r)
        for (int s = 0; s < wd.s; ++s)
          for (int c = 0; c < wd.c; ++c)
            filter[k * rsc + col(r, s, c)] = in(w, at(wd, k, c, r, s), wd.type);
    std::vector<float> patch(rsc), grads(wd.k);
    std::vector<float> acc(pass == ConvPass::forward         ? elements(yd)
                           : pass == ConvPass::backward_data ? elements(xd)
                                                             : wd.k * rsc,
                           0.0f);
    // Calls f(r, s, c, index in x) for the taps of output (n, oh, ow) in group g inside x.
    const auto taps = [&](int n, int oh, int ow, int g, auto f) {
      for (int r = 0; r < wd.r; ++r) {
        const int ih = oh * cd.stride_h - cd.pad_h + r * cd.dil_h;
        if (ih < 0 || ih >= xd.h) continue;
        for (int s = 0; s < wd.s; ++s) {
          const int iw = ow * cd.stride_w - cd.pad_w + s * cd.dil_w;
          if (iw < 0 || iw >= xd.w) continue;
          for (int c = 0; c < wd.c; ++c) f(col(r, s, c), at(xd, n, g * wd.c + c, ih, iw));
        }
      }
    };
    for (int n = 0; n < xd.n; ++n)
      for (int oh = 0; oh < yd.h; ++oh)
        for (int ow = 0; ow < yd.w; ++ow) {
          if (pass != ConvPass::forward) {
            for (int k = 0; k < wd.k; ++k) grads[k] = in(y, at(yd, n, k, oh, ow), yd.type);
          }
          for (int g = 0; g < cd.groups; ++g) {
            std::fill(patch.begin(), patch.end(), 0.0f);
            if (pass == ConvPass::backward_data) {
              for (int k = g * kg; k < (g + 1) * kg; ++k)
                cudasim::axpy(grads[k], &filter[k * rsc], patch.data(), rsc);
              taps(n, oh, ow, g, [&](std::size_t j, std::size_t xi) { acc[xi] += patch[j]; });
              continue;
            }
            taps(n, oh, ow, g,
                 [&](std::size_t j, std::size_t xi) { patch[j] = in(x, xi, xd.type); });
            for (int k = g * kg; k < (g + 1) * kg; ++k) {
              if (pass == ConvPass::forward)
                acc[at(yd, n, k, oh, ow)] = cudasim::dot(patch.data(), &filter[k * rsc], rsc);
              else
                cudasim::axpy(grads[k], patch.data(), &acc[k * rsc], rsc);
            }
          }
        }
    const cudnnDataType_t t = xd.type;
    const auto put = [&](std::size_t i, float v) {
      float r = a * v;
      if (b != 0.0f) r += b * load(out, i, t);
      store(out, i, t, r);
    };
    if (pass != ConvPass::backward_filter) {
      for (std::size_t i = 0; i < acc.size(); ++i) put(i, acc[i]);
    } else {
      for (int k = 0; k < wd.k; ++k)
        for (int r = 0; r < wd.r; ++r)
          for (int s = 0; s < wd.s; ++s)
            for (int c = 0; c < wd.c; ++c) put(at(wd, k, c, r, s), acc[k * rsc + col(r, s, c)]);
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

std::size_t cudnnGetVersion() {
  return CUDNN_VERSION;
}

const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM (cudasim: see stderr)";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED (cudasim: see stderr)";
    case CUDNN_STATUS_EXECUTION_FAILED:
      return "CUDNN_STATUS_EXECUTION_FAILED";
    default:
      return "CUDNN_STATUS (another)";
  }
}

void cudnnGetLastErrorString(char* message, std::size_t max) {
  if (max == 0) return;
  std::snprintf(message, max, "%s", g_last_error.c_str());
  g_last_error.clear();
}

cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  *handle = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  delete handle;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  *desc = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w) {
  if (n <= 0 || c <= 0 || h <= 0 || w <= 0 || type_bytes(type) == 0)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a 4-d tensor with a dimension below 1 or a bad type");
  *desc = {true, format, type, n, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  *desc = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w) {
  if (k <= 0 || c <= 0 || h <= 0 || w <= 0 || type_bytes(type) == 0)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a filter with a dimension below 1 or a bad type");
  *desc = {true, format, type, k, c, h, w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  *desc = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute) {
  if (pad_h < 0 || pad_w < 0 || u < 1 || v < 1 || dilation_h < 1 || dilation_w < 1)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a convolution with a bad padding, stride or dilation");
  if (mode != CUDNN_CROSS_CORRELATION || compute != CUDNN_DATA_FLOAT)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED,
                  "cudasim emulates cross-correlation computed in float32 only");
  desc->set = true;
  desc->pad_h = pad_h;
  desc->pad_w = pad_w;
  desc->stride_h = u;
  desc->stride_w = v;
  desc->dil_h = dilation_h;
  desc->dil_w = dilation_w;
  desc->mode = mode;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups) {
  if (groups < 1) return refuse(CUDNN_STATUS_BAD_PARAM, "a group count below 1");
  desc->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math) {
  desc->math = math;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(cudnnConvolutionDescriptor_t conv,
                                                    cudnnTensorDescriptor_t x,
                                                    cudnnFilterDescriptor_t w, int* n, int* c,
                                                    int* h, int* wo) {
  if (!conv->set || !x->set || !w->set)
    return refuse(CUDNN_STATUS_BAD_PARAM, "an output size of descriptors never set");
  if (w->c * conv->groups != x->c)
    return refuse(CUDNN_STATUS_BAD_PARAM, "the filter's channels x groups are not the input's");
  *n = x->n;
  *c = w->k;
  *h = conv_out(x->h, conv->pad_h, w->r, conv->dil_h, conv->stride_h);
  *wo = conv_out(x->w, conv->pad_w, w->s, conv->dil_w, conv->stride_w);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                   cudnnFilterDescriptor_t w,
                                                   cudnnConvolutionDescriptor_t conv,
                                                   cudnnTensorDescriptor_t y, int requested,
                                                   int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* results) {
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (const cudnnStatus_t s = check_conv(*x, *w, *conv, *y)) return s;
  one_result(results, requested, returned, conv->math);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* results) {
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (const cudnnStatus_t s = check_conv(*dx, *w, *conv, *dy)) return s;
  one_result(results, requested, returned, conv->math);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (const cudnnStatus_t s = check_conv(*x, *dw, *conv, *dy)) return s;
  one_result(results, requested, returned, conv->math);
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t, cudnnTensorDescriptor_t, cudnnFilterDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, cudnnFilterDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnTensorDescriptor_t, cudnnConvolutionBwdDataAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, cudnnTensorDescriptor_t, cudnnTensorDescriptor_t, cudnnConvolutionDescriptor_t,
    cudnnFilterDescriptor_t, cudnnConvolutionBwdFilterAlgo_t, std::size_t* bytes) {
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      cudnnTensorDescriptor_t x_desc, const void* x,
                                      cudnnFilterDescriptor_t w_desc, const void* w,
                                      cudnnConvolutionDescriptor_t conv, cudnnConvolutionFwdAlgo_t,
                                      void*, std::size_t, const void* beta,
                                      cudnnTensorDescriptor_t y_desc, void* y) {
  return convolve(handle, ConvPass::forward, alpha, beta, *x_desc, x, *w_desc, w, *conv, *y_desc, y,
                  y);
}
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           cudnnFilterDescriptor_t w_desc, const void* w,
                                           cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t, void*, std::size_t,
                                           const void* beta, cudnnTensorDescriptor_t dx_desc,
                                           void* dx) {
  return convolve(handle, ConvPass::backward_data, alpha, beta, *dx_desc, dx, *w_desc, w, *conv,
                  *dy_desc, dy, dx);
}
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             cudnnTensorDescriptor_t x_desc, const void* x,
                                             cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t, void*, std::size_t,
                                             const void* beta, cudnnFilterDescriptor_t dw_desc,
                                             void* dw) {
  return convolve(handle, ConvPass::backward_filter, alpha, beta, *x_desc, x, *dw_desc, dw, *conv,
                  *dy_desc, dy, dw);
}

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* desc) {
  *desc = new cudnnPoolingStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t, int window_h, int window_w,
                                          int pad_h, int pad_w, int stride_h, int stride_w) {
  if (window_h < 1 || window_w < 1 || pad_h < 0 || pad_w < 0 || stride_h < 1 || stride_w < 1)
    return refuse(CUDNN_STATUS_BAD_PARAM, "a pooling window, padding or stride out of range");
  if (mode != CUDNN_POOLING_MAX && mode != CUDNN_POOLING_MAX_DETERMINISTIC &&
      mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "a pooling mode cudasim does not emulate");
  *desc = {true, mode, window_h, window_w, pad_h, pad_w, stride_h, stride_w};
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnGetPooling2dForwardOutputDim(cudnnPoolingDescriptor_t desc,
                                                cudnnTensorDescriptor_t x, int* n, int* c, int* h,
                                                int* w) {
  if (!desc->set || !x->set) return refuse(CUDNN_STATUS_BAD_PARAM, "a descriptor never set");
  *n = x->n;
  *c = x->c;
  *h = 1 + (x->h + 2 * desc->ph - desc->wh) / desc->sh;
  *w = 1 + (x->w + 2 * desc->pw - desc->ww) / desc->sw;
  return CUDNN_STATUS_SUCCESS;
}

namespace {

cudnnStatus_t pool(cudnnHandle_t handle, const cudnnPoolingStruct& p, bool backward,
                   const void* alpha, const void* beta, const cudnnTensorStruct& xd, const void* x,
                   const cudnnTensorStruct& yd, const void* y, const void* dy, void* out) {
  CUDASIM_API;
  if (handle == nullptr) return CUDNN_STATUS_NOT_INITIALIZED;
  if (!p.set || !xd.set || !yd.set) return refuse(CUDNN_STATUS_BAD_PARAM, "a descriptor never set");
  if (xd.type != yd.type || xd.n != yd.n || xd.c != yd.c ||
      yd.h != 1 + (xd.h + 2 * p.ph - p.wh) / p.sh || yd.w != 1 + (xd.w + 2 * p.pw - p.ww) / p.sw)
    return refuse(CUDNN_STATUS_BAD_PARAM, "pooling descriptors that do not agree");
  const std::size_t tb = type_bytes(xd.type);
  for (const auto& [ptr, bytes, name] :
       {std::tuple{x, elements(xd) * tb, "x"}, std::tuple{y, elements(yd) * tb, "y"},
        std::tuple{static_cast<const void*>(out), (backward ? elements(xd) : elements(yd)) * tb,
                   "the output"}}) {
    if (const cudnnStatus_t s = check_device(ptr, bytes, name)) return s;
  }
  if (backward) {
    if (const cudnnStatus_t s = check_device(dy, elements(yd) * tb, "dy")) return s;
  }
  const float a = scalar(alpha), b = scalar(beta);
  cudasim::enqueue(handle->stream, backward ? "cuDNN pooling backward" : "cuDNN pooling", [=] {
    const bool max = p.mode != CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    const std::size_t out_n = backward ? elements(xd) : elements(yd);
    std::vector<double> acc(out_n, 0.0);
    for (int n = 0; n < xd.n; ++n)
      for (int c = 0; c < xd.c; ++c)
        for (int oh = 0; oh < yd.h; ++oh)
          for (int ow = 0; ow < yd.w; ++ow) {
            double best = -INFINITY, sum = 0;
            std::size_t best_i = 0;
            int count = 0;
            bool nan = false, any = false;
            for (int r = 0; r < p.wh; ++r) {
              const int ih = oh * p.sh - p.ph + r;
              if (ih < 0 || ih >= xd.h) continue;
              for (int s = 0; s < p.ww; ++s) {
                const int iw = ow * p.sw - p.pw + s;
                if (iw < 0 || iw >= xd.w) continue;
                const std::size_t xi = at(xd, n, c, ih, iw);
                const float v = load(x, xi, xd.type);
                ++count;
                sum += v;
                if (std::isnan(v)) nan = true;
                if (!any || v > best) {
                  best = v;
                  best_i = xi;
                  any = true;
                }
              }
            }
            const std::size_t yi = at(yd, n, c, oh, ow);
            if (!backward) {
              acc[yi] = max ? (nan ? NAN : best) : (count > 0 ? sum / count : 0.0);
              continue;
            }
            const double g = load(dy, yi, yd.type);
            if (max) {
              if (any) acc[best_i] += g;
            } else if (count > 0) {
              for (int r = 0; r < p.wh; ++r) {
                const int ih = oh * p.sh - p.ph + r;
                if (ih < 0 || ih >= xd.h) continue;
                for (int s = 0; s < p.ww; ++s) {
                  const int iw = ow * p.sw - p.pw + s;
                  if (iw >= 0 && iw < xd.w) acc[at(xd, n, c, ih, iw)] += g / count;
                }
              }
            }
          }
    for (std::size_t i = 0; i < out_n; ++i) {
      float v = static_cast<float>(a * acc[i]);
      if (b != 0.0f) v += b * load(out, i, xd.type);
      store(out, i, xd.type, v);
    }
  });
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, cudnnPoolingDescriptor_t desc,
                                  const void* alpha, cudnnTensorDescriptor_t x_desc, const void* x,
                                  const void* beta, cudnnTensorDescriptor_t y_desc, void* y) {
  return pool(handle, *desc, false, alpha, beta, *x_desc, x, *y_desc, y, nullptr, y);
}
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, cudnnPoolingDescriptor_t desc,
                                   const void* alpha, cudnnTensorDescriptor_t y_desc, const void* y,
                                   cudnnTensorDescriptor_t dy_desc, const void* dy,
                                   cudnnTensorDescriptor_t x_desc, const void* x, const void* beta,
                                   cudnnTensorDescriptor_t dx_desc, void* dx) {
  if (dy_desc->n != y_desc->n || dx_desc->n != x_desc->n || dy_desc->h != y_desc->h ||
      dx_desc->h != x_desc->h)
    return refuse(CUDNN_STATUS_BAD_PARAM, "pooling backward's descriptors do not agree");
  return pool(handle, *desc, true, alpha, beta, *x_desc, x, *y_desc, y, dy, dx);
}

// ---- the graph API ----

struct cudnnBackendDescriptorStruct {
  cudnnBackendDescriptorType_t type;
  bool finalized = false;
  std::map<int, std::pair<cudnnBackendAttributeType_t, std::vector<unsigned char>>> attrs;
};

namespace {

std::size_t attr_bytes(cudnnBackendAttributeType_t t) {
  switch (t) {
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_DATA_TYPE:
    case CUDNN_TYPE_POINTWISE_MODE:
    case CUDNN_TYPE_HEUR_MODE:
    case CUDNN_TYPE_REDUCTION_OPERATOR_TYPE:
      return 4;
    case CUDNN_TYPE_FLOAT:
      return sizeof(float);
    case CUDNN_TYPE_DOUBLE:
    case CUDNN_TYPE_INT64:
      return 8;
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return sizeof(void*);
  }
  return 0;
}

}  // namespace

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* desc) {
  *desc = new cudnnBackendDescriptorStruct{type, false, {}};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc) {
  delete desc;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t count,
                                       const void* values) {
  if (desc == nullptr || values == nullptr || count < 0)
    return refuse(CUDNN_STATUS_BAD_PARAM,
                  "cudnnBackendSetAttribute without a descriptor or values");
  if (desc->finalized)
    return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendSetAttribute on a finalised descriptor");
  const std::size_t bytes = attr_bytes(type) * static_cast<std::size_t>(count);
  const auto* p = static_cast<const unsigned char*>(values);
  desc->attrs[name] = {type, std::vector<unsigned char>(p, p + bytes)};
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc) {
  if (desc == nullptr) return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendFinalize of null");
  if (desc->type == CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR ||
      desc->type == CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
    return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudasim has no engine for a cuDNN graph");
  desc->finalized = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t requested,
                                       std::int64_t* count, void* values) {
  if (desc == nullptr || !desc->finalized)
    return refuse(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                  "cudnnBackendGetAttribute of a "
                  "descriptor not finalised");
  const auto it = desc->attrs.find(name);
  if (it == desc->attrs.end() || it->second.first != type)
    return refuse(CUDNN_STATUS_BAD_PARAM, "cudnnBackendGetAttribute of an attribute never set");
  const std::size_t each = attr_bytes(type);
  const auto have = static_cast<std::int64_t>(it->second.second.size() / each);
  if (count != nullptr) *count = have;
  if (values != nullptr && requested > 0)
    std::memcpy(values, it->second.second.data(),
                static_cast<std::size_t>(std::min(requested, have)) * each);
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t, cudnnBackendDescriptor_t,
                                  cudnnBackendDescriptor_t) {
  return refuse(CUDNN_STATUS_NOT_SUPPORTED, "cudasim has no engine for a cuDNN graph");
}
