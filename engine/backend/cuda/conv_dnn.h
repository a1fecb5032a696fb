// Conv2D and pooling through cuDNN 9 (its convolution and pooling API), NHWC so that the 16-bit
// policies run on tensor cores. Convolution algorithms are benchmarked once per shape
// (cudnnFind*) and cached for the process; the workspace is sized for the fastest ones.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/core/precision.h"

namespace mixlab::cuda {

struct ConvShape {
  int n = 0, h = 0, w = 0, c = 0;  // input (NHWC), already padded when the padding is asymmetric
  int k = 0, r = 1, s = 1;         // filters and window; weights KRSC (filters, kh, kw, in)
  int groups = 1;                  // DepthwiseConv2D: c (weights K x r x s x 1)
  int oh = 0, ow = 0;              // output
  int pad_h = 0, pad_w = 0;        // symmetric padding cuDNN applies
  int stride_h = 1, stride_w = 1;
  DType dtype = DType::f32;
  bool tf32 = false;
};

class DnnConv {
 public:
  DnnConv() = default;
  // Creates the descriptors and chooses the algorithms (benchmarked on first use of a shape).
  DnnConv(cudnnHandle_t handle, const ConvShape& shape, std::string what);
  ~DnnConv();
  DnnConv(const DnnConv&) = delete;
  DnnConv& operator=(const DnnConv&) = delete;

  std::size_t workspace_bytes() const { return workspace_bytes_; }
  // y = conv(x, w); dx = conv_backward_data(dy, w); dw = conv_backward_filter(x, dy) (all
  // overwrite). dw has the data type of x.
  // accumulate: y = conv(x, w) + y, blended in float32 before y's rounding (cuDNN's beta = 1).
  void forward(const void* x, const void* w, void* y, void* workspace,
               bool accumulate = false) const;
  void backward_data(const void* dy, const void* w, void* dx, void* workspace) const;
  void backward_filter(const void* x, const void* dy, void* dw, void* workspace) const;

 private:
  void release();

  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t fwd_algo_{};
  cudnnConvolutionBwdDataAlgo_t bwd_data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter_algo_{};
  cudnnMathType_t fwd_math_{}, bwd_data_math_{}, bwd_filter_math_{};
  std::size_t workspace_bytes_ = 0;
  std::string what_;
};

// Pooling with symmetric padding (Keras's 'valid', and 'same' where it pads evenly); max or
// average excluding padding.
struct PoolDnnShape {
  int n = 0, h = 0, w = 0, c = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, pad_h = 0, pad_w = 0;
  DType dtype = DType::f32;
  bool max = true;
};

class DnnPool {
 public:
  DnnPool() = default;
  DnnPool(cudnnHandle_t handle, const PoolDnnShape& shape, std::string what);
  ~DnnPool();
  DnnPool(const DnnPool&) = delete;
  DnnPool& operator=(const DnnPool&) = delete;

  // False when cuDNN does not support this pooling (a CUDNN_STATUS_NOT_SUPPORTED*, which the
  // legacy API answers at the call: bfloat16 pooling is not documented for it); the caller then
  // pools with its own kernel. Any other failure throws.
  [[nodiscard]] bool forward(const void* x, void* y) const;
  [[nodiscard]] bool backward(const void* x, const void* y, const void* dy, void* dx) const;

 private:
  void setup(const PoolDnnShape& shape);
  void release();

  cudnnHandle_t handle_ = nullptr;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnPoolingDescriptor_t pool_ = nullptr;
  std::string what_;
};

cudnnDataType_t cudnn_type(DType dtype);

}  // namespace mixlab::cuda
