// cudasim's cuBLASLt: the calls MixLab makes, with the rules cuBLASLt's documentation states
// checked where a GPU would refuse or misbehave, and the products computed on the host when the
// stream reaches them (cuda_sim.h).
//
// What it checks: each layout against the operation (op(A) m x k, op(B) k x n, C and D m x n,
// column-major, ld >= rows), equal batch counts, the type combinations of a float32-accumulating
// matmul, FP8's (compute capability 8.9 on, A transposed and B not, not both E5M2, leading
// dimensions and batch strides multiples of 16 bytes, pointers 16-byte aligned, scale pointers in
// device memory), every pointer inside device memory over the whole range the layout spans, and
// the pointers' alignment against the minimum the algorithm was chosen for (256 bytes unless the
// preference says less).
// What it computes: D = act(alpha * a_scale * b_scale * op(A) op(B) + beta * C + bias), the
// products summed in float32 (oneDNN's sgemm) over inputs decoded exactly (TF32 rounds float32
// inputs to 10 mantissa bits first), D rounded to its type to nearest even. Not the GPU's order of
// summation.
#include <cublasLt.h>
#include <oneapi/dnnl/dnnl.h>

#include "tests/gpu/sim/sim_math.h"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

struct cublasLtContext {
  int magic = 0x4c74;
};
struct cublasLtMatmulDescOpaque_t {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale = CUDA_R_32F;
  cublasOperation_t transa = CUBLAS_OP_N, transb = CUBLAS_OP_N;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int bias_type = -1;  // -1: D's
  const float* a_scale = nullptr;
  const float* b_scale = nullptr;
  const float* c_scale = nullptr;
  const float* d_scale = nullptr;
  float* amax_d = nullptr;
};
struct cublasLtMatrixLayoutOpaque_t {
  cudaDataType_t type = CUDA_R_32F;
  std::uint64_t rows = 0, cols = 0;
  std::int64_t ld = 0;
  std::int32_t batch = 1;
  std::int64_t stride = 0;
};
struct cublasLtMatmulPreferenceOpaque_t {
  std::uint64_t workspace = 0;
  std::uint32_t align[4] = {256, 256, 256, 256};  // A B C D
};

namespace {

constexpr std::uint64_t kAlgoMagic = 0x6375646173696d4cull;

std::size_t type_bytes(cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F:
      return 4;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
      return 1;
  }
  return 0;
}

const char* type_name(int t) {
  switch (t) {
    case CUDA_R_32F:
      return "CUDA_R_32F";
    case CUDA_R_16F:
      return "CUDA_R_16F";
    case CUDA_R_16BF:
      return "CUDA_R_16BF";
    case CUDA_R_8F_E4M3:
      return "CUDA_R_8F_E4M3";
    case CUDA_R_8F_E5M2:
      return "CUDA_R_8F_E5M2";
  }
  return "an unknown type";
}

bool is_fp8(cudaDataType_t t) {
  return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2;
}

cublasStatus_t refuse(cublasStatus_t status, const std::string& why) {
  std::fprintf(stderr, "cudasim: cuBLASLt: %s\n", why.c_str());
  return status;
}

float fp8_value(std::uint8_t v, bool e5m2) {
  const int sign = v >> 7;
  const int exp_bits = e5m2 ? 5 : 4, man_bits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const int e = (v >> man_bits) & ((1 << exp_bits) - 1), m = v & ((1 << man_bits) - 1);
  float out;
  if (e5m2 && e == 31) {
    out = m == 0 ? INFINITY : NAN;
  } else if (!e5m2 && e == 15 && m == 7) {
    out = NAN;  // E4M3FN: no infinities, one NaN per sign
  } else if (e == 0) {
    out = std::ldexp(static_cast<float>(m), 1 - bias - man_bits);
  } else {
    out = std::ldexp(static_cast<float>(m + (1 << man_bits)), e - bias - man_bits);
  }
  return sign ? -out : out;
}

float load(const void* base, std::size_t i, cudaDataType_t t) {
  switch (t) {
    case CUDA_R_32F:
      return static_cast<const float*>(base)[i];
    case CUDA_R_16F:
      return __half2float(static_cast<const __half*>(base)[i]);
    case CUDA_R_16BF:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
    case CUDA_R_8F_E4M3:
      return fp8_value(static_cast<const std::uint8_t*>(base)[i], false);
    case CUDA_R_8F_E5M2:
      return fp8_value(static_cast<const std::uint8_t*>(base)[i], true);
  }
  return NAN;
}

// count values of type t from element `first` of base into out[0], out[stride], ...
template <class Load>
void decode_run(Load load_one, std::size_t count, float* out, std::size_t stride, bool tf32) {
  for (std::size_t i = 0; i < count; ++i) {
    const float v = load_one(i);
    out[i * stride] = tf32 ? cudasim::tf32(v) : v;
  }
}
void decode(const void* base, std::size_t first, cudaDataType_t t, std::size_t count, float* out,
            std::size_t stride, bool tf32) {
  switch (t) {
    case CUDA_R_32F: {
      const float* p = static_cast<const float*>(base) + first;
      decode_run([p](std::size_t i) { return p[i]; }, count, out, stride, tf32);
      return;
    }
    case CUDA_R_16F: {
      const __half* p = static_cast<const __half*>(base) + first;
      decode_run([p](std::size_t i) { return __half2float(p[i]); }, count, out, stride, false);
      return;
    }
    case CUDA_R_16BF: {
      const __nv_bfloat16* p = static_cast<const __nv_bfloat16*>(base) + first;
      decode_run([p](std::size_t i) { return __bfloat162float(p[i]); }, count, out, stride, false);
      return;
    }
    default:
      decode_run([&](std::size_t i) { return load(base, first + i, t); }, count, out, stride,
                 false);
      return;
  }
}

void store(void* base, std::size_t i, cudaDataType_t t, float v) {
  switch (t) {
    case CUDA_R_32F:
      static_cast<float*>(base)[i] = v;
      return;
    case CUDA_R_16F:
      static_cast<__half*>(base)[i] = __float2half_rn(v);
      return;
    case CUDA_R_16BF:
      static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v);
      return;
    default:
      return;  // FP8 outputs: refused before
  }
}

struct Problem {
  std::uint64_t m = 0, n = 0, k = 0;
};

// The documented constraints of one matmul; CUBLAS_STATUS_SUCCESS when cuBLASLt would run it.
cublasStatus_t validate(const cublasLtMatmulDescOpaque_t& op, const cublasLtMatrixLayoutOpaque_t& a,
                        const cublasLtMatrixLayoutOpaque_t& b,
                        const cublasLtMatrixLayoutOpaque_t& c,
                        const cublasLtMatrixLayoutOpaque_t& d, const std::uint32_t align[4],
                        Problem* out) {
  const bool ta = op.transa == CUBLAS_OP_T, tb = op.transb == CUBLAS_OP_T;
  Problem p;
  p.m = ta ? a.cols : a.rows;
  p.k = ta ? a.rows : a.cols;
  const std::uint64_t kb = tb ? b.cols : b.rows;
  p.n = tb ? b.rows : b.cols;
  const auto dims = [](const cublasLtMatrixLayoutOpaque_t& l) {
    return std::to_string(l.rows) + "x" + std::to_string(l.cols);
  };
  if (kb != p.k)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "op(A) is " + std::to_string(p.m) + "x" +
                                                   std::to_string(p.k) + " but op(B) is " +
                                                   std::to_string(kb) + "x" + std::to_string(p.n));
  if (d.rows != p.m || d.cols != p.n || c.rows != d.rows || c.cols != d.cols)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "D is " + dims(d) + " (C " + dims(c) +
                                                   ") where op(A) op(B) is " + std::to_string(p.m) +
                                                   "x" + std::to_string(p.n));
  if (a.batch != d.batch || b.batch != d.batch || c.batch != d.batch)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "the layouts' batch counts differ");
  const bool fp8 = is_fp8(a.type) || is_fp8(b.type);
  if (fp8) {
    const int cc = [] {
      int major = 0, minor = 0;
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0);
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0);
      return major * 10 + minor;
    }();
    if (cc < 89)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "FP8 matmuls need compute capability 8.9");
    if (!is_fp8(a.type) || !is_fp8(b.type))
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "an FP8 matmul with one operand not FP8");
    if (a.type == CUDA_R_8F_E5M2 && b.type == CUDA_R_8F_E5M2)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "FP8 matmuls cannot take E5M2 for both A and B");
    if (!ta || tb)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "FP8 matmuls need A transposed and B not (the TN format)");
    if (op.compute != CUBLAS_COMPUTE_32F || op.scale != CUDA_R_32F)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "FP8 matmuls compute in CUBLAS_COMPUTE_32F");
    if (is_fp8(d.type) || c.type != d.type)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                    "cudasim emulates FP8 matmuls into 16- or "
                    "32-bit D (equal to C) only");
    for (const auto* l : {&a, &b}) {
      if (l->ld % 16 != 0 || (l->batch > 1 && l->stride % 16 != 0))
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                      "FP8 matmuls need leading dimensions and batch strides of A and B that are "
                      "multiples of 16 bytes (ld " +
                          std::to_string(l->ld) + ")");
    }
    for (int i = 0; i < 4; ++i) {
      if (align[i] < 16)
        return refuse(CUBLAS_STATUS_NOT_SUPPORTED,
                      "FP8 matmuls need 16-byte aligned matrices (a preference allows " +
                          std::to_string(align[i]) + ")");
    }
  } else {
    const bool ok_types =
        a.type == b.type && c.type == d.type &&
        ((a.type == CUDA_R_32F && d.type == CUDA_R_32F) ||
         (a.type == CUDA_R_16F && (d.type == CUDA_R_16F || d.type == CUDA_R_32F)) ||
         (a.type == CUDA_R_16BF && (d.type == CUDA_R_16BF || d.type == CUDA_R_32F)));
    if (!ok_types)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, std::string("no matmul of ") + type_name(a.type) +
                                                     " x " + type_name(b.type) + " into " +
                                                     type_name(d.type));
    if (op.compute == CUBLAS_COMPUTE_32F_FAST_TF32 && a.type != CUDA_R_32F)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "TF32 compute with 16-bit inputs");
    if (op.compute != CUBLAS_COMPUTE_32F && op.compute != CUBLAS_COMPUTE_32F_FAST_TF32)
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, "a compute type cudasim does not emulate");
  }
  if (op.epilogue == CUBLASLT_EPILOGUE_BIAS || op.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS) {
    const int bias_type = op.bias_type < 0 ? d.type : op.bias_type;
    if (bias_type != d.type && !(fp8 && bias_type == CUDA_R_16BF))
      return refuse(CUBLAS_STATUS_NOT_SUPPORTED, std::string("a bias of ") + type_name(bias_type) +
                                                     " for D of " + type_name(d.type));
  }
  if (out != nullptr) *out = p;
  return CUBLAS_STATUS_SUCCESS;
}

// Bytes from the start of a layout's first matrix to the end of its last.
std::size_t span_bytes(const cublasLtMatrixLayoutOpaque_t& l) {
  if (l.rows == 0 || l.cols == 0) return 0;
  const std::size_t one = (l.cols - 1) * static_cast<std::size_t>(l.ld) + l.rows;
  return ((l.batch - 1) * static_cast<std::size_t>(l.stride) + one) * type_bytes(l.type);
}

}  // namespace

std::size_t cublasLtGetVersion() {
  return 130000;
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale) {
  *desc = new cublasLtMatmulDescOpaque_t;
  (*desc)->compute = compute;
  (*desc)->scale = scale;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

template <class T>
cublasStatus_t read_attr(T* out, const void* buf, std::size_t bytes, const char* name) {
  if (bytes != sizeof(T))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, std::string(name) + ": " + std::to_string(bytes) +
                                                   " bytes, not " + std::to_string(sizeof(T)));
  std::memcpy(out, buf, sizeof(T));
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void* buf,
                                              std::size_t bytes) {
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      return read_attr(&desc->compute, buf, bytes, "COMPUTE_TYPE");
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      return read_attr(&desc->scale, buf, bytes, "SCALE_TYPE");
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return read_attr(&desc->transa, buf, bytes, "TRANSA");
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return read_attr(&desc->transb, buf, bytes, "TRANSB");
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return read_attr(&desc->epilogue, buf, bytes, "EPILOGUE");
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return read_attr(&desc->bias, buf, bytes, "BIAS_POINTER");
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return read_attr(&desc->bias_type, buf, bytes, "BIAS_DATA_TYPE");
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
      return read_attr(&desc->a_scale, buf, bytes, "A_SCALE_POINTER");
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
      return read_attr(&desc->b_scale, buf, bytes, "B_SCALE_POINTER");
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
      return read_attr(&desc->c_scale, buf, bytes, "C_SCALE_POINTER");
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
      return read_attr(&desc->d_scale, buf, bytes, "D_SCALE_POINTER");
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
      return read_attr(&desc->amax_d, buf, bytes, "AMAX_D_POINTER");
  }
  return refuse(CUBLAS_STATUS_INVALID_VALUE, "a matmul attribute cudasim does not know");
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType_t type,
                                          std::uint64_t rows, std::uint64_t cols, std::int64_t ld) {
  if (type_bytes(type) == 0) return refuse(CUBLAS_STATUS_INVALID_VALUE, "an unknown data type");
  if (ld < static_cast<std::int64_t>(std::max<std::uint64_t>(rows, 1)))
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "a column-major layout with ld " +
                                                   std::to_string(ld) + " below its " +
                                                   std::to_string(rows) + " rows");
  *layout = new cublasLtMatrixLayoutOpaque_t;
  (*layout)->type = type;
  (*layout)->rows = rows;
  (*layout)->cols = cols;
  (*layout)->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, std::size_t bytes) {
  switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return read_attr(&layout->batch, buf, bytes, "BATCH_COUNT");
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return read_attr(&layout->stride, buf, bytes, "STRIDED_BATCH_OFFSET");
    default:
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "a layout attribute cudasim does not set");
  }
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, std::size_t bytes) {
  switch (attr) {
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return read_attr(&pref->workspace, buf, bytes, "MAX_WORKSPACE_BYTES");
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return read_attr(&pref->align[attr - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES], buf, bytes,
                       "MIN_ALIGNMENT");
    default:
      return refuse(CUBLAS_STATUS_INVALID_VALUE, "a preference attribute cudasim does not set");
  }
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t op,
                                              cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                              cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t* results,
                                              int* found) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  *found = 0;
  const std::uint32_t defaults[4] = {256, 256, 256, 256};
  const std::uint32_t* align = pref != nullptr ? pref->align : defaults;
  const cublasStatus_t status = validate(*op, *a, *b, *c, *d, align, nullptr);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  cublasLtMatmulHeuristicResult_t r{};
  r.algo.data[0] = kAlgoMagic;
  for (int i = 0; i < 4; ++i) r.algo.data[1 + i] = align[i];
  r.workspaceSize = 0;
  r.state = CUBLAS_STATUS_SUCCESS;
  r.wavesCount = 1.0f;
  results[0] = r;
  *found = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t op, const void* alpha,
                              const void* a, cublasLtMatrixLayout_t a_layout, const void* b,
                              cublasLtMatrixLayout_t b_layout, const void* beta, const void* c,
                              cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo,
                              void* workspace, std::size_t workspace_bytes, cudaStream_t stream) {
  CUDASIM_API;
  (void)workspace;
  (void)workspace_bytes;
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || algo->data[0] != kAlgoMagic)
    return refuse(CUBLAS_STATUS_INVALID_VALUE, "cublasLtMatmul without a heuristic's algorithm");
  std::uint32_t align[4];
  for (int i = 0; i < 4; ++i) align[i] = static_cast<std::uint32_t>(algo->data[1 + i]);
  Problem p;
  const cublasStatus_t status =
      validate(*op, *a_layout, *b_layout, *c_layout, *d_layout, align, &p);
  if (status != CUBLAS_STATUS_SUCCESS) return status;
  const float alpha_v = *static_cast<const float*>(alpha),
              beta_v = *static_cast<const float*>(beta);
  // Every matrix inside device memory, at the alignment its algorithm was chosen for.
  const std::pair<const void*, const cublasLtMatrixLayoutOpaque_t*> mats[] = {
      {a, a_layout}, {b, b_layout}, {c, c_layout}, {d, d_layout}};
  const char* names = "ABCD";
  for (int i = 0; i < 4; ++i) {
    if (i == 2 && beta_v == 0.0f) continue;  // C is not read
    const auto [ptr, l] = mats[i];
    if (!cudasim::is_device(ptr, span_bytes(*l)))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    std::string("matrix ") + names[i] + " is not device memory over the " +
                        std::to_string(span_bytes(*l)) + " bytes its layout spans");
    const std::size_t stride_bytes = static_cast<std::size_t>(l->stride) * type_bytes(l->type);
    const auto u = reinterpret_cast<std::uintptr_t>(ptr);
    if (u % align[i] != 0 || (l->batch > 1 && stride_bytes % align[i] != 0))
      return refuse(CUBLAS_STATUS_INVALID_VALUE,
                    std::string("matrix ") + names[i] + " (or a batch of it) is not " +
                        std::to_string(align[i]) +
                        "-byte aligned, as its algorithm was chosen for");
  }
  const bool fp8 = is_fp8(a_layout->type);
  if (fp8) {
    for (const float* s : {op->a_scale, op->b_scale}) {
      if (s != nullptr && !cudasim::is_device(s, sizeof(float)))
        return refuse(CUBLAS_STATUS_INVALID_VALUE, "an FP8 scale pointer outside device memory");
    }
  }
  const bool has_bias =
      op->epilogue == CUBLASLT_EPILOGUE_BIAS || op->epilogue == CUBLASLT_EPILOGUE_RELU_BIAS;
  const auto bias_type =
      static_cast<cudaDataType_t>(op->bias_type < 0 ? d_layout->type : op->bias_type);
  if (has_bias && !cudasim::is_device(op->bias, p.m * type_bytes(bias_type)))
    return refuse(CUBLAS_STATUS_INVALID_VALUE,
                  "the bias is not " + std::to_string(p.m) + " values in device memory");
  // Queued with what the call says now (descriptors can change before the stream runs it).
  const cublasLtMatmulDescOpaque_t o = *op;
  const cublasLtMatrixLayoutOpaque_t la = *a_layout, lb = *b_layout, lc = *c_layout, ld = *d_layout;
  cudasim::enqueue(stream, "cublasLtMatmul", [=] {
    const bool ta = o.transa == CUBLAS_OP_T, tb = o.transb == CUBLAS_OP_T;
    const bool round_tf32 = o.compute == CUBLAS_COMPUTE_32F_FAST_TF32;
    float scale = alpha_v;
    if (fp8) {
      if (o.a_scale != nullptr) scale *= *o.a_scale;
      if (o.b_scale != nullptr) scale *= *o.b_scale;
    }
    float amax = 0;
    std::vector<float> packed_a(la.rows * la.cols), packed_b(lb.rows * lb.cols),
        products(p.m * p.n);
    for (std::int32_t batch = 0; batch < ld.batch; ++batch) {
      const auto at = [](const void* base, const cublasLtMatrixLayoutOpaque_t& l, std::int32_t i) {
        return static_cast<const char*>(base) + static_cast<std::size_t>(i) *
                                                    static_cast<std::size_t>(l.stride) *
                                                    type_bytes(l.type);
      };
      const char* pa = at(a, la, batch);
      const char* pb = at(b, lb, batch);
      const char* pc = beta_v != 0.0f ? at(c, lc, batch) : nullptr;
      char* pd = const_cast<char*>(at(d, ld, batch));
      // A and B decoded as stored (column-major, packed); oneDNN's row-major sgemm reads a
      // stored matrix as its transpose, so it computes C^T = op(B)^T . op(A)^T, which in memory
      // is C column-major: products[i + j * m] = op(A)(i, :) . op(B)(:, j), summed in float32.
      for (std::uint64_t col = 0; col < la.cols; ++col)
        decode(pa, col * la.ld, la.type, la.rows, &packed_a[col * la.rows], 1, round_tf32);
      for (std::uint64_t col = 0; col < lb.cols; ++col)
        decode(pb, col * lb.ld, lb.type, lb.rows, &packed_b[col * lb.rows], 1, round_tf32);
      const auto dim = [](std::uint64_t v) { return static_cast<dnnl_dim_t>(v); };
      if (p.k == 0) {
        std::fill(products.begin(), products.end(), 0.0f);
      } else if (dnnl_sgemm(tb ? 'T' : 'N', ta ? 'T' : 'N', dim(p.n), dim(p.m), dim(p.k), 1.0f,
                            packed_b.data(), dim(lb.rows), packed_a.data(), dim(la.rows), 0.0f,
                            products.data(), dim(p.m)) != dnnl_success) {
        cudasim::report(cudaErrorLaunchFailure, "cublasLtMatmul: oneDNN's sgemm failed");
        return;
      }
      for (std::uint64_t j = 0; j < p.n; ++j) {
        for (std::uint64_t i = 0; i < p.m; ++i) {
          float v = products[i + j * p.m] * scale;
          if (pc != nullptr) v += beta_v * load(pc, i + j * lc.ld, lc.type);
          if (has_bias) v += load(o.bias, i, bias_type);
          if (o.epilogue == CUBLASLT_EPILOGUE_RELU || o.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS)
            v = v > 0.0f ? v : 0.0f;
          amax = std::max(amax, std::fabs(v));
          store(pd, i + j * ld.ld, ld.type, v);
        }
      }
    }
    if (o.amax_d != nullptr) *o.amax_d = amax;
  });
  return CUBLAS_STATUS_SUCCESS;
}
