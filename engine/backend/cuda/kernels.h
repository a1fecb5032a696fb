// MixLab's own CUDA kernels: everything the CUDA executor does not hand to cuBLASLt or cuDNN.
// Host-callable launchers (this header compiles with g++); kernels_*.cu implement them by family
// (data, elementwise, pooling, rows, step) with the math shared with the CPU backend
// (engine/core/half.h, engine/ops/*.h).
//
// Tensors are device pointers of a DType (f32 = float, f16 = __half, bf16 = __nv_bfloat16) in
// NHWC / row-major layouts. Every launcher is asynchronous on `stream`, allocates nothing and is
// safe to capture in a CUDA graph: per-step values (the step number, the batch's real samples,
// the loss scale) are read from device memory (StepParams, DeviceState), never passed by value.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/precision.h"
#include "engine/ops/activation.h"
#include "engine/ops/batch_norm.h"
#include "engine/ops/broadcast.h"
#include "engine/ops/loss.h"
#include "engine/ops/loss_scale.h"
#include "engine/ops/merge.h"
#include "engine/ops/optimizer.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/model_spec.h"

namespace mixlab::cuda {

// Written by the host into pinned memory and copied to the device at the start of each step.
struct StepParams {
  std::uint64_t step = 0;  // dropout's mask varies with it
  int real_samples = 0;    // of the loaded batch (rows beyond are padding)
  int train = 1;           // 1: training step (dropout active); 0: evaluation
};

// Device-resident state of the training step; read back once per step (StepResult).
struct DeviceState {
  float loss_sum = 0.0f;  // over the batch's real samples (reset each step)
  float correct = 0.0f;
  int nonfinite = 0;             // a gradient or the loss was NaN or inf (each step)
  int applied = 0;               // the optimizer update of this step ran
  float step_scale = 1.0f;       // the loss scale this step ran with
  float lr_t = 0.0f;             // Adam's bias-corrected learning rate of this step's update
  LossScaleState<float> scaler;  // after this step's update
  std::int64_t iteration = 0;    // applied updates so far
};

struct OptimizerParams {
  OptimizerKind kind = OptimizerKind::adam;
  // double, as OptimizerConfig::learning_rate: Adam's lr_t is computed from it in double on the
  // device, as make_adam_update does on the host (a float here would shift lr_t by an ulp).
  double lr = 0.001;
  float momentum = 0.0f;
  bool nesterov = false;
  double beta_1 = 0.9, beta_2 = 0.999;
  float epsilon = 1e-7f;
};

namespace kernels {

// dst[i] = (to) src[i]; from == to copies.
void cast(const void* src, DType from, void* dst, DType to, std::int64_t n, cudaStream_t stream);

// Batch from a dataset kept on the device: row r < params->real_samples takes sample
// indices[r] (uint8 pixels -> float32, its `positions` labels copied), rows beyond are zero.
void gather_batch(const std::uint8_t* images, const std::int32_t* labels,
                  const std::int64_t* indices, const StepParams* params, int batch,
                  std::int64_t sample_elements, std::int64_t positions, float* out_images,
                  std::int32_t* out_labels, cudaStream_t stream);

// Elementwise activations (not softmax), engine/ops/activation.h's math in float32.
// `relu`: Keras's ReLU layer's arguments (fn relu).
void activation_forward(ActivationFn fn, const void* x, void* y, DType dtype, std::int64_t n,
                        cudaStream_t stream, const ReluArgs& relu = {});
// x is needed where activation_backward_needs_input (gelu, silu, hard_silu; may be null
// otherwise); y for the others.
void activation_backward(ActivationFn fn, const void* x, const void* y, const void* dy, void* dx,
                         DType dtype, std::int64_t n, cudaStream_t stream,
                         const ReluArgs& relu = {});
// Row-wise softmax over the last dimension (k) and its backward, float32 arithmetic.
void softmax_forward(const void* x, void* y, DType dtype, std::int64_t rows, int k,
                     cudaStream_t stream);
void softmax_backward(const void* y, const void* dy, void* dx, DType dtype, std::int64_t rows,
                      int k, cudaStream_t stream);

// Normalization: y = (x - mean[c]) / divisor[c] over the last axis of `channels` (device
// arrays; mean null: 0, for the backward dx = dy / divisor).
void channel_normalize(const void* x, void* y, DType dtype, const float* mean, const float* divisor,
                       int channels, std::int64_t n, cudaStream_t stream);

// y = x * scale + offset (Rescaling); backward: dx = dy * scale (offset 0).
void scale_offset(const void* x, void* y, DType dtype, float scale, float offset, std::int64_t n,
                  cudaStream_t stream);

// Dropout with engine/ops/dropout.h's counter-based mask for (seed, layer, params->step):
// y = x * mask.factor(noise.input_index(i)) when params->train, else y = x (noise: Keras's
// noise_shape, dropout_noise; none by default). Backward recomputes the mask.
void dropout(const void* x, void* y, DType dtype, std::int64_t n, double rate, std::uint64_t seed,
             int layer, const StepParams* params, cudaStream_t stream, const Broadcast& noise = {});

// y[r, c] += bias[c] for r < rows (bias in the same dtype): a float32 Conv2D's bias.
void add_bias(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
              cudaStream_t stream);
// y[r, c] = bias[c] for r < rows (bias in the same dtype): a 16-bit Conv2D's output before
// cuDNN adds the convolution to it in float32 (one rounding, as the CPU backend's fused bias).
void fill_bias(void* y, const void* bias, DType dtype, std::int64_t rows, int channels,
               cudaStream_t stream);
// The elementwise merges (engine/ops/merge.h): y = merge of `count` inputs (1 to
// kMaxMergeInputs), all of one dtype; backward writes input `which`'s gradient into dx (y and
// the inputs are read by Multiply and Maximum only). `relu`: an Add with the ReLU that reads
// it fused (y = max(sum, 0) in one pass; backward passes dy where y > 0): the same values as
// the two nodes, since rounding to the dtype keeps the sign.
// `broadcasts` (count of them, or null: none) say how each input spreads over the output
// (engine/ops/merge.h); n counts the output's elements forward, dx's backward (a broadcast
// input's gradient sums over the output elements that read each of its elements).
inline constexpr int kMaxMergeInputs = 8;
void merge_forward(MergeOp op, const void* const* inputs, int count, void* y, DType dtype,
                   std::int64_t n, cudaStream_t stream, bool relu = false,
                   const Broadcast* broadcasts = nullptr);
void merge_backward(MergeOp op, const void* const* inputs, int count, const void* y, const void* dy,
                    void* dx, int which, DType dtype, std::int64_t n, cudaStream_t stream,
                    bool relu = false, const Broadcast* broadcasts = nullptr);
// dst += src: a gradient added to an earlier reader's (the tensor's dtype).
void accumulate(const void* src, void* dst, DType dtype, std::int64_t n, cudaStream_t stream);
// db[c] = sum over rows of dy[r, c], accumulated in float32 (overwrites db).
void bias_gradient(const void* dy, DType dtype, std::int64_t rows, int channels, float* db,
                   cudaStream_t stream);

// mixed_float8: what one FP8 cast found, accumulated on the device (zero it before the step):
// the largest magnitude (as float32 bits: a NaN is larger than every number, so a tensor with
// one reports NaN), the values whose scaled value passed the format's largest, and the nonzero
// values rounded to zero.
struct Fp8CastStats {
  unsigned int amax_bits = 0;
  unsigned long long saturated = 0;
  unsigned long long flushed = 0;
};
// The n = rows x cols values of `src` (row-major, `dtype`) as FP8 codes of `format` (E5M2 when
// `e5m2`), each x / scale rounded to bfloat16 and then to the format, saturating at `top` (its
// largest value) as the CPU's emulation does it (engine/core/fp8.h); `scale` is a device float,
// the dequantising scale already rounded to bfloat16. Writes the codes into `out` and, when
// `out_t` is not null, their transpose (cols, rows) into it; adds to *stats.
void fp8_cast(const void* src, DType dtype, std::int64_t rows, std::int64_t cols, bool e5m2,
              float top, const float* scale, std::uint8_t* out, std::uint8_t* out_t,
              Fp8CastStats* stats, cudaStream_t stream);

// NHWC zero padding for Keras's asymmetric 'same' padding: copies x (n, h, w, c) into the
// interior of xp (n, hp, wp, c) at (top, left); the border must already be zero (it never
// changes). crop_nhwc is its backward: dx = the interior of dxp.
void pad_nhwc(const void* x, void* xp, DType dtype, int n, int h, int w, int c, int top, int left,
              int hp, int wp, cudaStream_t stream);
void crop_nhwc(const void* xp, void* x, DType dtype, int n, int h, int w, int c, int top, int left,
               int hp, int wp, cudaStream_t stream);

// BatchNormalization over `rows` rows of `channels` values (NHWC), in float32 (engine/ops/
// batch_norm.h): a training step (params->train) normalizes by the statistics of its real
// samples' rows (real_samples * rows_per_sample) and updates the moving ones in place; otherwise
// by the moving ones. `sums`: 2 * channels doubles of scratch; `stats`: 5 * channels floats that
// forward leaves for backward (mean, 1/sqrt(var + eps), ...). Backward (after a training
// forward) overwrites dgamma and dbeta (either may be null) and dx (null: not needed; zero on
// the padding rows). `relu`: the ReLU that reads the layer fused (forward writes max(y, 0);
// backward reads that output `y` and takes dy only where it is positive), with the two nodes'
// values exactly.
struct BatchNormShape {
  std::int64_t rows = 0;
  std::int64_t rows_per_sample = 1;
  int channels = 0;
};
void batch_norm_forward(const void* x, void* y, DType dtype, const BatchNormShape& shape,
                        const BatchNormArgs& args, const float* gamma, const float* beta,
                        float* moving_mean, float* moving_var, double* sums, float* stats,
                        const StepParams* params, cudaStream_t stream, bool relu = false);
void batch_norm_backward(const void* x, const void* dy, void* dx, DType dtype,
                         const BatchNormShape& shape, const float* gamma, float* dgamma,
                         float* dbeta, double* sums, float* stats, const StepParams* params,
                         cudaStream_t stream, const void* relu_y = nullptr);

// Pooling in NHWC with Keras's padding (asymmetric allowed): max ignores padding; average
// excludes it from the count. Backward overwrites dx (max: the gradient goes to the first
// maximum of each window, as oneDNN and TensorFlow do).
struct PoolShape {
  int n = 0, h = 0, w = 0, c = 0;      // input
  int oh = 0, ow = 0;                  // output
  int kh = 1, kw = 1, sh = 1, sw = 1;  // window, strides
  int pad_top = 0, pad_left = 0;
};
void pool_forward(bool max, const void* x, void* y, DType dtype, const PoolShape& s,
                  cudaStream_t stream);
void pool_backward(bool max, const void* x, const void* dy, void* dx, DType dtype,
                   const PoolShape& s, cudaStream_t stream);

// The loss of a batch in float32 (engine/ops/loss.h's row functions). src: (samples *
// positions, k) in `dtype`, a row per label (positions: 1, or the steps of a per-step loss);
// the rows of samples >= params->real_samples are padding (gradient 0, not counted). Adds the
// real rows' loss and correct count to state->loss_sum / state->correct (zero them first). With
// dsrc, writes the gradient of state->step_scale * mean loss (over the real rows) w.r.t. src,
// in `dtype`. `scratch` holds samples * positions * k floats.
void loss(LossHead head, const void* src, DType dtype, const std::int32_t* labels, int samples,
          int positions, int k, const StepParams* params, DeviceState* state, float* scratch,
          void* dsrc, cudaStream_t stream);

// Embedding (engine/ops/embedding.h): y (positions, width) in `dtype` = the float32 table's
// rows for the float32 ids. Backward: dtable (vocabulary, width) float32 = zero, then each
// position's dy added to its id's row (atomically: repeated ids).
void embedding_forward(const float* ids, const float* table, void* y, DType dtype,
                       std::int64_t positions, std::int64_t vocabulary, int width,
                       cudaStream_t stream);
void embedding_backward(const float* ids, const void* dy, DType dtype, float* dtable,
                        std::int64_t positions, std::int64_t vocabulary, int width,
                        cudaStream_t stream);
// PositionEmbedding: y (samples, per_sample) = the table's first per_sample values for every
// sample; backward: dtable's first per_sample values = the sum over samples of dy, the rest of
// its `table_elements` zero.
void position_embedding_forward(const float* table, void* y, DType dtype, int samples,
                                std::int64_t per_sample, cudaStream_t stream);
void position_embedding_backward(const void* dy, DType dtype, float* dtable, int samples,
                                 std::int64_t per_sample, std::int64_t table_elements,
                                 cudaStream_t stream);
// LayerNormalization (engine/ops/layer_norm.h) over rows of `width`: a warp per row, float32
// statistics kept in `stats` (rows RowStats) for backward; gamma / beta may be null (1 / 0).
// Backward writes dx (when not null) and dgamma / dbeta (float32, when not null) from per-block
// partial sums in `partials` (layer_norm_partials_floats(width) floats), added in a fixed order.
void layer_norm_forward(const void* x, void* y, DType dtype, std::int64_t rows, int width,
                        float epsilon, const float* gamma, const float* beta, void* stats,
                        cudaStream_t stream);
void layer_norm_backward(const void* x, const void* dy, void* dx, DType dtype, std::int64_t rows,
                         int width, const float* gamma, const void* stats, float* dgamma,
                         float* dbeta, float* partials, cudaStream_t stream);
std::int64_t layer_norm_partials_floats(int width);
// MultiHeadAttention's core between its cuBLASLt products (layouts.h's attention_products): the
// scores and weights (batch, heads, steps, steps) in `dtype`. attention_softmax turns each row of
// scores (the Q K^T einsum's output), in place, into the float32 softmax of the scaled scores
// with the causal mask (engine/ops/attention.h), rounded to `dtype`: the weights P. Its backward
// writes dS = P (dP - rowsum(P dP)) / sqrt(key_dim) in `dtype`, dP float32.
struct AttentionShape {
  int batch = 0, steps = 0, heads = 0, key_dim = 0, value_dim = 0;
  bool causal = false;
};
void attention_softmax(void* scores, DType dtype, const AttentionShape& shape, cudaStream_t stream);
void attention_softmax_backward(const void* probs, const float* dprobs, void* dscores, DType dtype,
                                const AttentionShape& shape, cudaStream_t stream);

// Begins a training step's loss-scale bookkeeping: step_scale = scaler.scale (1 without
// scaling), loss_sum = correct = 0, nonfinite = 0, applied = 0.
void begin_step(DeviceState* state, bool scaling_enabled, cudaStream_t stream);

// The overflow check fused with the unscale, over n floats of the float32 gradient array:
// g = round(g) * (1 / state->step_scale), setting state->nonfinite when a rounded gradient
// (before the unscale, as the CPU backend checks it) is NaN or inf. round(): to raw_dtype and
// back, the type of the layer's 16-bit weight copy whose gradient this is (float16 overflows
// past 65504, as the CPU backend's and Keras's do); f32 rounds nothing.
void unscale_and_check(float* grads, std::int64_t n, DType raw_dtype, DeviceState* state,
                       cudaStream_t stream);

// One thread: the loss-scale state machine (engine/ops/loss_scale.h) on state->nonfinite;
// sets state->applied, and when applied increments state->iteration and computes state->lr_t
// for Adam (lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)).
void update_loss_scale(DeviceState* state, const LossScaleConfig& config,
                       const OptimizerParams& optimizer, cudaStream_t stream);

// The optimizer over all parameters at once (flat float32 arrays with the same offsets): when
// state->applied, updates master (and state0/state1: SGD velocity, Adam m and v) from grads
// (already unscaled) with engine/ops/optimizer.h's rules, and writes the compute copy
// (`copy` in copy_dtype; null when the layers compute from the float32 master) in the same pass.
// Does nothing when the step was skipped.
void optimizer_update(const OptimizerParams& optimizer, float* master, const float* grads,
                      float* state0, float* state1, void* copy, DType copy_dtype, std::int64_t n,
                      const DeviceState* state, cudaStream_t stream);

}  // namespace kernels
}  // namespace mixlab::cuda
