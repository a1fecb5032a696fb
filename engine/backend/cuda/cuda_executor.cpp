#include "engine/backend/cuda/cuda_executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "engine/backend/cuda/conv_dnn.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/dense_lt.h"
#include "engine/backend/cuda/layouts.h"
#include "engine/core/half.h"
#include "engine/ops/initializers.h"

namespace mixlab::cuda {

namespace {

constexpr std::size_t kAlign = 256;
constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;  // cuBLASLt: 32 MiB
// Parameter slots start at multiples of this many elements, so that every slot (and its 16-bit
// copy) is 256-byte aligned for cuBLASLt's bias epilogue and vectorised kernels.
constexpr std::int64_t kSlotAlign = 128;

std::size_t align_up(std::size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

std::string mib(std::size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string layer_label(const ModelSpec& spec, int layer) {
  return "layer " + std::to_string(layer) + " (" +
         std::string(to_string(spec.layers.at(static_cast<std::size_t>(layer)).type)) + ")";
}

float to_float(const void* data, DType dtype, std::size_t i) {
  switch (dtype) {
    case DType::f32:
      return static_cast<const float*>(data)[i];
    case DType::f16:
      return f16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DType::bf16:
      return bf16_bits_to_float(static_cast<const std::uint16_t*>(data)[i]);
  }
  return 0.0f;
}

std::vector<float> to_keras(const ParamSlot& s, std::vector<float> ours) {
  if (s.conv_out == 0) return ours;
  return krsc_to_keras({s.conv_kh, s.conv_kw, s.conv_in, s.conv_out}, ours);
}

std::vector<float> from_keras(const ParamSlot& s, std::span<const float> keras) {
  if (s.conv_out == 0) return {keras.begin(), keras.end()};
  return keras_to_krsc({s.conv_kh, s.conv_kw, s.conv_in, s.conv_out}, keras);
}

// ---------------------------------------------------------------------------------------------
// Nodes

class CastNode final : public CudaNode {
 public:
  CastNode(int layer, DType to, std::string label) : CudaNode(layer, to, std::move(label)) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    kernels::cast(x.data, x.dtype, y.data, y.dtype, x.elements(), ctx.stream);
  }
  void backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                const DTensor* dx) override {
    if (dx) kernels::cast(dy.data, dy.dtype, dx->data, dx->dtype, dy.elements(), ctx.stream);
  }
};

class FlattenNode final : public CudaNode {
 public:
  using CudaNode::CudaNode;
  bool aliases_input() const override { return true; }
  void forward(CudaContext&, const DTensor&, const DTensor&) override {}
  void backward(CudaContext&, const DTensor&, const DTensor&, const DTensor&,
                const DTensor*) override {}
};

class ActivationNode final : public CudaNode {
 public:
  ActivationNode(int layer, ActivationFn fn, int channels, DType dtype, std::string label)
      : CudaNode(layer, dtype, std::move(label)), fn_(fn), channels_(channels) {}
  ActivationFn fn() const { return fn_; }
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    if (fn_ == ActivationFn::softmax) {
      kernels::softmax_forward(x.data, y.data, y.dtype, x.elements() / channels_, channels_,
                               ctx.stream);
    } else {
      kernels::activation_forward(fn_, x.data, y.data, y.dtype, x.elements(), ctx.stream);
    }
  }
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override {
    if (!dx) return;
    if (fn_ == ActivationFn::softmax) {
      kernels::softmax_backward(y.data, dy.data, dx->data, dy.dtype, y.elements() / channels_,
                                channels_, ctx.stream);
    } else {
      kernels::activation_backward(fn_, x.data, y.data, dy.data, dx->data, dy.dtype, y.elements(),
                                   ctx.stream);
    }
  }

 private:
  ActivationFn fn_;
  int channels_;
};

class RescalingNode final : public CudaNode {
 public:
  RescalingNode(int layer, double scale, double offset, DType dtype, std::string label)
      : CudaNode(layer, dtype, std::move(label)),
        scale_(static_cast<float>(scale)),
        offset_(static_cast<float>(offset)) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    kernels::scale_offset(x.data, y.data, y.dtype, scale_, offset_, x.elements(), ctx.stream);
  }
  void backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                const DTensor* dx) override {
    if (dx)
      kernels::scale_offset(dy.data, dx->data, dy.dtype, scale_, 0.0f, dy.elements(), ctx.stream);
  }

 private:
  float scale_, offset_;
};

class DropoutNode final : public CudaNode {
 public:
  DropoutNode(int layer, double rate, DType dtype, std::string label)
      : CudaNode(layer, dtype, std::move(label)), rate_(rate) {}
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    kernels::dropout(x.data, y.data, y.dtype, x.elements(), rate_, ctx.seed, layer, ctx.params,
                     ctx.stream);
  }
  void backward(CudaContext& ctx, const DTensor&, const DTensor&, const DTensor& dy,
                const DTensor* dx) override {
    // The same mask: same seed, layer and step (still in the step's parameters).
    if (dx) {
      kernels::dropout(dy.data, dx->data, dy.dtype, dy.elements(), rate_, ctx.seed, layer,
                       ctx.params, ctx.stream);
    }
  }

 private:
  double rate_;
};

// Dense: Y = X W (+ b) (ReLU fused into cuBLASLt's epilogue; other activations are nodes).
class DenseNode final : public CudaNode {
 public:
  DenseNode(CudaContext& ctx, const LayerSpec& spec, int layer, std::int64_t rows, std::int64_t in,
            std::int64_t units, DType dtype, std::string label)
      : CudaNode(layer, dtype, std::move(label)),
        rows_(rows),
        in_(in),
        units_(units),
        relu_(spec.activation == ActivationFn::relu),
        bias_(spec.use_bias) {
    kernel_.layer = bias_slot_.layer = layer;
    kernel_.kind = ParamKind::kernel;
    kernel_.count = in * units;
    kernel_.fan_in = in;
    kernel_.fan_out = units;
    kernel_.compute = bias_slot_.compute = dtype;
    bias_slot_.kind = ParamKind::bias;
    bias_slot_.count = units;

    const DenseProducts p = dense_products(rows, in, units, dtype, ctx.tf32, relu_, bias_);
    forward_ = LtMatmul(ctx.lt, p.forward, ctx.lt_workspace_bytes, this->label + " forward");
    backward_data_ =
        LtMatmul(ctx.lt, p.data_grad, ctx.lt_workspace_bytes, this->label + " input gradient");
    backward_weights_ =
        LtMatmul(ctx.lt, p.weight_grad, ctx.lt_workspace_bytes, this->label + " kernel gradient");
  }

  std::vector<ParamSlot*> params() override {
    if (bias_) return {&kernel_, &bias_slot_};
    return {&kernel_};
  }

  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    forward_.run(ctx.weights(kernel_), x.data, y.data, bias_ ? ctx.weights(bias_slot_) : nullptr,
                 ctx.lt_workspace, ctx.stream);
  }

  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override {
    if (relu_) {  // dz = dy * (y > 0), in place
      kernels::activation_backward(ActivationFn::relu, nullptr, y.data, dy.data, dy.data, dy.dtype,
                                   dy.elements(), ctx.stream);
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

 private:
  std::int64_t rows_, in_, units_;
  bool relu_, bias_;
  ParamSlot kernel_, bias_slot_;
  LtMatmul forward_, backward_data_, backward_weights_;
};

// Conv2D through cuDNN (NHWC, KRSC filters). Keras's asymmetric 'same' padding (an even
// window) is done by copying the input into a zero-bordered buffer and convolving it 'valid'.
class ConvNode final : public CudaNode {
 public:
  ConvNode(CudaContext& ctx, const LayerSpec& spec, const LayerInfo& info, int batch, DType dtype,
           std::string label)
      : CudaNode(info.index, dtype, std::move(label)), bias_(spec.use_bias) {
    const auto& in = info.input_shape;
    const auto& out = info.output_shape;
    h_ = static_cast<int>(in[0]);
    w_ = static_cast<int>(in[1]);
    c_ = static_cast<int>(in[2]);
    n_ = batch;
    top_ = info.pad_top;
    left_ = info.pad_left;
    asymmetric_ = info.pad_top != info.pad_bottom || info.pad_left != info.pad_right;
    hp_ = h_ + info.pad_top + info.pad_bottom;
    wp_ = w_ + info.pad_left + info.pad_right;
    shape_.n = batch;
    shape_.h = asymmetric_ ? hp_ : h_;
    shape_.w = asymmetric_ ? wp_ : w_;
    shape_.c = c_;
    shape_.k = static_cast<int>(out[2]);
    shape_.r = spec.kernel_size.h;
    shape_.s = spec.kernel_size.w;
    shape_.oh = static_cast<int>(out[0]);
    shape_.ow = static_cast<int>(out[1]);
    shape_.pad_h = asymmetric_ ? 0 : info.pad_top;
    shape_.pad_w = asymmetric_ ? 0 : info.pad_left;
    shape_.stride_h = spec.strides.h;
    shape_.stride_w = spec.strides.w;
    shape_.dtype = dtype;
    shape_.tf32 = ctx.tf32;

    const std::int64_t window = static_cast<std::int64_t>(shape_.r) * shape_.s;
    kernel_.layer = bias_slot_.layer = info.index;
    kernel_.kind = ParamKind::kernel;
    kernel_.count = window * c_ * shape_.k;
    kernel_.fan_in = window * c_;
    kernel_.fan_out = window * shape_.k;
    kernel_.compute = bias_slot_.compute = dtype;
    kernel_.conv_kh = shape_.r;
    kernel_.conv_kw = shape_.s;
    kernel_.conv_in = c_;
    kernel_.conv_out = shape_.k;
    bias_slot_.kind = ParamKind::bias;
    bias_slot_.count = shape_.k;
    conv_ = std::make_unique<DnnConv>(ctx.dnn, shape_, this->label);
  }

  std::vector<ParamSlot*> params() override {
    if (bias_) return {&kernel_, &bias_slot_};
    return {&kernel_};
  }
  std::size_t dnn_workspace_bytes() const override { return conv_->workspace_bytes(); }

  void reserve(DeviceArena& arena) override {
    const std::size_t padded_bytes =
        static_cast<std::size_t>(n_) * hp_ * wp_ * c_ * dtype_bytes(out_dtype);
    if (asymmetric_) {
      padded_id_ = arena.reserve(padded_bytes, Purpose::activations);
      padded_grad_id_ = arena.reserve(padded_bytes, Purpose::workspace);
    }
    if (out_dtype != DType::f32) {
      dw16_id_ = arena.reserve(static_cast<std::size_t>(kernel_.count) * dtype_bytes(out_dtype),
                               Purpose::workspace);
    }
  }
  void bind(const DeviceArena& arena, CudaContext&) override {
    if (asymmetric_) {
      padded_ = arena.ptr(padded_id_);  // its border stays zero: only the interior is written
      padded_grad_ = arena.ptr(padded_grad_id_);
    }
    if (out_dtype != DType::f32) dw16_ = arena.ptr(dw16_id_);
  }

  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    const void* src = x.data;
    if (padded_) {
      kernels::pad_nhwc(x.data, padded_, x.dtype, n_, h_, w_, c_, top_, left_, hp_, wp_,
                        ctx.stream);
      src = padded_;
    }
    conv_->forward(src, ctx.weights(kernel_), y.data, ctx.dnn_workspace);
    if (bias_) {
      kernels::add_bias(y.data, ctx.weights(bias_slot_), y.dtype,
                        static_cast<std::int64_t>(n_) * shape_.oh * shape_.ow, shape_.k,
                        ctx.stream);
    }
  }

  void backward(CudaContext& ctx, const DTensor& x, const DTensor&, const DTensor& dy,
                const DTensor* dx) override {
    const void* src = padded_ ? static_cast<const void*>(padded_) : x.data;
    if (out_dtype == DType::f32) {
      conv_->backward_filter(src, dy.data, ctx.gradient(kernel_), ctx.dnn_workspace);
    } else {
      conv_->backward_filter(src, dy.data, dw16_, ctx.dnn_workspace);
      kernels::cast(dw16_, out_dtype, ctx.gradient(kernel_), DType::f32, kernel_.count, ctx.stream);
    }
    if (bias_) {
      kernels::bias_gradient(dy.data, dy.dtype,
                             static_cast<std::int64_t>(n_) * shape_.oh * shape_.ow, shape_.k,
                             ctx.gradient(bias_slot_), ctx.stream);
    }
    if (dx) {
      if (padded_) {
        conv_->backward_data(dy.data, ctx.weights(kernel_), padded_grad_, ctx.dnn_workspace);
        kernels::crop_nhwc(padded_grad_, dx->data, dx->dtype, n_, h_, w_, c_, top_, left_, hp_, wp_,
                           ctx.stream);
      } else {
        conv_->backward_data(dy.data, ctx.weights(kernel_), dx->data, ctx.dnn_workspace);
      }
    }
  }

 private:
  bool bias_;
  bool asymmetric_ = false;
  int n_ = 0, h_ = 0, w_ = 0, c_ = 0, hp_ = 0, wp_ = 0, top_ = 0, left_ = 0;
  ConvShape shape_;
  ParamSlot kernel_, bias_slot_;
  std::unique_ptr<DnnConv> conv_;
  void* padded_ = nullptr;  // after bind, when the padding is asymmetric
  void* padded_grad_ = nullptr;
  void* dw16_ = nullptr;
  DeviceArena::Id padded_id_ = 0, padded_grad_id_ = 0, dw16_id_ = 0;
};

// Max and average pooling: cuDNN where Keras's padding is symmetric, MixLab's kernel where it is
// not (an even window with 'same').
class PoolNode final : public CudaNode {
 public:
  PoolNode(CudaContext& ctx, const LayerSpec& spec, const LayerInfo& info, int batch, DType dtype,
           std::string label)
      : CudaNode(info.index, dtype, std::move(label)), max_(spec.type == LayerType::MaxPooling2D) {
    shape_.n = batch;
    shape_.h = static_cast<int>(info.input_shape[0]);
    shape_.w = static_cast<int>(info.input_shape[1]);
    shape_.c = static_cast<int>(info.input_shape[2]);
    shape_.oh = static_cast<int>(info.output_shape[0]);
    shape_.ow = static_cast<int>(info.output_shape[1]);
    shape_.kh = spec.pool_size.h;
    shape_.kw = spec.pool_size.w;
    shape_.sh = spec.strides.h;
    shape_.sw = spec.strides.w;
    shape_.pad_top = info.pad_top;
    shape_.pad_left = info.pad_left;
    if (info.pad_top == info.pad_bottom && info.pad_left == info.pad_right) {
      PoolDnnShape d;
      d.n = shape_.n;
      d.h = shape_.h;
      d.w = shape_.w;
      d.c = shape_.c;
      d.oh = shape_.oh;
      d.ow = shape_.ow;
      d.kh = shape_.kh;
      d.kw = shape_.kw;
      d.sh = shape_.sh;
      d.sw = shape_.sw;
      d.pad_h = info.pad_top;
      d.pad_w = info.pad_left;
      d.dtype = dtype;
      d.max = max_;
      dnn_ = std::make_unique<DnnPool>(ctx.dnn, d, this->label);
    }
  }
  void forward(CudaContext& ctx, const DTensor& x, const DTensor& y) override {
    if (dnn_) {
      dnn_->forward(x.data, y.data);
    } else {
      kernels::pool_forward(max_, x.data, y.data, x.dtype, shape_, ctx.stream);
    }
  }
  void backward(CudaContext& ctx, const DTensor& x, const DTensor& y, const DTensor& dy,
                const DTensor* dx) override {
    if (!dx) return;
    if (dnn_) {
      dnn_->backward(x.data, y.data, dy.data, dx->data);
    } else {
      kernels::pool_backward(max_, x.data, dy.data, dx->data, x.dtype, shape_, ctx.stream);
    }
  }

 private:
  bool max_;
  kernels::PoolShape shape_;
  std::unique_ptr<DnnPool> dnn_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------

DeviceArena::~DeviceArena() {
  if (base_) cudaFree(base_);
}

DeviceArena::Id DeviceArena::reserve(std::size_t bytes, Purpose purpose) {
  offsets_.push_back(size_);
  const std::size_t aligned = align_up(std::max<std::size_t>(bytes, 1));
  size_ += aligned;
  const auto b = static_cast<std::int64_t>(aligned);
  plan_.add(purpose, b);
  return offsets_.size() - 1;
}

void DeviceArena::allocate(const std::string& device_name) {
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const auto fail = [&] {
    throw AllocationError(
        "out of GPU memory: the model needs " + std::to_string(size_) + " bytes (" + mib(size_) +
            ") on " + device_name + " (parameters " +
            mib(static_cast<std::size_t>(plan_.parameter_bytes)) + ", 16-bit copies " +
            mib(static_cast<std::size_t>(plan_.weight_copy_bytes)) + ", gradients " +
            mib(static_cast<std::size_t>(plan_.gradient_bytes)) + ", optimizer state " +
            mib(static_cast<std::size_t>(plan_.optimizer_bytes)) + ", activations " +
            mib(static_cast<std::size_t>(plan_.activation_bytes)) + ", workspaces " +
            mib(static_cast<std::size_t>(plan_.workspace_bytes)) + ") but " +
            std::to_string(free_bytes) + " bytes (" + mib(free_bytes) + ") of " + mib(total_bytes) +
            " are free; try a smaller batch size",
        size_);
  };
  if (size_ > free_bytes) fail();
  void* p = nullptr;
  const cudaError_t status = cudaMalloc(&p, size_);
  if (status == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    fail();
  }
  CUDA_CHECK(status);
  base_ = static_cast<std::byte*>(p);
  // On the legacy default stream, which the executor's non-blocking streams do not wait for:
  // finish before anything is written into the arena.
  CUDA_CHECK(cudaMemset(base_, 0, size_));
  CUDA_CHECK(cudaDeviceSynchronize());
}

const void* CudaContext::weights(const ParamSlot& slot) const {
  if (slot.compute == DType::f32 || !copy16) return master + slot.offset;
  return static_cast<const std::byte*>(copy16) +
         static_cast<std::size_t>(slot.offset) * dtype_bytes(copy_dtype);
}

// ---------------------------------------------------------------------------------------------
// The executor

CudaExecutor::CudaExecutor(const ModelSpec& spec, const ShapeTable& table,
                           const ExecutorOptions& options, int device, const DeviceInfo& info)
    : options_(options),
      device_(device),
      info_(info),
      batch_(options.batch_size),
      loss_kind_(spec.loss) {
  if (batch_ < 1) throw ConfigError("batch size must be at least 1, got " + std::to_string(batch_));
  if (spec.layers.size() != table.layers.size()) {
    throw ConfigError("the shape table does not belong to model '" + spec.name + "'");
  }
  CUDA_CHECK(cudaSetDevice(device_));
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasLtCreate(&ctx_.lt));
    CUDNN_CHECK(cudnnCreate(&ctx_.dnn));
    CUDNN_CHECK(cudnnSetStream(ctx_.dnn, ctx_.stream));
    for (cudaEvent_t* e : {&staging_copied_[0], &staging_copied_[1], &batch_ready_,
                           &incoming_consumed_, &params_copied_}) {
      CUDA_CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
    }
    for (cudaEvent_t* e : {&ev_start_, &ev_forward_, &ev_backward_, &ev_end_}) {
      CUDA_CHECK(cudaEventCreate(e));
    }
    ctx_.seed = options.seed;
    ctx_.tf32 = options.tf32 && options.policy == Policy::float32;
    ctx_.lt_workspace_bytes = kLtWorkspaceBytes;
    copy_dtype_ = options.policy == Policy::mixed_float16    ? DType::f16
                  : options.policy == Policy::mixed_bfloat16 ? DType::bf16
                                                             : DType::f32;
    lower(spec, table);
    plan_and_allocate();
    initialise_parameters(options.seed);

    optimizer_.kind = options.optimizer.kind;
    optimizer_.lr = options.optimizer.learning_rate;  // double: Adam's lr_t as the CPU computes it
    optimizer_.momentum = static_cast<float>(options.optimizer.momentum);
    optimizer_.nesterov = options.optimizer.nesterov;
    optimizer_.beta_1 = options.optimizer.beta_1;
    optimizer_.beta_2 = options.optimizer.beta_2;
    optimizer_.epsilon = static_cast<float>(options.optimizer.epsilon);
    set_device_loss_scaling({});
    CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  } catch (...) {
    release();
    throw;
  }
}

CudaExecutor::~CudaExecutor() {
  release();
}

void CudaExecutor::release() {
  if (ctx_.stream) cudaStreamSynchronize(ctx_.stream);
  if (copy_stream_) cudaStreamSynchronize(copy_stream_);
  nodes_.clear();
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  for (cudaEvent_t* e :
       {&staging_copied_[0], &staging_copied_[1], &batch_ready_, &incoming_consumed_,
        &params_copied_, &ev_start_, &ev_forward_, &ev_backward_, &ev_end_}) {
    if (*e) cudaEventDestroy(*e);
    *e = nullptr;
  }
  for (auto* events : {&node_events_fwd_, &node_events_bwd_}) {
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
    events->clear();
  }
  if (pinned_) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  if (dataset_images_) cudaFree(dataset_images_);
  if (dataset_labels_) cudaFree(dataset_labels_);
  dataset_images_ = nullptr;
  dataset_labels_ = nullptr;
  if (ctx_.dnn) cudnnDestroy(ctx_.dnn);
  if (ctx_.lt) cublasLtDestroy(ctx_.lt);
  if (copy_stream_) cudaStreamDestroy(copy_stream_);
  if (ctx_.stream) cudaStreamDestroy(ctx_.stream);
  ctx_.dnn = nullptr;
  ctx_.lt = nullptr;
  copy_stream_ = nullptr;
  ctx_.stream = nullptr;
}

void CudaExecutor::lower(const ModelSpec& spec, const ShapeTable& table) {
  DType cur = DType::f32;  // the batch arrives as float32
  const auto batch_dims = [&](const Shape& s) {
    std::vector<std::int64_t> d{batch_};
    d.insert(d.end(), s.begin(), s.end());
    return d;
  };
  const auto add = [&](std::unique_ptr<CudaNode> node, const Shape& out_shape) {
    DTensor t;
    t.dtype = node->out_dtype;
    t.dims = batch_dims(out_shape);
    outputs_.push_back(std::move(t));
    cur = node->out_dtype;
    nodes_.push_back(std::move(node));
  };
  Shape cur_shape = table.input_shape;
  input_.dtype = DType::f32;
  input_.dims = batch_dims(table.input_shape);
  layer_last_node_.resize(spec.layers.size());
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    const LayerInfo& info = table.layers[i];
    const int li = static_cast<int>(i);
    const DType s = info.compute;
    const Shape& out = info.output_shape;
    const std::string label = layer_label(spec, li);
    const auto cast_to = [&](DType to) {
      if (cur != to) add(std::make_unique<CastNode>(li, to, label + " cast"), cur_shape);
    };
    const auto activation = [&](ActivationFn fn) {
      return std::make_unique<ActivationNode>(li, fn, static_cast<int>(out.back()), s, label);
    };
    try {
      switch (layer.type) {
        case LayerType::Dense: {
          cast_to(s);
          const std::int64_t in = info.input_shape.back();
          const std::int64_t rows = batch_ * num_elements(info.input_shape) / in;
          add(std::make_unique<DenseNode>(ctx_, layer, li, rows, in, out.back(), s, label), out);
          if (layer.activation != ActivationFn::linear && layer.activation != ActivationFn::relu) {
            add(activation(layer.activation), out);
          }
          break;
        }
        case LayerType::Conv2D:
          cast_to(s);
          add(std::make_unique<ConvNode>(ctx_, layer, info, batch_, s, label), out);
          if (layer.activation != ActivationFn::linear) add(activation(layer.activation), out);
          break;
        case LayerType::MaxPooling2D:
        case LayerType::AveragePooling2D:
          cast_to(s);
          add(std::make_unique<PoolNode>(ctx_, layer, info, batch_, s, label), out);
          break;
        case LayerType::Flatten:
          if (cur != s) {
            add(std::make_unique<CastNode>(li, s, label), out);
          } else {
            add(std::make_unique<FlattenNode>(li, s, label), out);
          }
          break;
        case LayerType::Dropout:
          cast_to(s);
          add(std::make_unique<DropoutNode>(li, layer.rate, s, label), out);
          break;
        case LayerType::Activation:
          cast_to(s);
          add(activation(layer.activation), out);
          break;
        case LayerType::Rescaling:
          cast_to(s);
          add(std::make_unique<RescalingNode>(li, layer.scale, layer.offset, s, label), out);
          break;
      }
    } catch (const BackendError& e) {
      const std::string what = e.what();
      if (what.rfind(label, 0) == 0) throw;
      throw BackendError(label + ": " + what);
    }
    cur_shape = out;
    layer_last_node_[i] = static_cast<int>(nodes_.size()) - 1;
  }

  classes_ = num_elements(table.output_shape);
  if (nodes_.size() >= 2) {
    if (const auto* act = dynamic_cast<const ActivationNode*>(nodes_.back().get())) {
      const bool binary = loss_kind_ == LossKind::binary_crossentropy;
      if (act->fn() == ActivationFn::softmax && !binary) head_ = Head::softmax_logits;
      if (act->fn() == ActivationFn::sigmoid && binary) head_ = Head::sigmoid_logits;
    }
  }
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (!nodes_[k]->params().empty()) {
      first_param_node_ = static_cast<int>(k);
      break;
    }
  }
}

void CudaExecutor::plan_and_allocate() {
  input_id_ = arena_.reserve(input_.bytes(), Purpose::activations);
  labels_id_ =
      arena_.reserve(static_cast<std::size_t>(batch_) * sizeof(std::int32_t), Purpose::workspace);
  output_ids_.assign(nodes_.size(), 0);
  std::int64_t max_elements = input_.elements();
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (!nodes_[k]->aliases_input()) {
      output_ids_[k] = arena_.reserve(outputs_[k].bytes(), Purpose::activations);
    }
    max_elements = std::max(max_elements, outputs_[k].elements());
  }
  const auto grad_bytes = static_cast<std::size_t>(max_elements) * sizeof(float);
  for (auto& id : grad_ids_) id = arena_.reserve(grad_bytes, Purpose::workspace);
  scratch_id_ = arena_.reserve(static_cast<std::size_t>(batch_ * classes_) * sizeof(float),
                               Purpose::workspace);
  // The incoming batch: labels, then images (float32) or sample indices.
  sample_elements_ = input_.elements() / batch_;
  staging_bytes_ =
      align_up(static_cast<std::size_t>(batch_) * sizeof(std::int32_t)) +
      static_cast<std::size_t>(batch_) *
          std::max<std::size_t>(static_cast<std::size_t>(sample_elements_) * sizeof(float),
                                sizeof(std::int64_t));
  incoming_id_ = arena_.reserve(staging_bytes_, Purpose::workspace);
  params_id_ = arena_.reserve(sizeof(StepParams), Purpose::workspace);
  state_id_ = arena_.reserve(sizeof(DeviceState), Purpose::workspace);
  lt_ws_id_ = arena_.reserve(kLtWorkspaceBytes, Purpose::workspace);
  std::size_t dnn_bytes = 0;
  for (auto& node : nodes_) {
    node->reserve(arena_);
    dnn_bytes = std::max(dnn_bytes, node->dnn_workspace_bytes());
  }
  dnn_ws_id_ = arena_.reserve(dnn_bytes, Purpose::workspace);

  for (auto& node : nodes_) {
    for (ParamSlot* slot : node->params()) {
      slot->offset = param_floats_;
      param_floats_ += (slot->count + kSlotAlign - 1) / kSlotAlign * kSlotAlign;
      slots_.push_back(slot);
    }
  }
  const auto param_bytes = static_cast<std::size_t>(param_floats_) * sizeof(float);
  master_id_ = arena_.reserve(param_bytes, Purpose::parameters);
  grad_id_ = arena_.reserve(param_bytes, Purpose::gradients);
  if (copy_dtype_ != DType::f32) {
    copy_id_ = arena_.reserve(static_cast<std::size_t>(param_floats_) * dtype_bytes(copy_dtype_),
                              Purpose::weight_copies);
  }
  state_arrays_ = optimizer_state_per_param(options_.optimizer);
  for (int i = 0; i < state_arrays_; ++i)
    opt_ids_[i] = arena_.reserve(param_bytes, Purpose::optimizer);

  arena_.allocate(info_.name + " (cuda:" + std::to_string(device_) + ")");

  input_.data = arena_.ptr(input_id_);
  labels_ = arena_.as<std::int32_t>(labels_id_);
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    outputs_[k].data = nodes_[k]->aliases_input() ? node_input(static_cast<int>(k)).data
                                                  : arena_.ptr(output_ids_[k]);
  }
  params_ = arena_.as<StepParams>(params_id_);
  state_ = arena_.as<DeviceState>(state_id_);
  ctx_.params = params_;
  ctx_.lt_workspace = arena_.ptr(lt_ws_id_);
  ctx_.dnn_workspace = arena_.ptr(dnn_ws_id_);
  ctx_.master = arena_.as<float>(master_id_);
  ctx_.grads = arena_.as<float>(grad_id_);
  ctx_.copy16 = copy_dtype_ != DType::f32 ? arena_.ptr(copy_id_) : nullptr;
  ctx_.copy_dtype = copy_dtype_;
  for (auto& node : nodes_) node->bind(arena_, ctx_);

  // Pinned host memory: two staging slots, the step parameters and the state mirror.
  const std::size_t pinned_bytes =
      2 * align_up(staging_bytes_) + align_up(sizeof(StepParams)) + align_up(sizeof(DeviceState));
  if (cudaMallocHost(reinterpret_cast<void**>(&pinned_), pinned_bytes) != cudaSuccess) {
    cudaGetLastError();
    throw AllocationError("cannot allocate " + std::to_string(pinned_bytes) + " bytes (" +
                              mib(pinned_bytes) + ") of pinned host memory for the batches",
                          pinned_bytes);
  }
  host_params_ = reinterpret_cast<StepParams*>(pinned_ + 2 * align_up(staging_bytes_));
  host_state_ = reinterpret_cast<DeviceState*>(pinned_ + 2 * align_up(staging_bytes_) +
                                               align_up(sizeof(StepParams)));
  *host_params_ = StepParams{};
  *host_state_ = DeviceState{};
  CUDA_CHECK(cudaEventRecord(incoming_consumed_, ctx_.stream));
  CUDA_CHECK(cudaEventRecord(params_copied_, ctx_.stream));
  for (cudaEvent_t e : staging_copied_) CUDA_CHECK(cudaEventRecord(e, copy_stream_));

  if (options_.layer_timing) {
    for (auto* events : {&node_events_fwd_, &node_events_bwd_}) {
      events->resize(nodes_.size() + 1);
      for (cudaEvent_t& e : *events) CUDA_CHECK(cudaEventCreate(&e));
    }
  }
}

void CudaExecutor::initialise_parameters(std::uint64_t seed) {
  for (ParamSlot* s : slots_) {
    if (s->kind != ParamKind::kernel) continue;  // biases start at zero (the arena is zeroed)
    write_parameter(
        s->layer, s->kind,
        glorot_uniform(s->count, s->fan_in, s->fan_out, kernel_init_seed(seed, s->layer)));
  }
}

void CudaExecutor::refresh_copy(const ParamSlot& s) {
  if (!ctx_.copy16) return;
  kernels::cast(ctx_.master + s.offset, DType::f32,
                static_cast<std::byte*>(ctx_.copy16) +
                    static_cast<std::size_t>(s.offset) * dtype_bytes(copy_dtype_),
                copy_dtype_, s.count, ctx_.stream);
}

ParamSlot& CudaExecutor::slot(int layer, ParamKind kind) {
  for (ParamSlot* s : slots_) {
    if (s->layer == layer && s->kind == kind) return *s;
  }
  throw ConfigError("layer " + std::to_string(layer) + " has no " + std::string(to_string(kind)));
}

DTensor CudaExecutor::grad_view(int buffer, const DTensor& like) const {
  DTensor t;
  t.data = arena_.ptr(grad_ids_[buffer]);
  t.dtype = like.dtype;
  t.dims = like.dims;
  return t;
}

std::vector<float> CudaExecutor::to_host(const DTensor& t) {
  std::vector<std::byte> raw(t.bytes());
  CUDA_CHECK(cudaMemcpyAsync(raw.data(), t.data, raw.size(), cudaMemcpyDeviceToHost, ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  std::vector<float> out(static_cast<std::size_t>(t.elements()));
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = to_float(raw.data(), t.dtype, i);
  return out;
}

// --- batches ---------------------------------------------------------------------------------

void CudaExecutor::check_labels(std::span<const std::int32_t> labels, int n) const {
  const bool binary = loss_kind_ == LossKind::binary_crossentropy;
  const std::int64_t limit = binary && classes_ == 1 ? 2 : classes_;
  for (int i = 0; i < n; ++i) {
    const std::int32_t label = labels[static_cast<std::size_t>(i)];
    if (label < 0 || label >= limit) {
      throw ConfigError("label " + std::to_string(label) + " is outside the model's " +
                        std::to_string(limit) + " classes");
    }
  }
}

std::byte* CudaExecutor::next_staging_slot() {
  const int slot = staging_next_;
  staging_next_ = 1 - staging_next_;
  // The slot's previous copy to the device must have finished before it is overwritten.
  CUDA_CHECK(cudaEventSynchronize(staging_copied_[slot]));
  return pinned_ + static_cast<std::size_t>(slot) * align_up(staging_bytes_);
}

void CudaExecutor::stage_and_copy(std::byte* slot, std::size_t bytes) {
  // The incoming buffer is free once the compute stream has taken the previous batch from it.
  CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, incoming_consumed_, 0));
  CUDA_CHECK(
      cudaMemcpyAsync(arena_.ptr(incoming_id_), slot, bytes, cudaMemcpyHostToDevice, copy_stream_));
  const int index = slot == pinned_ ? 0 : 1;
  CUDA_CHECK(cudaEventRecord(staging_copied_[index], copy_stream_));
  CUDA_CHECK(cudaEventRecord(batch_ready_, copy_stream_));
}

void CudaExecutor::load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                              int n) {
  CUDA_CHECK(cudaSetDevice(device_));
  if (n < 1 || n > batch_) {
    throw ConfigError("a batch of " + std::to_string(n) + " samples does not fit batch size " +
                      std::to_string(batch_));
  }
  if (static_cast<std::int64_t>(images.size()) < n * sample_elements_ ||
      static_cast<std::int64_t>(labels.size()) < n) {
    throw ConfigError("batch buffers are smaller than " + std::to_string(n) + " samples");
  }
  check_labels(labels, n);
  std::byte* slot = next_staging_slot();
  const std::size_t label_bytes = align_up(static_cast<std::size_t>(batch_) * sizeof(std::int32_t));
  auto* lab = reinterpret_cast<std::int32_t*>(slot);
  std::memcpy(lab, labels.data(), static_cast<std::size_t>(n) * sizeof(std::int32_t));
  std::memset(lab + n, 0, static_cast<std::size_t>(batch_ - n) * sizeof(std::int32_t));
  auto* img = reinterpret_cast<float*>(slot + label_bytes);
  const auto sample_bytes = static_cast<std::size_t>(sample_elements_) * sizeof(float);
  std::memcpy(img, images.data(), static_cast<std::size_t>(n) * sample_bytes);
  std::memset(img + n * sample_elements_, 0, static_cast<std::size_t>(batch_ - n) * sample_bytes);
  stage_and_copy(slot, label_bytes + static_cast<std::size_t>(batch_) * sample_bytes);
  pending_ = Pending::images;
  pending_n_ = n;
}

bool CudaExecutor::upload_dataset(std::span<const std::uint8_t> images,
                                  std::span<const std::int32_t> labels) {
  no_step_in_flight("upload_dataset()");
  CUDA_CHECK(cudaSetDevice(device_));
  const auto size = static_cast<std::int64_t>(labels.size());
  if (size == 0 || static_cast<std::int64_t>(images.size()) != size * sample_elements_)
    return false;
  check_labels(labels, static_cast<int>(std::min<std::int64_t>(size, 1 << 30)));
  std::size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  const std::size_t bytes = images.size() + labels.size_bytes();
  if (bytes + (std::size_t{256} << 20) > free_bytes) return false;  // keep 256 MiB for libraries
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // nothing may still read the old copy
  if (dataset_images_) cudaFree(dataset_images_);
  if (dataset_labels_) cudaFree(dataset_labels_);
  dataset_images_ = nullptr;
  dataset_labels_ = nullptr;
  dataset_bytes_ = 0;
  const auto allocate = [](void** p, std::size_t n) {
    const cudaError_t status = cudaMalloc(p, n);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      return false;
    }
    CUDA_CHECK(status);
    return true;
  };
  if (!allocate(reinterpret_cast<void**>(&dataset_images_), images.size()) ||
      !allocate(reinterpret_cast<void**>(&dataset_labels_), labels.size_bytes())) {
    if (dataset_images_) cudaFree(dataset_images_);
    dataset_images_ = nullptr;
    return false;  // the run copies batches from the host instead
  }
  CUDA_CHECK(cudaMemcpyAsync(dataset_images_, images.data(), images.size(), cudaMemcpyHostToDevice,
                             ctx_.stream));
  CUDA_CHECK(cudaMemcpyAsync(dataset_labels_, labels.data(), labels.size_bytes(),
                             cudaMemcpyHostToDevice, ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // the host buffers are pageable
  dataset_size_ = size;
  dataset_bytes_ = bytes;
  return true;
}

void CudaExecutor::load_batch_indices(std::span<const std::int64_t> indices, int n) {
  if (!dataset_images_) throw ConfigError("load_batch_indices() before upload_dataset()");
  if (n < 1 || n > batch_ || static_cast<int>(indices.size()) < n) {
    throw ConfigError("a batch of " + std::to_string(n) + " samples does not fit batch size " +
                      std::to_string(batch_));
  }
  for (int i = 0; i < n; ++i) {
    if (indices[static_cast<std::size_t>(i)] < 0 ||
        indices[static_cast<std::size_t>(i)] >= dataset_size_) {
      throw ConfigError("sample " + std::to_string(indices[static_cast<std::size_t>(i)]) +
                        " is outside the dataset's " + std::to_string(dataset_size_));
    }
  }
  std::byte* slot = next_staging_slot();
  const std::size_t label_bytes = align_up(static_cast<std::size_t>(batch_) * sizeof(std::int32_t));
  auto* idx = reinterpret_cast<std::int64_t*>(slot + label_bytes);
  std::memcpy(idx, indices.data(), static_cast<std::size_t>(n) * sizeof(std::int64_t));
  std::fill(idx + n, idx + batch_, std::int64_t{0});
  stage_and_copy(slot, label_bytes + static_cast<std::size_t>(batch_) * sizeof(std::int64_t));
  pending_ = Pending::indices;
  pending_n_ = n;
}

void CudaExecutor::write_params(std::uint64_t step, bool train) {
  // The previous copy from the pinned parameters must be done before they change.
  CUDA_CHECK(cudaEventSynchronize(params_copied_));
  host_params_->step = step;
  host_params_->real_samples = real_samples_;
  host_params_->train = train ? 1 : 0;
  CUDA_CHECK(cudaMemcpyAsync(params_, host_params_, sizeof(StepParams), cudaMemcpyHostToDevice,
                             ctx_.stream));
  CUDA_CHECK(cudaEventRecord(params_copied_, ctx_.stream));
}

void CudaExecutor::prepare_step(std::uint64_t step, bool train) {
  if (pending_ == Pending::none) {
    if (real_samples_ < 1) throw ConfigError("a step before a batch was loaded");
    write_params(step, train);  // the same batch again
    return;
  }
  CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream, batch_ready_, 0));
  const std::byte* incoming = arena_.ptr(incoming_id_);
  const std::size_t label_bytes = align_up(static_cast<std::size_t>(batch_) * sizeof(std::int32_t));
  real_samples_ = pending_n_;
  // The gather reads the step parameters' real_samples: they are written first.
  write_params(step, train);
  if (pending_ == Pending::images) {
    CUDA_CHECK(cudaMemcpyAsync(labels_, incoming,
                               static_cast<std::size_t>(batch_) * sizeof(std::int32_t),
                               cudaMemcpyDeviceToDevice, ctx_.stream));
    CUDA_CHECK(cudaMemcpyAsync(input_.data, incoming + label_bytes, input_.bytes(),
                               cudaMemcpyDeviceToDevice, ctx_.stream));
  } else {
    kernels::gather_batch(dataset_images_, dataset_labels_,
                          reinterpret_cast<const std::int64_t*>(incoming + label_bytes), params_,
                          batch_, sample_elements_, static_cast<float*>(input_.data), labels_,
                          ctx_.stream);
  }
  CUDA_CHECK(cudaEventRecord(incoming_consumed_, ctx_.stream));
  pending_ = Pending::none;
}

void CudaExecutor::no_step_in_flight(const char* call) const {
  if (step_in_flight_) {
    throw ConfigError(std::string(call) +
                      " while a device step is in flight (finish_step() first)");
  }
}

// --- forward, loss, backward -------------------------------------------------------------------

void CudaExecutor::run_forward(bool timed) {
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[k], ctx_.stream));
    if (nodes_[k]->aliases_input()) continue;
    nodes_[k]->forward(ctx_, node_input(static_cast<int>(k)), outputs_[k]);
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_fwd_[nodes_.size()], ctx_.stream));
}

void CudaExecutor::run_loss(bool compute_gradient) {
  const int last = static_cast<int>(nodes_.size()) - 1;
  const DTensor& src = head_ == Head::probabilities ? outputs_[last] : node_input(last);
  LossHead head = LossHead::crossentropy_probabilities;
  const bool binary = loss_kind_ == LossKind::binary_crossentropy;
  if (head_ == Head::softmax_logits) {
    head = LossHead::softmax_crossentropy;
  } else if (head_ == Head::sigmoid_logits) {
    head = LossHead::sigmoid_binary;
  } else if (binary) {
    head = LossHead::binary_probabilities;
  }
  const int seed = head_ == Head::probabilities ? last : last - 1;
  DTensor dsrc = grad_view(0, outputs_[seed]);
  kernels::loss(head, src.data, src.dtype, labels_, batch_, static_cast<int>(classes_), params_,
                state_, arena_.as<float>(scratch_id_), compute_gradient ? dsrc.data : nullptr,
                ctx_.stream);
  if (compute_gradient) backward_from_ = seed;
}

void CudaExecutor::run_backward(bool timed) {
  if (backward_from_ < 0) throw ConfigError("backward() without a seeded output gradient");
  const int stop = options_.input_gradient ? 0 : first_param_node_;
  int buffer = 0;
  DTensor dy = grad_view(0, outputs_[backward_from_]);
  timed_backward_from_ = stop >= 0 ? backward_from_ : -1;  // -1: no backward events recorded
  timed_backward_stop_ = std::max(stop, 0);
  for (int k = backward_from_; stop >= 0 && k >= stop; --k) {
    if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[k + 1], ctx_.stream));
    const DTensor& x = node_input(k);
    const bool need_dx = k > stop || options_.input_gradient;
    if (nodes_[k]->aliases_input()) {
      dy.dims = x.dims;
      continue;
    }
    DTensor dx;
    if (need_dx) dx = grad_view(1 - buffer, x);
    nodes_[k]->backward(ctx_, x, outputs_[k], dy, need_dx ? &dx : nullptr);
    if (need_dx) {
      dy = dx;
      buffer = 1 - buffer;
    }
  }
  if (timed) CUDA_CHECK(cudaEventRecord(node_events_bwd_[timed_backward_stop_], ctx_.stream));
  if (options_.input_gradient) input_gradient_ = dy;
  backward_from_ = -1;
}

void CudaExecutor::read_state() {
  CUDA_CHECK(cudaMemcpyAsync(host_state_, state_, sizeof(DeviceState), cudaMemcpyDeviceToHost,
                             ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
}

template <class Edit>
void CudaExecutor::edit_state(Edit edit) {
  read_state();
  edit(*host_state_);
  CUDA_CHECK(cudaMemcpyAsync(state_, host_state_, sizeof(DeviceState), cudaMemcpyHostToDevice,
                             ctx_.stream));
}

void CudaExecutor::forward(Phase phase, std::uint64_t step) {
  no_step_in_flight("forward()");
  CUDA_CHECK(cudaSetDevice(device_));
  prepare_step(step, phase == Phase::train);
  run_forward(false);
}

BatchLoss CudaExecutor::loss(bool compute_gradient, float loss_scale) {
  no_step_in_flight("loss()");
  if (real_samples_ < 1) throw ConfigError("loss() before a batch was loaded");
  edit_state([&](DeviceState& s) {
    s.step_scale = loss_scale;
    s.loss_sum = 0.0f;
    s.correct = 0.0f;
  });
  run_loss(compute_gradient);
  read_state();
  BatchLoss result;
  result.loss = static_cast<double>(host_state_->loss_sum) / real_samples_;
  result.correct = host_state_->correct;
  result.samples = real_samples_;
  return result;
}

void CudaExecutor::set_output_gradient(std::span<const float> dy) {
  const DTensor& out = outputs_.back();
  if (static_cast<std::int64_t>(dy.size()) != out.elements()) {
    throw ConfigError("output gradient has " + std::to_string(dy.size()) + " values, expected " +
                      std::to_string(out.elements()));
  }
  float* scratch = arena_.as<float>(scratch_id_);
  CUDA_CHECK(
      cudaMemcpyAsync(scratch, dy.data(), dy.size_bytes(), cudaMemcpyHostToDevice, ctx_.stream));
  const DTensor dst = grad_view(0, out);
  kernels::cast(scratch, DType::f32, dst.data, dst.dtype, dst.elements(), ctx_.stream);
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // dy is the caller's (pageable) memory
  backward_from_ = static_cast<int>(nodes_.size()) - 1;
}

void CudaExecutor::backward() {
  run_backward(false);
}

bool CudaExecutor::gradients_finite() {
  no_step_in_flight("gradients_finite()");
  edit_state([](DeviceState& s) {
    s.step_scale = 1.0f;
    s.nonfinite = 0;
  });
  kernels::unscale_and_check(ctx_.grads, param_floats_, state_, ctx_.stream);
  read_state();
  return host_state_->nonfinite == 0;
}

bool CudaExecutor::apply_gradients(float grad_scale, std::int64_t iteration) {
  no_step_in_flight("apply_gradients()");
  const AdamUpdate adam =
      make_adam_update(options_.optimizer, std::max<std::int64_t>(iteration, 1), 1.0f);
  edit_state([&](DeviceState& s) {
    s.step_scale = 1.0f / grad_scale;
    s.nonfinite = 0;
    s.applied = 1;
    s.lr_t = adam.lr_t;
  });
  kernels::unscale_and_check(ctx_.grads, param_floats_, state_, ctx_.stream);
  kernels::optimizer_update(optimizer_, ctx_.master, ctx_.grads,
                            state_arrays_ > 0 ? arena_.as<float>(opt_ids_[0]) : nullptr,
                            state_arrays_ > 1 ? arena_.as<float>(opt_ids_[1]) : nullptr,
                            ctx_.copy16, copy_dtype_, param_floats_, state_, ctx_.stream);
  read_state();
  return host_state_->nonfinite == 0;
}

void CudaExecutor::synchronize() {
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
}

// --- the device step ---------------------------------------------------------------------------

void CudaExecutor::set_device_loss_scaling(const DeviceLossScaling& scaling) {
  no_step_in_flight("set_device_loss_scaling()");
  scaling_ = scaling;
  rule_.dynamic = scaling.enabled && scaling.dynamic;
  rule_.growth_interval = scaling.growth_interval;
  rule_.growth_factor = scaling.growth_factor;
  rule_.backoff_factor = scaling.backoff_factor;
  rule_.min_scale = scaling.min_scale;
  edit_state([&](DeviceState& s) {
    s.scaler.scale = scaling.enabled ? scaling.initial_scale : 1.0f;
    s.scaler.good_steps = 0;
    s.iteration = 0;
  });
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  // A captured graph bakes in the rule: capture again with the new one.
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  eager_steps_ = 0;
}

void CudaExecutor::enqueue_step_body() {
  const bool timed_layers = options_.layer_timing;
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CUDA_CHECK(cudaStreamIsCapturing(ctx_.stream, &capture));
  const bool in_graph = capture != cudaStreamCaptureStatusNone;  // no timing events inside
  kernels::begin_step(state_, scaling_.enabled, ctx_.stream);
  run_forward(timed_layers);
  if (!in_graph) CUDA_CHECK(cudaEventRecord(ev_forward_, ctx_.stream));
  run_loss(true);
  run_backward(timed_layers);
  if (!in_graph) CUDA_CHECK(cudaEventRecord(ev_backward_, ctx_.stream));
  kernels::unscale_and_check(ctx_.grads, param_floats_, state_, ctx_.stream);
  kernels::update_loss_scale(state_, rule_, optimizer_, ctx_.stream);
  kernels::optimizer_update(optimizer_, ctx_.master, ctx_.grads,
                            state_arrays_ > 0 ? arena_.as<float>(opt_ids_[0]) : nullptr,
                            state_arrays_ > 1 ? arena_.as<float>(opt_ids_[1]) : nullptr,
                            ctx_.copy16, copy_dtype_, param_floats_, state_, ctx_.stream);
}

void CudaExecutor::launch_step(std::uint64_t step) {
  if (step_in_flight_) throw ConfigError("launch_step() before the previous step was finished");
  CUDA_CHECK(cudaSetDevice(device_));
  CUDA_CHECK(cudaEventRecord(ev_start_, ctx_.stream));
  prepare_step(step, true);
  step_samples_ = real_samples_;
  // CUDA graphs: the first step runs eagerly (libraries load their kernels), the second is
  // captured, and every later one replays the capture. Per-layer timing needs the eager path.
  const bool use_graph = options_.cuda_graphs && !options_.layer_timing;
  if (use_graph && !graph_exec_ && eager_steps_ >= 1) {
    CUDA_CHECK(cudaStreamBeginCapture(ctx_.stream, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue_step_body();
    } catch (...) {
      cudaGraph_t broken = nullptr;
      cudaStreamEndCapture(ctx_.stream, &broken);
      if (broken) cudaGraphDestroy(broken);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(ctx_.stream, &graph_));
    const cudaError_t status = cudaGraphInstantiate(&graph_exec_, graph_, 0);
    if (status != cudaSuccess) {
      cudaGraphDestroy(graph_);
      graph_ = nullptr;
      graph_exec_ = nullptr;
      CUDA_CHECK(status);
    }
  }
  if (graph_exec_) {
    CUDA_CHECK(cudaGraphLaunch(graph_exec_, ctx_.stream));
  } else {
    enqueue_step_body();
    ++eager_steps_;
  }
  CUDA_CHECK(cudaMemcpyAsync(host_state_, state_, sizeof(DeviceState), cudaMemcpyDeviceToHost,
                             ctx_.stream));
  CUDA_CHECK(cudaEventRecord(ev_end_, ctx_.stream));
  step_in_flight_ = true;
}

DeviceStepResult CudaExecutor::finish_step() {
  if (!step_in_flight_) throw ConfigError("finish_step() without launch_step()");
  step_in_flight_ = false;
  CUDA_CHECK(cudaEventSynchronize(ev_end_));
  CUDA_CHECK(cudaGetLastError());
  const DeviceState& s = *host_state_;
  DeviceStepResult r;
  r.batch.samples = step_samples_;
  r.batch.loss = static_cast<double>(s.loss_sum) / step_samples_;
  r.batch.correct = s.correct;
  r.gradients_finite = s.nonfinite == 0;
  r.applied = s.applied != 0;
  r.loss_scale = s.step_scale;
  r.next_loss_scale = s.scaler.scale;
  const auto elapsed = [](cudaEvent_t a, cudaEvent_t b) {
    float ms = 0.0f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    return static_cast<double>(ms);
  };
  r.device_ms = elapsed(ev_start_, ev_end_);
  if (graph_exec_) {
    r.forward_ms = r.backward_ms = r.optimizer_ms = std::nan("");  // inside the graph
  } else {
    r.forward_ms = elapsed(ev_start_, ev_forward_);
    r.backward_ms = elapsed(ev_forward_, ev_backward_);
    r.optimizer_ms = elapsed(ev_backward_, ev_end_);
  }
  if (options_.layer_timing) {
    layer_timings_.assign(layer_last_node_.size(), LayerTiming{});
    for (std::size_t i = 0; i < layer_timings_.size(); ++i)
      layer_timings_[i].layer = static_cast<int>(i);
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      auto& t = layer_timings_[static_cast<std::size_t>(nodes_[k]->layer)];
      t.forward_ms += elapsed(node_events_fwd_[k], node_events_fwd_[k + 1]);
      const int ki = static_cast<int>(k);
      if (ki >= timed_backward_stop_ && ki <= timed_backward_from_) {
        // Backward runs from the last node down: node k's part lies between the events
        // recorded before it (k + 1) and before the next one below it (k).
        t.backward_ms += elapsed(node_events_bwd_[k + 1], node_events_bwd_[k]);
      }
    }
  }
  return r;
}

std::int64_t CudaExecutor::device_memory_bytes() const {
  return static_cast<std::int64_t>(arena_.size() + dataset_bytes_);
}

// --- op-level access ---------------------------------------------------------------------------

std::vector<float> CudaExecutor::read_output() {
  return to_host(outputs_.back());
}

std::vector<float> CudaExecutor::read_activation(int layer) {
  if (layer < 0 || layer >= static_cast<int>(layer_last_node_.size())) {
    throw ConfigError("no layer " + std::to_string(layer));
  }
  return to_host(
      outputs_[static_cast<std::size_t>(layer_last_node_[static_cast<std::size_t>(layer)])]);
}

std::vector<float> CudaExecutor::read_input_gradient() {
  if (!options_.input_gradient || !input_gradient_.data) {
    throw ConfigError("the input gradient was not computed (ExecutorOptions::input_gradient)");
  }
  return to_host(input_gradient_);
}

std::vector<float> CudaExecutor::read_parameter(int layer, ParamKind kind) {
  const ParamSlot& s = slot(layer, kind);
  std::vector<float> ours(static_cast<std::size_t>(s.count));
  CUDA_CHECK(cudaMemcpyAsync(ours.data(), ctx_.master + s.offset, ours.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  return to_keras(s, ours);
}

std::vector<float> CudaExecutor::read_gradient(int layer, ParamKind kind) {
  const ParamSlot& s = slot(layer, kind);
  std::vector<float> ours(static_cast<std::size_t>(s.count));
  CUDA_CHECK(cudaMemcpyAsync(ours.data(), ctx_.grads + s.offset, ours.size() * sizeof(float),
                             cudaMemcpyDeviceToHost, ctx_.stream));
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));
  return to_keras(s, ours);
}

void CudaExecutor::write_parameter(int layer, ParamKind kind, std::span<const float> values) {
  const ParamSlot& s = slot(layer, kind);
  if (static_cast<std::int64_t>(values.size()) != s.count) {
    throw ConfigError("layer " + std::to_string(layer) + " " + std::string(to_string(kind)) +
                      " has " + std::to_string(s.count) + " values, got " +
                      std::to_string(values.size()));
  }
  const std::vector<float> ours = from_keras(s, values);
  CUDA_CHECK(cudaMemcpyAsync(ctx_.master + s.offset, ours.data(), ours.size() * sizeof(float),
                             cudaMemcpyHostToDevice, ctx_.stream));
  refresh_copy(s);
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // `ours` is pageable and about to go
}

}  // namespace mixlab::cuda
