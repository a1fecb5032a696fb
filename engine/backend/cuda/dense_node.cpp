#include "engine/backend/cuda/dense_node.h"

#include <cstring>

#include "engine/backend/cuda/cuda_check.h"
#include "engine/core/fp8.h"
#include "engine/core/half.h"

namespace mixlab::cuda {

namespace {

LtFp8 lt_format(Fp8Format format) {
  return format == Fp8Format::e5m2 ? LtFp8::e5m2 : LtFp8::e4m3;
}

std::size_t align_up(std::size_t bytes) {
  return (bytes + DeviceArena::kAlign - 1) / DeviceArena::kAlign * DeviceArena::kAlign;
}

}  // namespace

DenseNode::DenseNode(CudaContext& ctx, const ExecutionPlan& plan, const PlanNode& node,
                     const Fp8Recipe* fp8)
    : CudaNode(node.layer, node.out_dtype, node.label),
      in_(node.in_shape.back()),
      units_(node.out_shape.back()),
      relu_(node.activation == ActivationFn::relu),
      bias_(node.params.size() > 1) {
  rows_ = plan.batch * num_elements(node.in_shape) / in_;
  kernel_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params.at(0))));
  if (bias_) bias_slot_ = param_slot(plan.params.at(static_cast<std::size_t>(node.params[1])));
  if (fp8 != nullptr) {
    fp8_ =
        Fp8Host{{Fp8TensorScaling(Fp8Format::e4m3, *fp8), Fp8TensorScaling(Fp8Format::e4m3, *fp8),
                 Fp8TensorScaling(fp8->gradient_format(), *fp8)}};
    const Fp8DenseProducts p = dense_fp8_products(rows_, in_, units_, out_dtype, relu_, bias_,
                                                  lt_format(fp8->gradient_format()));
    forward_ = LtMatmul(ctx.lt, p.forward, ctx.lt_workspace_bytes, label + " forward (FP8)");
    backward_data_ =
        LtMatmul(ctx.lt, p.data_grad, ctx.lt_workspace_bytes, label + " input gradient (FP8)");
    backward_weights_ =
        LtMatmul(ctx.lt, p.weight_grad, ctx.lt_workspace_bytes, label + " kernel gradient (FP8)");
    return;
  }
  const DenseProducts p = dense_products(rows_, in_, units_, out_dtype, ctx.tf32, relu_, bias_);
  forward_ = LtMatmul(ctx.lt, p.forward, ctx.lt_workspace_bytes, label + " forward");
  backward_data_ = LtMatmul(ctx.lt, p.data_grad, ctx.lt_workspace_bytes, label + " input gradient");
  backward_weights_ =
      LtMatmul(ctx.lt, p.weight_grad, ctx.lt_workspace_bytes, label + " kernel gradient");
}

std::vector<ParamSlot*> DenseNode::params() {
  if (bias_) return {&kernel_, &bias_slot_};
  return {&kernel_};
}

// The FP8 codes: the input and its transpose (kept for the kernel's gradient), the kernel and
// its transpose, the gradient and its transpose; then the scales and the casts' figures.
void DenseNode::reserve(DeviceArena& arena) {
  if (!fp8_) return;
  const auto x = static_cast<std::size_t>(rows_ * in_), w = static_cast<std::size_t>(in_ * units_),
             g = static_cast<std::size_t>(rows_ * units_);
  codes_id_ = arena.reserve(align_up(x) * 2, Purpose::activations);
  state_id_ = arena.reserve(align_up(w) * 2 + align_up(g) * 2 + align_up(3 * sizeof(float)) +
                                3 * sizeof(kernels::Fp8CastStats),
                            Purpose::workspace);
}

void DenseNode::bind(const DeviceArena& arena) {
  if (!fp8_) return;
  const auto x = static_cast<std::size_t>(rows_ * in_), w = static_cast<std::size_t>(in_ * units_),
             g = static_cast<std::size_t>(rows_ * units_);
  auto* codes = arena.as<std::uint8_t>(codes_id_);
  dev_.x = codes;
  dev_.xt = codes + align_up(x);
  auto* state = arena.as<std::uint8_t>(state_id_);
  dev_.w = state;
  dev_.wt = dev_.w + align_up(w);
  dev_.dy = dev_.wt + align_up(w);
  dev_.dyt = dev_.dy + align_up(g);
  dev_.scales = reinterpret_cast<float*>(dev_.dyt + align_up(g));
  dev_.stats = reinterpret_cast<kernels::Fp8CastStats*>(
      reinterpret_cast<std::uint8_t*>(dev_.scales) + align_up(3 * sizeof(float)));
  scales_uploaded_ = false;
}

// The three scales the next products use, as the casts and cuBLASLt read them: rounded to
// bfloat16, as Keras's bfloat16 quantize-dequantize casts its scale (the CPU emulation does).
bool DenseNode::restore_fp8(Fp8StateRestorer& restorer) {
  if (!fp8_) return false;
  restorer.restore(layer, fp8_->scaling[0], fp8_->scaling[1], fp8_->scaling[2]);
  scales_uploaded_ = false;  // the first forward uploads the restored scales
  return true;
}

void DenseNode::upload_scales(CudaContext& ctx) {
  for (std::size_t i = 0; i < 3; ++i) fp8_->uploaded[i] = round_to_bf16(fp8_->scaling[i].scale());
  // Kept in the node, so no wait for the copy: the next step's casts follow it on the stream.
  CUDA_CHECK(cudaMemcpyAsync(dev_.scales, fp8_->uploaded.data(), sizeof fp8_->uploaded,
                             cudaMemcpyHostToDevice, ctx.stream));
  scales_uploaded_ = true;
}

void DenseNode::forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  if (fp8_) {
    fp8_forward(ctx, x, y);
    return;
  }
  forward_.run(ctx.weights(kernel_), x.data, y.data, bias_ ? ctx.weights(bias_slot_) : nullptr,
               ctx.lt_workspace, ctx.stream);
}

void DenseNode::fp8_forward(CudaContext& ctx, const DTensor& x, const DTensor& y) {
  if (!scales_uploaded_) upload_scales(ctx);
  CUDA_CHECK(cudaMemsetAsync(dev_.stats, 0, 3 * sizeof(kernels::Fp8CastStats), ctx.stream));
  const float e4m3 = fp8_max(Fp8Format::e4m3);
  kernels::fp8_cast(x.data, x.dtype, rows_, in_, false, e4m3, dev_.scales, dev_.x, dev_.xt,
                    dev_.stats, ctx.stream);
  kernels::fp8_cast(ctx.weights(kernel_), kernel_.compute, in_, units_, false, e4m3,
                    dev_.scales + 1, dev_.w, dev_.wt, dev_.stats + 1, ctx.stream);
  // Y^T = (W^T) . X^T: A the kernel's transposed codes, B the input's (layouts.h).
  forward_.run_fp8(dev_.wt, dev_.scales + 1, dev_.x, dev_.scales, y.data,
                   bias_ ? ctx.weights(bias_slot_) : nullptr, ctx.lt_workspace, ctx.stream);
}

void DenseNode::backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                         const DTensor* dx) {
  if (relu_) {  // dz = dy * (y > 0), in place
    kernels::activation_backward(ActivationFn::relu, nullptr, y.data, dy.data, dy.data, dy.dtype,
                                 dy.elements(), ctx.stream);
  }
  if (fp8_) {
    fp8_backward(ctx, dy, dx);
    return;
  }
  backward_weights_.run(dy.data, x.data, ctx.gradient(kernel_), nullptr, ctx.lt_workspace,
                        ctx.stream);
  if (bias_) {
    kernels::bias_gradient(dy.data, dy.dtype, rows_, static_cast<int>(units_),
                           ctx.gradient(bias_slot_), ctx.stream);
  }
  if (dx) {
    backward_data_.run(ctx.weights(kernel_), dy.data, dx->data, nullptr, ctx.lt_workspace,
                       ctx.stream);
  }
}

void DenseNode::fp8_backward(CudaContext& ctx, const DTensor& dy, const DTensor* dx) {
  const Fp8Format g = fp8_->scaling[2].format();
  kernels::fp8_cast(dy.data, dy.dtype, rows_, units_, g == Fp8Format::e5m2, fp8_max(g),
                    dev_.scales + 2, dev_.dy, dev_.dyt, dev_.stats + 2, ctx.stream);
  // dW^T = (dY^T) . X: A the gradient's transposed codes, B the input's transposed codes.
  backward_weights_.run_fp8(dev_.dyt, dev_.scales + 2, dev_.xt, dev_.scales, ctx.gradient(kernel_),
                            nullptr, ctx.lt_workspace, ctx.stream);
  // The bias's gradient from the gradient before its FP8 rounding (Keras's Dense._float8_call).
  if (bias_) {
    kernels::bias_gradient(dy.data, dy.dtype, rows_, static_cast<int>(units_),
                           ctx.gradient(bias_slot_), ctx.stream);
  }
  // dX^T = W . dY^T: A the kernel's codes, B the gradient's.
  if (dx) {
    backward_data_.run_fp8(dev_.w, dev_.scales + 1, dev_.dy, dev_.scales + 2, dx->data, nullptr,
                           ctx.lt_workspace, ctx.stream);
  }
}

// After every training step (the stream synchronized; under CUDA graphs the step ran as a
// replay, with no host code of forward() or backward()): the casts' figures, then Keras's order
// of scale updates, as the CPU's WeightedNode::end_training_step.
void DenseNode::end_training_step(CudaContext& ctx, bool applied) {
  if (!fp8_) return;
  kernels::Fp8CastStats stats[3];
  CUDA_CHECK(cudaMemcpyAsync(stats, dev_.stats, sizeof stats, cudaMemcpyDeviceToHost, ctx.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const std::int64_t values[3] = {rows_ * in_, in_ * units_, rows_ * units_};
  for (std::size_t i = 0; i < 3; ++i) {
    Fp8TensorStep& s = fp8_->steps[i];
    float amax;
    std::memcpy(&amax, &stats[i].amax_bits, sizeof amax);
    s.layer = layer;
    s.role = static_cast<Fp8Role>(i);
    s.amax = amax;
    s.scale = fp8_->scaling[i].scale();
    s.values = values[i];
    s.saturated = static_cast<std::int64_t>(stats[i].saturated);
    s.flushed = static_cast<std::int64_t>(stats[i].flushed);
    if (applied) fp8_->scaling[i].update(amax);
    s.next_scale = fp8_->scaling[i].scale();
  }
  upload_scales(ctx);
  fp8_->reported = true;
}

void DenseNode::append_fp8_steps(std::vector<Fp8TensorStep>& out) {
  if (!fp8_ || !fp8_->reported) return;
  fp8_->reported = false;
  out.insert(out.end(), fp8_->steps.begin(), fp8_->steps.end());
}

}  // namespace mixlab::cuda
