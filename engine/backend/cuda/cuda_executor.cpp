#include "engine/backend/cuda/cuda_executor.h"

#include <algorithm>
#include <string>

#include "engine/backend/cuda/batch_norm_node.h"
#include "engine/backend/cuda/conv_node.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/dense_node.h"
#include "engine/backend/cuda/elementwise_nodes.h"
#include "engine/backend/cuda/layouts.h"
#include "engine/backend/cuda/merge_node.h"
#include "engine/backend/cuda/pool_node.h"
#include "engine/backend/cuda/sequence_nodes.h"
#include "engine/core/half.h"
#include "engine/ops/initializers.h"

namespace mixlab::cuda {

namespace {

// The plan's slots (in offset order) merged into runs of one compute dtype, each reaching to
// the next run's first slot or the array's end.
std::vector<GradientRun> gradient_runs(const ExecutionPlan& plan) {
  std::vector<GradientRun> runs;
  std::vector<const PlanSlot*> slots;
  for (const PlanSlot& s : plan.params) slots.push_back(&s);
  std::sort(slots.begin(), slots.end(),
            [](const PlanSlot* a, const PlanSlot* b) { return a->offset < b->offset; });
  for (const PlanSlot* s : slots) {
    if (!runs.empty() && runs.back().raw == s->compute) continue;
    if (!runs.empty()) runs.back().count = s->offset - runs.back().begin;
    runs.push_back({s->offset, 0, s->compute});
  }
  if (!runs.empty()) {
    runs.front().begin = 0;
    runs.back().count = plan.param_floats - runs.back().begin;
  }
  return runs;
}

constexpr std::size_t kLtWorkspaceBytes = std::size_t{32} << 20;  // cuBLASLt: 32 MiB

std::size_t align_up(std::size_t n) {
  return (n + DeviceArena::kAlign - 1) / DeviceArena::kAlign * DeviceArena::kAlign;
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

std::vector<std::int64_t> batch_dims(int batch, const Shape& s) {
  std::vector<std::int64_t> d{batch};
  d.insert(d.end(), s.begin(), s.end());
  return d;
}

// mixed_float8: a Dense (or pointwise Conv2D) node on FP8 tensor cores where its dimensions
// allow cuBLASLt's FP8 GEMMs (multiples of 16); otherwise in bfloat16 (the doctor models the
// same; the CPU emulates both in FP8).
bool on_fp8_gemms(const ExecutionPlan& plan, const PlanNode& node) {
  const std::int64_t in = node.in_shape.back();
  const std::int64_t rows = plan.batch * num_elements(node.in_shape) / in;
  return node.fp8 && fp8_dense_aligned(rows, in, node.out_shape.back());
}

}  // namespace

CudaExecutor::CudaExecutor(const ModelSpec& spec, const ShapeTable& table,
                           const ExecutionPlan& plan, const ExecutorOptions& options, int device,
                           const DeviceInfo& info)
    : options_(options), plan_(plan), device_(device), info_(info) {
  CUDA_CHECK(cudaSetDevice(device_));
  try {
    CUDA_CHECK(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    CUBLAS_CHECK(cublasLtCreate(&ctx_.lt));
    CUDNN_CHECK(cudnnCreate(&ctx_.dnn));
    CUDNN_CHECK(cudnnSetStream(ctx_.dnn, ctx_.stream));
    CUDA_CHECK(cudaEventCreateWithFlags(&params_copied_, cudaEventDisableTiming));
    for (cudaEvent_t* e : {&ev_start_, &ev_forward_, &ev_backward_, &ev_end_}) {
      CUDA_CHECK(cudaEventCreate(e));
    }
    ctx_.seed = options.seed;
    ctx_.tf32 = options.tf32 && plan.policy == Policy::float32;
    ctx_.lt_workspace_bytes = kLtWorkspaceBytes;
    ctx_.copy_dtype = plan.copy_dtype;
    const bool binary = plan.loss == LossKind::binary_crossentropy;
    staging_ = std::make_unique<BatchStaging>(plan.batch, num_elements(plan.input_shape),
                                              binary && plan.classes == 1 ? 2 : plan.classes,
                                              plan.positions);
    lower(spec, table);
    allocate();
    gradient_runs_ = gradient_runs(plan);
    initialise_parameters(options.seed);

    optimizer_.kind = options.optimizer.kind;
    optimizer_.lr = options.optimizer.learning_rate;  // double: Adam's lr_t as the CPU computes it
    optimizer_.momentum = static_cast<float>(options.optimizer.momentum);
    optimizer_.nesterov = options.optimizer.nesterov;
    optimizer_.beta_1 = options.optimizer.beta_1;
    optimizer_.beta_2 = options.optimizer.beta_2;
    optimizer_.epsilon = static_cast<float>(options.optimizer.epsilon);
    set_loss_scaling(LossScaleConfig::none());
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
  // The captured graph first: its nodes may launch kernels that cuDNN's plans (the nodes')
  // compiled at run time and unload with them.
  if (graph_exec_) cudaGraphExecDestroy(graph_exec_);
  if (graph_) cudaGraphDestroy(graph_);
  graph_exec_ = nullptr;
  graph_ = nullptr;
  staging_.reset();
  nodes_.clear();
  fused_attention_.clear();  // its plans before the cuDNN handle
  for (cudaEvent_t* e : {&params_copied_, &ev_start_, &ev_forward_, &ev_backward_, &ev_end_}) {
    if (*e) cudaEventDestroy(*e);
    *e = nullptr;
  }
  for (auto* events : {&node_events_fwd_, &node_events_bwd_}) {
    for (cudaEvent_t e : *events) cudaEventDestroy(e);
    events->clear();
  }
  if (pinned_) cudaFreeHost(pinned_);
  pinned_ = nullptr;
  if (ctx_.dnn) cudnnDestroy(ctx_.dnn);
  if (ctx_.lt) cublasLtDestroy(ctx_.lt);
  if (ctx_.stream) cudaStreamDestroy(ctx_.stream);
  ctx_.dnn = nullptr;
  ctx_.lt = nullptr;
  ctx_.stream = nullptr;
}

void CudaExecutor::lower(const ModelSpec& spec, const ShapeTable& table) {
  input_.dtype = DType::f32;
  input_.dims = batch_dims(plan_.batch, plan_.input_shape);
  for (const PlanNode& node : plan_.nodes) {
    const LayerSpec& layer = spec.layers.at(static_cast<std::size_t>(node.layer));
    const LayerInfo& info = table.layers.at(static_cast<std::size_t>(node.layer));
    const DType dtype = node.out_dtype;
    std::unique_ptr<CudaNode> made;
    try {
      switch (node.op) {
        case PlanOp::dense:
          made = std::make_unique<DenseNode>(ctx_, plan_, node,
                                             on_fp8_gemms(plan_, node) ? &options_.fp8 : nullptr);
          break;
        case PlanOp::conv2d: {
          // A pointwise Conv2D under mixed_float8 is a Dense over the pixels, run as one (its
          // kernel kept in Keras's layout, which is Dense's). Larger kernels stay on cuDNN in
          // bfloat16: as an FP8 GEMM over its windows (im2col) a 3x3 convolution moves 9 times
          // its input and loses to cuDNN's bfloat16 kernels (the doctor's fp8-convolutions).
          if (pointwise_conv(plan_, node) && on_fp8_gemms(plan_, node)) {
            made = std::make_unique<DenseNode>(ctx_, plan_, node, &options_.fp8);
            break;
          }
          const ConvPart part = conv_part(layer, info, node);
          made = std::make_unique<ConvNode>(ctx_, plan_, node, part.layer, part.info);
          break;
        }
        case PlanOp::pooling:
          made = std::make_unique<PoolNode>(ctx_, plan_, node, layer, info);
          break;
        case PlanOp::flatten:
          made = std::make_unique<FlattenNode>(node.layer, dtype, node.label);
          break;
        case PlanOp::cast:
          made = std::make_unique<CastNode>(node.layer, dtype, node.label);
          break;
        case PlanOp::activation:
          made = std::make_unique<ActivationNode>(node.layer, node.activation,
                                                  static_cast<int>(node.out_shape.back()), dtype,
                                                  node.label, node.relu);
          break;
        case PlanOp::batch_norm:
          made = std::make_unique<BatchNormNode>(plan_, node, layer, info);
          break;
        case PlanOp::zero_padding:
          made = std::make_unique<ZeroPaddingNode>(plan_.batch, info, dtype, node.label);
          break;
        case PlanOp::rescaling:
          made = std::make_unique<RescalingNode>(node.layer, layer.scale, layer.offset, dtype,
                                                 node.label);
          break;
        case PlanOp::normalization:
          made = std::make_unique<NormalizationNode>(node.layer, layer, info, dtype, node.label);
          break;
        case PlanOp::dropout:
          made = std::make_unique<DropoutNode>(node.layer, layer.rate, dtype, node.label,
                                               layer.noise_shape);
          break;
        case PlanOp::merge:
          made = std::make_unique<MergeNode>(node, dtype);
          break;
        case PlanOp::embedding:
          made = std::make_unique<EmbeddingNode>(plan_, node, layer);
          break;
        case PlanOp::position_embedding:
          made = std::make_unique<PositionEmbeddingNode>(plan_, node);
          break;
        case PlanOp::layer_norm:
          made = std::make_unique<LayerNormNode>(plan_, node, layer);
          break;
        case PlanOp::attention:
          made = std::make_unique<AttentionNode>(ctx_, plan_, node, options_.attention,
                                                 compute_capability_value(info_), fused_attention_);
          break;
      }
    } catch (const BackendError& e) {
      const std::string what = e.what();
      if (what.rfind(node.label, 0) == 0) throw;
      throw BackendError(node.label + ": " + what);
    }
    DTensor t;
    t.dtype = dtype;
    t.dims = batch_dims(plan_.batch, node.out_shape);
    outputs_.push_back(std::move(t));
    nodes_.push_back(std::move(made));
  }
}

// The starting weights' FP8 states, carried or not; which kernels the attention cores run on,
// and why not the fused ones where `auto` could not.
std::vector<std::string> CudaExecutor::notes() const {
  int fused = 0, unfused = 0;
  std::string reason;
  for (const auto& node : nodes_) {
    const auto* attention = dynamic_cast<const AttentionNode*>(node.get());
    if (attention == nullptr) continue;
    if (attention->fused()) {
      ++fused;
    } else {
      ++unfused;
      if (reason.empty()) reason = attention->unfused_reason();
    }
  }
  std::vector<std::string> notes;
  if (!fp8_note_.empty()) notes.push_back(fp8_note_);
  if (fused + unfused == 0) return notes;
  if (unfused == 0) {
    notes.push_back("attention on cuDNN 9's fused kernels");
    return notes;
  }
  std::string note = "attention on MixLab's unfused kernels (cuBLASLt and a float32 softmax)";
  if (fused > 0) {
    note += " in " + std::to_string(unfused) + " of " + std::to_string(fused + unfused) +
            " layers, the others on cuDNN 9's fused kernels";
  }
  if (!reason.empty()) note += ": " + reason;
  notes.push_back(std::move(note));
  return notes;
}

void CudaExecutor::allocate() {
  // The plan's buffers, then the backend's own: the incoming batch, the step parameters and
  // state, the library workspaces and what nodes ask for.
  std::vector<DeviceArena::Id> output_ids(nodes_.size(), 0);
  std::vector<DeviceArena::Id> grad_ids(static_cast<std::size_t>(plan_.gradient_buffers), 0);
  DeviceArena::Id input_id = 0, labels_id = 0, loss_id = 0;
  DeviceArena::Id master_id = 0, grads_id = 0, copies_id = 0, state_ids[2] = {0, 0};
  for (const PlanBuffer& b : plan_.buffers) {
    const DeviceArena::Id id = arena_.reserve(b);
    switch (b.role) {
      case BufferRole::input:
        input_id = id;
        break;
      case BufferRole::labels:
        labels_id = id;
        break;
      case BufferRole::node_output:
        output_ids[static_cast<std::size_t>(b.index)] = id;
        break;
      case BufferRole::activation_gradient:
        grad_ids[static_cast<std::size_t>(b.index)] = id;
        break;
      case BufferRole::loss_rows:
        loss_id = id;
        break;
      case BufferRole::masters:
        master_id = id;
        break;
      case BufferRole::parameter_gradients:
        grads_id = id;
        break;
      case BufferRole::weight_copies:
        copies_id = id;
        break;
      case BufferRole::optimizer_state:
        state_ids[b.index] = id;
        break;
    }
  }
  const DeviceArena::Id incoming_id = arena_.reserve(staging_->incoming_bytes(), Purpose::workspace);
  const DeviceArena::Id params_id = arena_.reserve(sizeof(StepParams), Purpose::workspace);
  const DeviceArena::Id state_id = arena_.reserve(sizeof(DeviceState), Purpose::workspace);
  const DeviceArena::Id lt_ws_id = arena_.reserve(kLtWorkspaceBytes, Purpose::workspace);
  std::size_t dnn_bytes = 0;
  for (auto& node : nodes_) {
    node->reserve(arena_);
    dnn_bytes = std::max(dnn_bytes, node->dnn_workspace_bytes());
  }
  const DeviceArena::Id dnn_ws_id = arena_.reserve(dnn_bytes, Purpose::workspace);

  arena_.allocate(info_.name + " (cuda:" + std::to_string(device_) + ")");

  input_.data = arena_.ptr(input_id);
  labels_ = arena_.as<std::int32_t>(labels_id);
  loss_rows_ = arena_.as<float>(loss_id);
  grad_buffers_.clear();
  for (const DeviceArena::Id id : grad_ids) grad_buffers_.push_back(arena_.ptr(id));
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    outputs_[k].data = nodes_[k]->aliases_input() ? node_input(static_cast<int>(k)).data
                                                  : arena_.ptr(output_ids[k]);
  }
  params_ = arena_.as<StepParams>(params_id);
  state_ = arena_.as<DeviceState>(state_id);
  ctx_.params = params_;
  ctx_.lt_workspace = arena_.ptr(lt_ws_id);
  ctx_.dnn_workspace = arena_.ptr(dnn_ws_id);
  if (plan_.param_floats > 0) {
    ctx_.master = arena_.as<float>(master_id);
    ctx_.grads = arena_.as<float>(grads_id);
    if (plan_.copy_dtype != DType::f32) ctx_.copy16 = arena_.ptr(copies_id);
    for (int i = 0; i < plan_.optimizer_states; ++i) opt_state_[i] = arena_.as<float>(state_ids[i]);
  }
  for (auto& node : nodes_) {
    node->bind(arena_);
    for (ParamSlot* slot : node->params()) slots_.push_back(slot);
  }
  // Binds may copy constants in with cudaMemcpy: on the legacy stream, which the executor's
  // non-blocking stream does not wait for, and from pageable memory it may return before the
  // copy lands. Every step reads them after this.
  CUDA_CHECK(cudaDeviceSynchronize());

  // Pinned host memory: the step parameters and the state mirror.
  const std::size_t pinned_bytes = align_up(sizeof(StepParams)) + align_up(sizeof(DeviceState));
  if (cudaMallocHost(reinterpret_cast<void**>(&pinned_), pinned_bytes) != cudaSuccess) {
    cudaGetLastError();
    pinned_ = nullptr;
    throw AllocationError("cannot allocate " + std::to_string(pinned_bytes) +
                              " bytes of pinned host memory for the step",
                          pinned_bytes);
  }
  host_params_ = reinterpret_cast<StepParams*>(pinned_);
  host_state_ = reinterpret_cast<DeviceState*>(pinned_ + align_up(sizeof(StepParams)));
  *host_params_ = StepParams{};
  *host_state_ = DeviceState{};
  staging_->bind(arena_.ptr(incoming_id), ctx_.stream);
  CUDA_CHECK(cudaEventRecord(params_copied_, ctx_.stream));

  if (options_.layer_timing) {
    for (auto* events : {&node_events_fwd_, &node_events_bwd_}) {
      events->resize(nodes_.size() + 1);
      for (cudaEvent_t& e : *events) CUDA_CHECK(cudaEventCreate(&e));
    }
  }
}

void CudaExecutor::initialise_parameters(std::uint64_t seed) {
  for (ParamSlot* s : slots_) {
    if (s->kind == ParamKind::gamma || s->kind == ParamKind::moving_variance) {
      write_parameter(s->layer, s->kind,
                      std::vector<float>(static_cast<std::size_t>(s->count), 1.0f));
    }
    // Biases, beta and moving means start at zero (the arena is zeroed).
    if (!draws_initial_values(s->kind)) continue;
    write_parameter(s->layer, s->kind,
                    initial_values(s->kind, s->count, s->fan_in, s->fan_out,
                                   kernel_init_seed(seed, s->layer, s->kind)));
  }
  if (options_.initial_weights) {
    write_model_weights(*options_.initial_weights,
                        [this](int layer, ParamKind kind, std::span<const float> values) {
                          write_parameter(layer, kind, values);
                        });
    // Each FP8 matmul of the plan, in order; a Dense the GPU runs in bfloat16 (off multiples of
    // 16) lets its states pass.
    Fp8StateRestorer restorer(options_.initial_weights.get());
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      const PlanNode& node = plan_.nodes[k];
      if (node.fp8 && !nodes_[k]->restore_fp8(restorer)) restorer.skip(node.layer);
    }
    fp8_note_ = restorer.note();
  }
}

void CudaExecutor::refresh_copy(const ParamSlot& s) {
  if (!ctx_.copy16) return;
  kernels::cast(ctx_.master + s.offset, DType::f32,
                static_cast<std::byte*>(ctx_.copy16) +
                    static_cast<std::size_t>(s.offset) * dtype_bytes(ctx_.copy_dtype),
                ctx_.copy_dtype, s.count, ctx_.stream);
}

ParamSlot& CudaExecutor::slot(int layer, ParamKind kind) {
  for (ParamSlot* s : slots_) {
    if (s->layer == layer && s->kind == kind) return *s;
  }
  throw ConfigError("layer " + std::to_string(layer) + " has no " + std::string(to_string(kind)));
}

DTensor CudaExecutor::grad_view(int buffer, const DTensor& like) const {
  DTensor t;
  t.data = grad_buffers_[buffer];
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

void CudaExecutor::no_step_in_flight(const char* call) const {
  if (step_in_flight_) {
    throw ConfigError(std::string(call) + " while a step is in flight (finish_step() first)");
  }
}

std::int64_t CudaExecutor::device_memory_bytes() const {
  return static_cast<std::int64_t>(arena_.size() + staging_->dataset_bytes());
}

// --- batches ---------------------------------------------------------------------------------

void CudaExecutor::load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                              int n) {
  CUDA_CHECK(cudaSetDevice(device_));
  staging_->load(images, labels, n);
}

bool CudaExecutor::upload_dataset(std::span<const std::uint8_t> images,
                                  std::span<const std::int32_t> labels) {
  no_step_in_flight("upload_dataset()");
  CUDA_CHECK(cudaSetDevice(device_));
  return staging_->upload_dataset(images, labels);
}

void CudaExecutor::load_batch_indices(std::span<const std::int64_t> indices, int n) {
  CUDA_CHECK(cudaSetDevice(device_));
  staging_->load_indices(indices, n);
}

// --- op-level access -------------------------------------------------------------------------

void CudaExecutor::forward(Phase phase, std::uint64_t step) {
  no_step_in_flight("forward()");
  CUDA_CHECK(cudaSetDevice(device_));
  prepare_step(step, phase == Phase::train);
  run_forward(false);
}

void CudaExecutor::set_output_gradient(std::span<const float> dy) {
  const DTensor& out = outputs_.back();
  if (static_cast<std::int64_t>(dy.size()) != out.elements()) {
    throw ConfigError("output gradient has " + std::to_string(dy.size()) + " values, expected " +
                      std::to_string(out.elements()));
  }
  const int seed = plan_.nodes.back().grad;
  if (seed < 0) {
    throw ConfigError(
        "set_output_gradient(): nothing in this model takes a gradient (no "
        "parameters, and ExecutorOptions::input_gradient is off)");
  }
  // Through a gradient buffer the seed does not use as float32 staging (free until backward).
  auto* staging = static_cast<float*>(grad_buffers_[seed == 0 ? 1 : 0]);
  CUDA_CHECK(
      cudaMemcpyAsync(staging, dy.data(), dy.size_bytes(), cudaMemcpyHostToDevice, ctx_.stream));
  const DTensor dst = grad_view(seed, out);
  kernels::cast(staging, DType::f32, dst.data, dst.dtype, dst.elements(), ctx_.stream);
  CUDA_CHECK(cudaStreamSynchronize(ctx_.stream));  // dy is the caller's (pageable) memory
  backward_from_ = plan_.output_node;
}

void CudaExecutor::backward() {
  run_backward(false);
}

std::vector<float> CudaExecutor::read_output() {
  return to_host(outputs_.back());
}

std::vector<float> CudaExecutor::read_activation(int layer) {
  if (layer < 0 || layer >= static_cast<int>(plan_.layer_last_node.size())) {
    throw ConfigError("no layer " + std::to_string(layer));
  }
  if (plan_.layer_fused[static_cast<std::size_t>(layer)]) {
    throw ConfigError("layer " + std::to_string(layer) +
                      "'s output is not kept: the CUDA backend fuses the ReLU that reads it into "
                      "its kernel");
  }
  return to_host(
      outputs_[static_cast<std::size_t>(plan_.layer_last_node[static_cast<std::size_t>(layer)])]);
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
