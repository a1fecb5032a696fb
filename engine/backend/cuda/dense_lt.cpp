#include "engine/backend/cuda/dense_lt.h"

#include <utility>

#include "engine/backend/cuda/cuda_check.h"

namespace mixlab::cuda {

const char* cublas_status_name(cublasStatus_t status) {
  switch (status) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "not initialised (CUBLAS_STATUS_NOT_INITIALIZED)";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "out of memory (CUBLAS_STATUS_ALLOC_FAILED)";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "invalid value (CUBLAS_STATUS_INVALID_VALUE)";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "not supported by this GPU (CUBLAS_STATUS_ARCH_MISMATCH)";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "mapping error (CUBLAS_STATUS_MAPPING_ERROR)";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "execution failed (CUBLAS_STATUS_EXECUTION_FAILED)";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "internal error (CUBLAS_STATUS_INTERNAL_ERROR)";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "not supported (CUBLAS_STATUS_NOT_SUPPORTED)";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "license error (CUBLAS_STATUS_LICENSE_ERROR)";
  }
  return "unknown cuBLAS status";
}

cudaDataType_t cuda_type(DType dtype) {
  switch (dtype) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

cudaDataType_t cuda_type(LtFp8 format) {
  return format == LtFp8::e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

LtMatmul::LtMatmul(cublasLtHandle_t handle, const LtMatmulShape& s, std::size_t workspace_bytes,
                   std::string what)
    : handle_(handle), workspace_bytes_(workspace_bytes), what_(std::move(what)) {
  try {
    const cublasComputeType_t compute =
        s.ab == DType::f32 && s.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, compute, CUDA_R_32F));
    const cublasOperation_t ta = s.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t tb = s.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    switch (s.epilogue) {
      case LtEpilogue::none:
        break;
      case LtEpilogue::bias:
        epilogue = CUBLASLT_EPILOGUE_BIAS;
        break;
      case LtEpilogue::relu:
        epilogue = CUBLASLT_EPILOGUE_RELU;
        break;
      case LtEpilogue::relu_bias:
        epilogue = CUBLASLT_EPILOGUE_RELU_BIAS;
        break;
    }
    has_bias_ = s.epilogue == LtEpilogue::bias || s.epilogue == LtEpilogue::relu_bias;
    fp8_ = s.fp8();
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                                sizeof epilogue));
    if (has_bias_) {
      const cudaDataType_t bias_type = cuda_type(s.cd);
      CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                  &bias_type, sizeof bias_type));
    }
    // Stored (not operated) dimensions, column-major; leading dimensions packed unless given.
    const std::int64_t a_cols = s.transa ? s.m : s.k, b_cols = s.transb ? s.k : s.n;
    const cudaDataType_t a_type = fp8_ ? cuda_type(s.a8) : cuda_type(s.ab);
    const cudaDataType_t b_type = fp8_ ? cuda_type(s.b8) : cuda_type(s.ab);
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&a_, a_type, static_cast<std::uint64_t>(s.a_rows()),
                                            static_cast<std::uint64_t>(a_cols), s.lead_a()));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&b_, b_type, static_cast<std::uint64_t>(s.b_rows()),
                                            static_cast<std::uint64_t>(b_cols), s.lead_b()));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&d_, cuda_type(s.cd), static_cast<std::uint64_t>(s.m),
                                            static_cast<std::uint64_t>(s.n), s.lead_d()));
    if (s.batch > 1) {
      const std::int32_t count = s.batch;
      const std::pair<cublasLtMatrixLayout_t, std::int64_t> strided[] = {
          {a_, s.stride_a}, {b_, s.stride_b}, {d_, s.stride_d}};
      for (const auto& [layout, stride] : strided) {
        CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                      &count, sizeof count));
        CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
            layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
      }
    }

    cublasLtMatmulPreference_t pref = nullptr;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    const cublasStatus_t status = [&] {
      const cublasStatus_t st =
          cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                               &workspace_bytes_, sizeof workspace_bytes_);
      if (st != CUBLAS_STATUS_SUCCESS) return st;
      // Strided views (attention's heads) may start anywhere from 2 to 256 bytes in: the
      // heuristic must know (it assumes 256).
      const auto align = static_cast<std::uint32_t>(s.align);
      for (const cublasLtMatmulPreferenceAttributes_t attr :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
        const cublasStatus_t sa =
            cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof align);
        if (sa != CUBLAS_STATUS_SUCCESS) return sa;
      }
      return cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, pref, 1, &result, &found);
    }();
    cublasLtMatmulPreferenceDestroy(pref);
    // NOT_SUPPORTED is how the heuristic says "no algorithm" too: both name the product, its
    // types and its epilogue (what a first run on a new GPU or library needs to know).
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0)) {
      throw BackendError(what_ + ": cuBLASLt has no algorithm for a " + std::to_string(s.m) + "x" +
                         std::to_string(s.n) + "x" + std::to_string(s.k) + " matmul" +
                         (s.batch > 1 ? " (a batch of " + std::to_string(s.batch) + ")" : "") +
                         " of " +
                         (fp8_ ? std::string(s.a8 == LtFp8::e5m2 ? "E5M2" : "E4M3") + " x " +
                                     (s.b8 == LtFp8::e5m2 ? "E5M2" : "E4M3")
                               : std::string(to_string(s.ab))) +
                         " into " + std::string(to_string(s.cd)) +
                         (s.tf32 && s.ab == DType::f32 ? " on TF32" : "") +
                         (s.epilogue == LtEpilogue::none ? "" : " with a bias or relu epilogue") +
                         " (" + cublas_status_name(status) + ")");
    }
    CUBLAS_CHECK(status);
    algo_ = result.algo;
  } catch (const BackendError& e) {
    release();
    if (std::string(e.what()).rfind(what_, 0) == 0) throw;
    throw BackendError(what_ + ": " + e.what());
  }
}

LtMatmul::~LtMatmul() {
  release();
}

LtMatmul::LtMatmul(LtMatmul&& o) noexcept {
  *this = std::move(o);
}

LtMatmul& LtMatmul::operator=(LtMatmul&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = std::exchange(o.handle_, nullptr);
    op_ = std::exchange(o.op_, nullptr);
    a_ = std::exchange(o.a_, nullptr);
    b_ = std::exchange(o.b_, nullptr);
    d_ = std::exchange(o.d_, nullptr);
    algo_ = o.algo_;
    workspace_bytes_ = o.workspace_bytes_;
    has_bias_ = o.has_bias_;
    fp8_ = o.fp8_;
    what_ = std::move(o.what_);
  }
  return *this;
}

void LtMatmul::release() {
  if (d_) cublasLtMatrixLayoutDestroy(d_);
  if (b_) cublasLtMatrixLayoutDestroy(b_);
  if (a_) cublasLtMatrixLayoutDestroy(a_);
  if (op_) cublasLtMatmulDescDestroy(op_);
  op_ = nullptr;
  a_ = b_ = d_ = nullptr;
}

void LtMatmul::run_fp8(const void* a, const float* a_scale, const void* b, const float* b_scale,
                       void* d, const void* bias, void* workspace, cudaStream_t stream) const {
  if (!fp8_) throw BackendError(what_ + ": an FP8 run of a matmul configured without FP8");
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale,
                                              sizeof a_scale));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale,
                                              sizeof b_scale));
  run(a, b, d, bias, workspace, stream);
}

void LtMatmul::run(const void* a, const void* b, void* d, const void* bias, void* workspace,
                   cudaStream_t stream) const {
  if (has_bias_) {
    CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
  }
  const float alpha = 1.0f, beta = 0.0f;
  const cublasStatus_t status = cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d,
                                               d_, &algo_, workspace, workspace_bytes_, stream);
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw BackendError(what_ + ": cuBLASLt error: " + cublas_status_name(status));
  }
}

}  // namespace mixlab::cuda
