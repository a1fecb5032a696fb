// cudasim's host side: streams that run only when the host waits (so that a missing wait shows),
// events between streams, graph capture's rules, and the cuBLASLt and cuDNN emulations against
// host loops and against the rules they check (sim.CudaSim*).
#include <cublasLt.h>
#include <cudnn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

struct Device {
  void* ptr = nullptr;
  explicit Device(std::size_t bytes) { EXPECT_EQ(cudaMalloc(&ptr, bytes), cudaSuccess); }
  ~Device() { cudaFree(ptr); }
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

struct Pinned {
  unsigned char* ptr = nullptr;
  explicit Pinned(std::size_t bytes) {
    EXPECT_EQ(cudaMallocHost(reinterpret_cast<void**>(&ptr), bytes), cudaSuccess);
  }
  ~Pinned() { cudaFreeHost(ptr); }
};

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { EXPECT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess); }
  ~Stream() { cudaStreamDestroy(s); }
};

template <class T>
void upload(void* dst, const std::vector<T>& host) {
  ASSERT_EQ(cudaMemcpy(dst, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice),
            cudaSuccess);
}
template <class T>
std::vector<T> download(const void* src, std::size_t n) {
  std::vector<T> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), src, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

TEST(CudaSimStreams, WorkRunsWhenTheHostWaitsSoPinnedMemoryIsStaleUntilThen) {
  Device dev(64);
  Pinned host(64);
  Stream s;
  std::memset(host.ptr, 0x22, 64);
  ASSERT_EQ(cudaMemsetAsync(dev.ptr, 0x11, 64, s.s), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(host.ptr, dev.ptr, 64, cudaMemcpyDeviceToHost, s.s), cudaSuccess);
  EXPECT_EQ(host.ptr[0], 0x22) << "the copy ran before the host waited for it";
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(host.ptr[0], 0x11);
  EXPECT_EQ(host.ptr[63], 0x11);
  // Into pageable memory the copy returns done, as CUDA documents.
  std::vector<unsigned char> pageable(64, 0);
  ASSERT_EQ(cudaMemcpyAsync(pageable.data(), dev.ptr, 64, cudaMemcpyDeviceToHost, s.s),
            cudaSuccess);
  EXPECT_EQ(pageable[5], 0x11);
}

// Two streams: the second reads what the first writes. With an event between them it always
// sees the write; without, cudasim runs the streams in a random order and some runs read first.
TEST(CudaSimStreams, OnlyAnEventOrdersTwoStreams) {
  Device dev(4);
  Pinned host(4);
  Stream writer, reader;
  cudaEvent_t written = nullptr;
  ASSERT_EQ(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), cudaSuccess);
  int stale_without = 0;
  for (int trial = 0; trial < 40; ++trial) {
    for (const bool wait : {true, false}) {
      ASSERT_EQ(cudaMemset(dev.ptr, 0, 4), cudaSuccess);
      ASSERT_EQ(cudaMemsetAsync(dev.ptr, 0x33, 4, writer.s), cudaSuccess);
      ASSERT_EQ(cudaEventRecord(written, writer.s), cudaSuccess);
      if (wait) {
        ASSERT_EQ(cudaStreamWaitEvent(reader.s, written, 0), cudaSuccess);
      }
      ASSERT_EQ(cudaMemcpyAsync(host.ptr, dev.ptr, 4, cudaMemcpyDeviceToHost, reader.s),
                cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(reader.s), cudaSuccess);
      if (wait) {
        EXPECT_EQ(host.ptr[0], 0x33) << "trial " << trial;
      }
      if (!wait && host.ptr[0] == 0) ++stale_without;
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    }
  }
  EXPECT_GT(stale_without, 0) << "the reader never ran first without the event";
  cudaEventDestroy(written);
}

TEST(CudaSimGraphs, AWaitInsideACaptureBreaksItAndALaunchReplaysTheCapturedWork) {
  Device dev(16);
  Stream s;
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev.ptr, 1, 16, s.s), cudaSuccess);
  EXPECT_EQ(cudaStreamSynchronize(s.s), cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s.s, &graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_EQ(graph, nullptr);
  cudaGetLastError();

  // A copy from pageable memory cannot be captured either.
  std::vector<unsigned char> pageable(16, 7);
  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  EXPECT_EQ(cudaMemcpyAsync(dev.ptr, pageable.data(), 16, cudaMemcpyHostToDevice, s.s),
            cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(cudaStreamEndCapture(s.s, &graph), cudaErrorStreamCaptureInvalidated);
  cudaGetLastError();

  ASSERT_EQ(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  ASSERT_EQ(cudaMemsetAsync(dev.ptr, 5, 16, s.s), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(s.s, &graph), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
  EXPECT_EQ(download<unsigned char>(dev.ptr, 16)[0], 0xFF) << "captured work ran at capture";
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int launch = 0; launch < 2; ++launch) {
    ASSERT_EQ(cudaMemset(dev.ptr, 0, 16), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(exec, s.s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s.s), cudaSuccess);
    EXPECT_EQ(download<unsigned char>(dev.ptr, 16)[15], 5) << "launch " << launch;
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST(CudaSimMemory, AnAllocationBeyondTheEmulatedGpuFailsAsOnAGpu) {
  std::size_t free_bytes = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total), cudaSuccess);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, free_bytes + 1), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// ---- cuBLASLt ----

struct Lt {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulHeuristicResult_t result{};
  Lt(cublasOperation_t ta, cublasOperation_t tb, cudaDataType_t ab, cudaDataType_t a8_b,
     cudaDataType_t dt, int m, int n, int k) {
    cublasLtCreate(&handle);
    cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    const bool at = ta == CUBLAS_OP_T, bt = tb == CUBLAS_OP_T;
    cublasLtMatrixLayoutCreate(&a, ab, at ? k : m, at ? m : k, at ? k : m);
    cublasLtMatrixLayoutCreate(&b, a8_b, bt ? n : k, bt ? k : n, bt ? n : k);
    cublasLtMatrixLayoutCreate(&d, dt, m, n, m);
  }
  cublasStatus_t heuristic() {
    int found = 0;
    return cublasLtMatmulAlgoGetHeuristic(handle, op, a, b, d, d, nullptr, 1, &result, &found);
  }
  ~Lt() {
    cublasLtMatrixLayoutDestroy(d);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(op);
    cublasLtDestroy(handle);
  }
};

TEST(CudaSimBlasLt, AProductIsColumnMajorAndAMisalignedPointerIsRefused) {
  const int m = 3, n = 2, k = 5;
  // A stored transposed (k x m), B as is (k x n); D = A^T-op . B, m x n.
  std::vector<float> a(k * m), b(k * n);
  std::iota(a.begin(), a.end(), 1.0f);
  std::iota(b.begin(), b.end(), -4.0f);
  Lt lt(CUBLAS_OP_T, CUBLAS_OP_N, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, m, n, k);
  ASSERT_EQ(lt.heuristic(), CUBLAS_STATUS_SUCCESS);
  Device da(256 + a.size() * 4), db(b.size() * 4), dd(m * n * 4);
  upload(da.ptr, a);
  upload(db.ptr, b);
  const float alpha = 1, beta = 0;
  ASSERT_EQ(cublasLtMatmul(lt.handle, lt.op, &alpha, da.ptr, lt.a, db.ptr, lt.b, &beta, dd.ptr,
                           lt.d, dd.ptr, lt.d, &lt.result.algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  const std::vector<float> got = download<float>(dd.ptr, m * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      float want = 0;
      for (int q = 0; q < k; ++q) want += a[q + i * k] * b[q + j * k];
      EXPECT_EQ(got[i + j * m], want) << i << "," << j;
    }
  // The heuristic assumed 256-byte aligned pointers (no preference said less).
  EXPECT_EQ(cublasLtMatmul(lt.handle, lt.op, &alpha, da.as<char>() + 4, lt.a, db.ptr, lt.b, &beta,
                           dd.ptr, lt.d, dd.ptr, lt.d, &lt.result.algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
  // Host memory is not a matrix.
  EXPECT_EQ(cublasLtMatmul(lt.handle, lt.op, &alpha, a.data(), lt.a, db.ptr, lt.b, &beta, dd.ptr,
                           lt.d, dd.ptr, lt.d, &lt.result.algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_INVALID_VALUE);
}

TEST(CudaSimBlasLt, Fp8NeedsTheTnLayoutAndAppliesTheScales) {
  const int m = 16, n = 16, k = 16;
  Lt nn(CUBLAS_OP_N, CUBLAS_OP_N, CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, m, n, k);
  EXPECT_EQ(nn.heuristic(), CUBLAS_STATUS_NOT_SUPPORTED);
  Lt both_e5m2(CUBLAS_OP_T, CUBLAS_OP_N, CUDA_R_8F_E5M2, CUDA_R_8F_E5M2, CUDA_R_16BF, m, n, k);
  EXPECT_EQ(both_e5m2.heuristic(), CUBLAS_STATUS_NOT_SUPPORTED);
  Lt tn(CUBLAS_OP_T, CUBLAS_OP_N, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_32F, m, n, k);
  ASSERT_EQ(tn.heuristic(), CUBLAS_STATUS_SUCCESS);
  // A: E4M3 1.0 (0x38) and 2.0 (0x40); B: E5M2 0.5 (0x38) everywhere; scales 3 and 0.25.
  std::vector<std::uint8_t> a(k * m), b(k * n, 0x38);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = i % 2 ? 0x40 : 0x38;
  Device da(a.size()), db(b.size()), dd(m * n * 4), scales(8);
  upload(da.ptr, a);
  upload(db.ptr, b);
  upload(scales.ptr, std::vector<float>{3.0f, 0.25f});
  const float* sa = scales.as<float>();
  const float* sb = scales.as<float>() + 1;
  cublasLtMatmulDescSetAttribute(tn.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof sa);
  cublasLtMatmulDescSetAttribute(tn.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof sb);
  const float alpha = 1, beta = 0;
  ASSERT_EQ(cublasLtMatmul(tn.handle, tn.op, &alpha, da.ptr, tn.a, db.ptr, tn.b, &beta, dd.ptr,
                           tn.d, dd.ptr, tn.d, &tn.result.algo, nullptr, 0, nullptr),
            CUBLAS_STATUS_SUCCESS);
  // Row i of op(A) is column i of the stored k x m A: 8 ones and 8 twos (k even); times 0.5.
  const float want = (8 * 1.0f + 8 * 2.0f) * 0.5f * 3.0f * 0.25f;
  for (const float v : download<float>(dd.ptr, m * n)) EXPECT_EQ(v, want);
}

// ---- cuDNN ----

float sum_of_products(const std::vector<float>& x, const std::vector<float>& y) {
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * y[i];
  return static_cast<float>(s);
}

// A grouped, strided, padded NHWC convolution against a direct loop, and its two backward passes
// as its adjoints: <dy, conv(x, w)> = <bwd_data(dy, w), x> = <bwd_filter(x, dy), w>.
TEST(CudaSimDnn, AConvolutionAndItsBackwardPassesAreAdjoint) {
  const int n = 2, c = 4, h = 5, w = 6, k = 6, groups = 2, r = 3, s = 2, pad = 1, stride = 2;
  cudnnHandle_t handle = nullptr;
  ASSERT_EQ(cudnnCreate(&handle), CUDNN_STATUS_SUCCESS);
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnCreateTensorDescriptor(&xd);
  cudnnCreateTensorDescriptor(&yd);
  cudnnCreateFilterDescriptor(&wd);
  cudnnCreateConvolutionDescriptor(&cd);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(
      cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, k, c / groups, r, s),
      CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(cd, pad, pad, stride, stride, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  cudnnSetConvolutionGroupCount(cd, groups);
  cudnnSetConvolutionMathType(cd, CUDNN_FMA_MATH);
  int on = 0, oc = 0, oh = 0, ow = 0;
  ASSERT_EQ(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &on, &oc, &oh, &ow),
            CUDNN_STATUS_SUCCESS);
  EXPECT_EQ(oh, (h + 2 * pad - r) / stride + 1);
  EXPECT_EQ(ow, (w + 2 * pad - s) / stride + 1);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, k, oh, ow),
            CUDNN_STATUS_SUCCESS);

  std::vector<float> x(n * h * w * c), filt(k * r * s * (c / groups)), dy(n * oh * ow * k);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.7f * static_cast<float>(i));
  for (std::size_t i = 0; i < filt.size(); ++i) filt[i] = std::cos(0.3f * static_cast<float>(i));
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = std::sin(1.3f * static_cast<float>(i) + 1);
  Device dx_(x.size() * 4), dw_(filt.size() * 4), dy_(dy.size() * 4), y_(dy.size() * 4),
      gx_(x.size() * 4), gw_(filt.size() * 4);
  upload(dx_.ptr, x);
  upload(dw_.ptr, filt);
  upload(dy_.ptr, dy);
  const float one = 1, zero = 0;
  const auto fwd = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  ASSERT_EQ(cudnnConvolutionForward(handle, &one, xd, dx_.ptr, wd, dw_.ptr, cd, fwd, nullptr, 0,
                                    &zero, yd, y_.ptr),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionBackwardData(handle, &one, wd, dw_.ptr, yd, dy_.ptr, cd,
                                         CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, nullptr, 0, &zero, xd,
                                         gx_.ptr),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnConvolutionBackwardFilter(handle, &one, xd, dx_.ptr, yd, dy_.ptr, cd,
                                           CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, nullptr, 0, &zero,
                                           wd, gw_.ptr),
            CUDNN_STATUS_SUCCESS);
  const std::vector<float> y = download<float>(y_.ptr, dy.size());
  // The direct loop, NHWC input and output, filter (k, r, s, c / groups).
  const int cg = c / groups, kg = k / groups;
  for (int b = 0; b < n; ++b)
    for (int i = 0; i < oh; ++i)
      for (int j = 0; j < ow; ++j)
        for (int f = 0; f < k; ++f) {
          double want = 0;
          for (int u = 0; u < r; ++u)
            for (int v = 0; v < s; ++v)
              for (int q = 0; q < cg; ++q) {
                const int ih = i * stride - pad + u, iw = j * stride - pad + v;
                if (ih < 0 || ih >= h || iw < 0 || iw >= w) continue;
                want += static_cast<double>(x[((b * h + ih) * w + iw) * c + f / kg * cg + q]) *
                        filt[((f * r + u) * s + v) * cg + q];
              }
          EXPECT_NEAR(y[((b * oh + i) * ow + j) * k + f], want, 1e-5) << b << i << j << f;
        }
  const float forward = sum_of_products(dy, y);
  EXPECT_NEAR(sum_of_products(download<float>(gx_.ptr, x.size()), x), forward, 1e-4);
  EXPECT_NEAR(sum_of_products(download<float>(gw_.ptr, filt.size()), filt), forward, 1e-4);
  // An output descriptor of the wrong size is refused, naming why.
  cudnnTensorDescriptor_t bad = nullptr;
  cudnnCreateTensorDescriptor(&bad);
  cudnnSetTensor4dDescriptor(bad, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, k, oh + 1, ow);
  EXPECT_EQ(cudnnConvolutionForward(handle, &one, xd, dx_.ptr, wd, dw_.ptr, cd, fwd, nullptr, 0,
                                    &zero, bad, y_.ptr),
            CUDNN_STATUS_BAD_PARAM);
  cudnnDestroyTensorDescriptor(bad);
  cudnnDestroyConvolutionDescriptor(cd);
  cudnnDestroyFilterDescriptor(wd);
  cudnnDestroyTensorDescriptor(yd);
  cudnnDestroyTensorDescriptor(xd);
  cudnnDestroy(handle);
}

}  // namespace
