// cudasim stands in for cuDNN 9's header: the legacy convolution and pooling calls MixLab makes,
// emulated on the host when the handle's stream reaches them (tests/gpu/sim/cudnn_sim.cpp), and
// the graph ("backend") API's descriptors, kept and finalised but not executed: cudasim has no
// engine for a graph, as a cuDNN without one for a GPU would say (CUDNN_STATUS_NOT_SUPPORTED).
#pragma once

#include <cstddef>
#include <cstdint>

#include "tests/gpu/sim/cuda_sim.h"

#define CUDNN_MAJOR 9
#define CUDNN_MINOR 19
#define CUDNN_PATCHLEVEL 0
#define CUDNN_VERSION (CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL)

enum cudnnStatus_t {
  CUDNN_STATUS_SUCCESS = 0,
  CUDNN_STATUS_NOT_INITIALIZED = 1001,
  CUDNN_STATUS_BAD_PARAM = 2000,
  CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
  CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
  CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
  CUDNN_STATUS_BAD_PARAM_OUT_OF_BOUND = 2005,
  CUDNN_STATUS_BAD_PARAM_SIZE_INSUFFICIENT = 2006,
  CUDNN_STATUS_BAD_PARAM_SHAPE_MISMATCH = 2008,
  CUDNN_STATUS_NOT_SUPPORTED = 3000,
  CUDNN_STATUS_NOT_SUPPORTED_GRAPH_PATTERN = 3001,
  CUDNN_STATUS_EXECUTION_FAILED = 5000,
};
enum cudnnDataType_t {
  CUDNN_DATA_FLOAT = 0,
  CUDNN_DATA_DOUBLE = 1,
  CUDNN_DATA_HALF = 2,
  CUDNN_DATA_INT8 = 3,
  CUDNN_DATA_INT32 = 4,
  CUDNN_DATA_BFLOAT16 = 9,
  CUDNN_DATA_INT64 = 10,
  CUDNN_DATA_BOOLEAN = 11,
};
enum cudnnTensorFormat_t { CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1 };
enum cudnnMathType_t {
  CUDNN_DEFAULT_MATH = 0,
  CUDNN_TENSOR_OP_MATH = 1,
  CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
  CUDNN_FMA_MATH = 3,
};
enum cudnnConvolutionMode_t { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 };
enum cudnnNanPropagation_t { CUDNN_NOT_PROPAGATE_NAN = 0, CUDNN_PROPAGATE_NAN = 1 };
enum cudnnDeterminism_t { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 };
enum cudnnPoolingMode_t {
  CUDNN_POOLING_MAX = 0,
  CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING = 1,
  CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING = 2,
  CUDNN_POOLING_MAX_DETERMINISTIC = 3,
};
enum cudnnConvolutionFwdAlgo_t { CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM = 0 };
enum cudnnConvolutionBwdDataAlgo_t { CUDNN_CONVOLUTION_BWD_DATA_ALGO_0 = 0 };
enum cudnnConvolutionBwdFilterAlgo_t { CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0 = 0 };

struct cudnnContext;
struct cudnnTensorStruct;
struct cudnnFilterStruct;
struct cudnnConvolutionStruct;
struct cudnnPoolingStruct;
using cudnnHandle_t = cudnnContext*;
using cudnnTensorDescriptor_t = cudnnTensorStruct*;
using cudnnFilterDescriptor_t = cudnnFilterStruct*;
using cudnnConvolutionDescriptor_t = cudnnConvolutionStruct*;
using cudnnPoolingDescriptor_t = cudnnPoolingStruct*;

template <class Algo>
struct cudnnConvolutionAlgoPerfStruct {
  Algo algo;
  cudnnStatus_t status;
  float time;
  std::size_t memory;
  cudnnDeterminism_t determinism;
  cudnnMathType_t mathType;
  int reserved[3];
};
using cudnnConvolutionFwdAlgoPerf_t = cudnnConvolutionAlgoPerfStruct<cudnnConvolutionFwdAlgo_t>;
using cudnnConvolutionBwdDataAlgoPerf_t =
    cudnnConvolutionAlgoPerfStruct<cudnnConvolutionBwdDataAlgo_t>;
using cudnnConvolutionBwdFilterAlgoPerf_t =
    cudnnConvolutionAlgoPerfStruct<cudnnConvolutionBwdFilterAlgo_t>;

std::size_t cudnnGetVersion();
const char* cudnnGetErrorString(cudnnStatus_t status);
void cudnnGetLastErrorString(char* message, std::size_t max);
cudnnStatus_t cudnnCreate(cudnnHandle_t* handle);
cudnnStatus_t cudnnDestroy(cudnnHandle_t handle);
cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream);

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc);
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc);
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc, cudnnTensorFormat_t format,
                                         cudnnDataType_t type, int n, int c, int h, int w);
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc);
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc);
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc, cudnnDataType_t type,
                                         cudnnTensorFormat_t format, int k, int c, int h, int w);
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc);
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc);
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc, int pad_h,
                                              int pad_w, int u, int v, int dilation_h,
                                              int dilation_w, cudnnConvolutionMode_t mode,
                                              cudnnDataType_t compute);
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc, int groups);
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc, cudnnMathType_t math);
cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(cudnnConvolutionDescriptor_t conv,
                                                    cudnnTensorDescriptor_t x,
                                                    cudnnFilterDescriptor_t w, int* n, int* c,
                                                    int* h, int* wo);
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t handle, cudnnTensorDescriptor_t x,
                                                   cudnnFilterDescriptor_t w,
                                                   cudnnConvolutionDescriptor_t conv,
                                                   cudnnTensorDescriptor_t y, int requested,
                                                   int* returned,
                                                   cudnnConvolutionFwdAlgoPerf_t* results);
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx, int requested, int* returned,
    cudnnConvolutionBwdDataAlgoPerf_t* results);
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw, int requested, int* returned,
    cudnnConvolutionBwdFilterAlgoPerf_t* results);
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnFilterDescriptor_t w,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t y, cudnnConvolutionFwdAlgo_t algo,
    std::size_t* bytes);
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t handle, cudnnFilterDescriptor_t w, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnTensorDescriptor_t dx,
    cudnnConvolutionBwdDataAlgo_t algo, std::size_t* bytes);
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t handle, cudnnTensorDescriptor_t x, cudnnTensorDescriptor_t dy,
    cudnnConvolutionDescriptor_t conv, cudnnFilterDescriptor_t dw,
    cudnnConvolutionBwdFilterAlgo_t algo, std::size_t* bytes);
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                      cudnnTensorDescriptor_t x_desc, const void* x,
                                      cudnnFilterDescriptor_t w_desc, const void* w,
                                      cudnnConvolutionDescriptor_t conv,
                                      cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                      std::size_t workspace_bytes, const void* beta,
                                      cudnnTensorDescriptor_t y_desc, void* y);
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t handle, const void* alpha,
                                           cudnnFilterDescriptor_t w_desc, const void* w,
                                           cudnnTensorDescriptor_t dy_desc, const void* dy,
                                           cudnnConvolutionDescriptor_t conv,
                                           cudnnConvolutionBwdDataAlgo_t algo, void* workspace,
                                           std::size_t workspace_bytes, const void* beta,
                                           cudnnTensorDescriptor_t dx_desc, void* dx);
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t handle, const void* alpha,
                                             cudnnTensorDescriptor_t x_desc, const void* x,
                                             cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             cudnnConvolutionDescriptor_t conv,
                                             cudnnConvolutionBwdFilterAlgo_t algo, void* workspace,
                                             std::size_t workspace_bytes, const void* beta,
                                             cudnnFilterDescriptor_t dw_desc, void* dw);

cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* desc);
cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t desc);
cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc, cudnnPoolingMode_t mode,
                                          cudnnNanPropagation_t nan, int window_h, int window_w,
                                          int pad_h, int pad_w, int stride_h, int stride_w);
cudnnStatus_t cudnnGetPooling2dForwardOutputDim(cudnnPoolingDescriptor_t desc,
                                                cudnnTensorDescriptor_t x, int* n, int* c, int* h,
                                                int* w);
cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle, cudnnPoolingDescriptor_t desc,
                                  const void* alpha, cudnnTensorDescriptor_t x_desc, const void* x,
                                  const void* beta, cudnnTensorDescriptor_t y_desc, void* y);
cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle, cudnnPoolingDescriptor_t desc,
                                   const void* alpha, cudnnTensorDescriptor_t y_desc, const void* y,
                                   cudnnTensorDescriptor_t dy_desc, const void* dy,
                                   cudnnTensorDescriptor_t x_desc, const void* x, const void* beta,
                                   cudnnTensorDescriptor_t dx_desc, void* dx);

// ---- the graph API: descriptors only ----

struct cudnnBackendDescriptorStruct;
using cudnnBackendDescriptor_t = cudnnBackendDescriptorStruct*;
enum cudnnBackendDescriptorType_t {
  CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0,
  CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 2,
  CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 3,
  CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 4,
  CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR = 10,
  CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 11,
  CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 12,
  CUDNN_BACKEND_TENSOR_DESCRIPTOR = 13,
  CUDNN_BACKEND_MATMUL_DESCRIPTOR = 14,
  CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR = 15,
  CUDNN_BACKEND_REDUCTION_DESCRIPTOR = 18,
  CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR = 19,
  CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR = 25,
  CUDNN_BACKEND_DEVICEPROP_DESCRIPTOR = 33,
};
enum cudnnBackendAttributeType_t {
  CUDNN_TYPE_HANDLE = 0,
  CUDNN_TYPE_DATA_TYPE = 1,
  CUDNN_TYPE_BOOLEAN = 2,
  CUDNN_TYPE_INT64 = 3,
  CUDNN_TYPE_FLOAT = 4,
  CUDNN_TYPE_DOUBLE = 5,
  CUDNN_TYPE_VOID_PTR = 6,
  CUDNN_TYPE_POINTWISE_MODE = 9,
  CUDNN_TYPE_HEUR_MODE = 12,
  CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
  CUDNN_TYPE_REDUCTION_OPERATOR_TYPE = 23,
};
enum cudnnBackendAttributeName_t {
  CUDNN_ATTR_POINTWISE_MODE = 0,
  CUDNN_ATTR_POINTWISE_MATH_PREC = 1,
  CUDNN_ATTR_POINTWISE_AXIS = 11,
  CUDNN_ATTR_ENGINEHEUR_MODE = 200,
  CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
  CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,
  CUDNN_ATTR_ENGINEHEUR_DEVICEPROP = 204,
  CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400,
  CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
  CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,
  CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR = 750,
  CUDNN_ATTR_OPERATION_POINTWISE_XDESC = 751,
  CUDNN_ATTR_OPERATION_POINTWISE_BDESC = 752,
  CUDNN_ATTR_OPERATION_POINTWISE_YDESC = 753,
  CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1 = 754,
  CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2 = 755,
  CUDNN_ATTR_OPERATION_POINTWISE_TDESC = 759,
  CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800,
  CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
  CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
  CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
  CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
  CUDNN_ATTR_TENSOR_STRIDES = 903,
  CUDNN_ATTR_TENSOR_UNIQUE_ID = 905,
  CUDNN_ATTR_TENSOR_IS_VIRTUAL = 906,
  CUDNN_ATTR_TENSOR_IS_BY_VALUE = 907,
  CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
  CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
  CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,
  CUDNN_ATTR_MATMUL_COMP_TYPE = 1500,
  CUDNN_ATTR_OPERATION_MATMUL_ADESC = 1520,
  CUDNN_ATTR_OPERATION_MATMUL_BDESC = 1521,
  CUDNN_ATTR_OPERATION_MATMUL_CDESC = 1522,
  CUDNN_ATTR_OPERATION_MATMUL_DESC = 1523,
  CUDNN_ATTR_OPERATION_MATMUL_GEMM_M_OVERRIDE_DESC = 1525,
  CUDNN_ATTR_OPERATION_MATMUL_GEMM_N_OVERRIDE_DESC = 1526,
  CUDNN_ATTR_OPERATION_MATMUL_GEMM_K_OVERRIDE_DESC = 1527,
  CUDNN_ATTR_REDUCTION_OPERATOR = 1600,
  CUDNN_ATTR_REDUCTION_COMP_TYPE = 1601,
  CUDNN_ATTR_REDUCTION_IS_DETERMINISTIC = 1602,
  CUDNN_ATTR_OPERATION_REDUCTION_XDESC = 1610,
  CUDNN_ATTR_OPERATION_REDUCTION_YDESC = 1611,
  CUDNN_ATTR_OPERATION_REDUCTION_DESC = 1612,
  CUDNN_ATTR_OPERATION_RESHAPE_XDESC = 1700,
  CUDNN_ATTR_OPERATION_RESHAPE_YDESC = 1701,
};
enum cudnnPointwiseMode_t {
  CUDNN_POINTWISE_ADD = 0,
  CUDNN_POINTWISE_DIV = 5,
  CUDNN_POINTWISE_MUL = 7,
  CUDNN_POINTWISE_SUB = 9,
  CUDNN_POINTWISE_EXP = 103,
  CUDNN_POINTWISE_LOG = 106,
  CUDNN_POINTWISE_IDENTITY = 114,
  CUDNN_POINTWISE_CMP_GE = 304,
  CUDNN_POINTWISE_CMP_LT = 305,
  CUDNN_POINTWISE_LOGICAL_AND = 307,
  CUDNN_POINTWISE_GEN_INDEX = 501,
  CUDNN_POINTWISE_BINARY_SELECT = 601,
};
enum cudnnReduceTensorOp_t { CUDNN_REDUCE_TENSOR_ADD = 0, CUDNN_REDUCE_TENSOR_MAX = 3 };
enum cudnnBackendHeurMode_t { CUDNN_HEUR_MODE_A = 1, CUDNN_HEUR_MODE_FALLBACK = 3 };

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t* desc);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t count,
                                       const void* values);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, std::int64_t requested,
                                       std::int64_t* count, void* values);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t pack);
