#include "engine/backend/cpu/cpu_executor.h"

#include <omp.h>
#if defined(__SSE2__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/batch_norm.h"
#include "engine/backend/cpu/conv2d.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/dense.h"
#include "engine/backend/cpu/dnnl_check.h"
#include "engine/backend/cpu/elementwise.h"
#include "engine/backend/cpu/merge.h"
#include "engine/backend/cpu/optimizer_loops.h"
#include "engine/backend/cpu/pooling.h"
#include "engine/backend/cpu/sequence.h"
#include "engine/ops/dropout.h"
#include "engine/ops/initializers.h"
#include "engine/ops/loss.h"

namespace mixlab::cpu {

namespace {

// FTZ and DAZ in this thread's MXCSR (x86; elsewhere nothing).
void flush_denormals() {
#if defined(__SSE2__)
  _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
  _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#endif
}

using dnnl::memory;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::int64_t keras_count(const ParamSlot& slot) {
  std::int64_t n = 1;
  for (auto d : slot.keras_desc.dims()) n *= d;
  return n;
}

std::vector<std::int64_t> batch_dims(int batch, const Shape& s) {
  std::vector<std::int64_t> d{batch};
  d.insert(d.end(), s.begin(), s.end());
  return d;
}

}  // namespace

CpuExecutor::CpuExecutor(const ModelSpec& spec, const ShapeTable& table, const ExecutionPlan& plan,
                         const ExecutorOptions& options, int threads)
    : options_(options), plan_(plan), threads_(threads), batch_(plan.batch) {
  use_threads();
  ctx_.seed = options.seed;
  lower(spec, table);
  allocate();
  initialise_parameters(options.seed);
  set_loss_scaling(LossScaleConfig::none());
}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::use_threads() const {
  if (threads_ > 0) omp_set_num_threads(threads_);
  // Denormal floats flushed to zero, read as zero, on this thread and every worker (MXCSR is
  // per thread), as TensorFlow's and XLA's CPU runtimes run Keras: a float32 step whose
  // gradients held denormals (a saturated softmax's probabilities early in training) ran its
  // Dense backward 20x slower, for tens of steps, on x86's microcode assist.
  flush_denormals();
#pragma omp parallel
  flush_denormals();
}

void CpuExecutor::lower(const ModelSpec& spec, const ShapeTable& table) {
  // Below AVX-512 oneDNN has no bfloat16 kernels: bfloat16 layers then compute in float32 and
  // round every value they write to bfloat16, as float16 is emulated everywhere.
  // mixed_float8 rounds the bfloat16 values of its FP8 layers itself: emulated bfloat16 there.
  const bool fp8 = plan_.policy == Policy::mixed_float8;
  const bool bf16_kernels = has_bf16_kernels(onednn_isa()) && !fp8;
  input_.storage = Storage::f32;
  input_.dims = batch_dims(batch_, plan_.input_shape);
  for (const PlanNode& node : plan_.nodes) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(node.layer)];
    const LayerInfo& info = table.layers[static_cast<std::size_t>(node.layer)];
    const Storage s = storage_for(node.out_dtype, bf16_kernels);
    const int li = node.layer;
    const std::int64_t elements = batch_ * num_elements(node.out_shape);
    std::unique_ptr<CpuNode> made;
    try {
      switch (node.op) {
        case PlanOp::dense: {
          const std::int64_t in = node.in_shape.back();
          const std::int64_t rows = batch_ * num_elements(node.in_shape) / in;
          auto dense =
              std::make_unique<DenseNode>(ctx_, layer, li, rows, in, node.out_shape.back(), s);
          if (layer.type == LayerType::MultiHeadAttention) {  // one of its projections
            const auto& p = node.params;
            dense->set_params(
                plan_.params.at(static_cast<std::size_t>(p.front())),
                p.size() > 1 ? &plan_.params.at(static_cast<std::size_t>(p[1])) : nullptr);
          }
          // FP8 matmuls (PlanNode::fp8): Dense and attention's projections (Keras quantizes
          // both: Dense and EinsumDense), unless the layer stays in float32 or bfloat16.
          if (node.fp8) dense->enable_fp8(options_.fp8);
          made = std::move(dense);
          break;
        }
        case PlanOp::conv2d: {
          const ConvPart part = conv_part(layer, info, node);
          auto conv = std::make_unique<Conv2DNode>(ctx_, part.layer, part.info, batch_, s);
          if (layer.type == LayerType::SeparableConv2D && node.groups == 1) {
            conv->set_kernel_kind(ParamKind::pointwise_kernel);
          }
          // FP8 matmuls: Conv2D's, not the depthwise or separable convolutions'.
          if (node.fp8) conv->enable_fp8(options_.fp8);
          made = std::move(conv);
          break;
        }
        case PlanOp::pooling:
          made = std::make_unique<PoolingNode>(ctx_, layer, info, batch_, s);
          break;
        case PlanOp::flatten:
          made = std::make_unique<FlattenNode>(li, s);
          break;
        case PlanOp::cast:
          made = std::make_unique<CastNode>(li, s);
          break;
        case PlanOp::activation:
          made = std::make_unique<ActivationNode>(li, node.activation, node.out_shape.back(),
                                                  elements, s, node.relu);
          break;
        case PlanOp::batch_norm:
          made = std::make_unique<BatchNormNode>(ctx_, layer, info, batch_, s);
          break;
        case PlanOp::zero_padding:
          made = std::make_unique<ZeroPaddingNode>(li, info, s);
          break;
        case PlanOp::rescaling:
          made = std::make_unique<RescalingNode>(li, layer.scale, layer.offset, s);
          break;
        case PlanOp::normalization:
          made = std::make_unique<NormalizationNode>(li, layer, info, node.out_dtype, s);
          break;
        case PlanOp::dropout:
          made = std::make_unique<DropoutNode>(li, layer.rate, s, layer.noise_shape);
          break;
        case PlanOp::merge:
          made = std::make_unique<MergeNode>(li, node, s);
          break;
        case PlanOp::embedding:
          made = std::make_unique<EmbeddingNode>(layer, li, s);
          break;
        case PlanOp::position_embedding:
          made = std::make_unique<PositionEmbeddingNode>(layer, info, s);
          break;
        case PlanOp::layer_norm:
          made = std::make_unique<LayerNormNode>(layer, info, batch_, s);
          break;
        case PlanOp::attention:
          made = std::make_unique<AttentionNode>(li, node, batch_, s);
          break;
      }
    } catch (const BackendError& e) {
      throw BackendError(node.label + ": " + e.what());
    }
    Tensor t;
    t.storage = made->out_storage;
    t.dims = batch_dims(batch_, node.out_shape);
    outputs_.push_back(std::move(t));
    nodes_.push_back(std::move(made));
  }
  node_forward_ms_.assign(nodes_.size(), 0.0);
  node_backward_ms_.assign(nodes_.size(), 0.0);
}

void CpuExecutor::allocate() {
  // The plan's buffers but the parameter arrays, whose slots follow oneDNN's layouts (a
  // blocked layout may pad a slot), below.
  std::vector<Arena::Id> output_ids(nodes_.size(), 0);
  std::vector<Arena::Id> grad_ids(static_cast<std::size_t>(plan_.gradient_buffers), 0);
  Arena::Id input_id = 0, labels_id = 0, loss_id = 0;
  for (const PlanBuffer& b : plan_.buffers) {
    switch (b.role) {
      case BufferRole::input:
        input_id = arena_.reserve(b);
        break;
      case BufferRole::labels:
        labels_id = arena_.reserve(b);
        break;
      case BufferRole::node_output: {
        // Sized by the storage: an emulated 16-bit tensor keeps float32 values.
        const auto k = static_cast<std::size_t>(b.index);
        output_ids[k] = arena_.reserve(outputs_[k].bytes(), b.purpose);
        break;
      }
      case BufferRole::activation_gradient:
        grad_ids[static_cast<std::size_t>(b.index)] = arena_.reserve(b);
        break;
      case BufferRole::loss_rows:
        loss_id = arena_.reserve(b);
        break;
      case BufferRole::masters:
      case BufferRole::parameter_gradients:
      case BufferRole::weight_copies:
      case BufferRole::optimizer_state:
        break;  // laid out below, as oneDNN's layouts want them
    }
  }

  std::size_t scratchpad_bytes = 1;
  for (auto& node : nodes_) scratchpad_bytes = std::max(scratchpad_bytes, node->reserve(arena_));
  const Arena::Id scratchpad_id = arena_.reserve(scratchpad_bytes, Purpose::workspace);

  std::int64_t grad_bytes = 0;
  std::vector<std::pair<ParamSlot*, std::pair<Arena::Id, Arena::Id>>> copies;
  for (auto& node : nodes_) {
    for (ParamSlot* slot : node->params()) {
      slot->count = static_cast<std::int64_t>(slot->master_desc.get_size() / sizeof(float));
      slot->offset = param_floats_;
      param_floats_ += (slot->count + kSlotAlignFloats - 1) / kSlotAlignFloats * kSlotAlignFloats;
      slot->grad_offset = grad_bytes;
      grad_bytes += (static_cast<std::int64_t>(slot->grad_desc.get_size()) + 63) / 64 * 64;
      if (slot->copy_mode != CopyMode::master) {
        slot->copy_id = arena_.reserve(slot->copy_desc.get_size(), Purpose::weight_copies);
      }
      if (!slot->backward_copy_desc.is_zero()) {
        slot->backward_copy_id =
            arena_.reserve(slot->backward_copy_desc.get_size(), Purpose::weight_copies);
      }
      slots_.push_back(slot);
    }
  }
  const auto param_bytes = static_cast<std::size_t>(param_floats_) * sizeof(float);
  const Arena::Id master_id = arena_.reserve(param_bytes, Purpose::parameters);
  const Arena::Id grad_id = arena_.reserve(static_cast<std::size_t>(grad_bytes), Purpose::gradients);
  state_arrays_ = plan_.optimizer_states;
  Arena::Id state_ids[2] = {0, 0};
  for (int i = 0; i < state_arrays_; ++i) state_ids[i] = arena_.reserve(param_bytes, Purpose::optimizer);

  arena_.allocate();

  input_.data = arena_.ptr(input_id);
  labels_ = arena_.as<std::int32_t>(labels_id);
  loss_rows_ = arena_.as<float>(loss_id);
  grad_buffers_.clear();
  for (const Arena::Id id : grad_ids) grad_buffers_.push_back(arena_.ptr(id));
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    outputs_[k].data = plan_.nodes[k].aliases_input() ? node_input(static_cast<int>(k)).data
                                                      : arena_.ptr(output_ids[k]);
  }
  for (int i = 0; i < state_arrays_; ++i) state_[i] = arena_.as<float>(state_ids[i]);
  const auto& eng = ctx_.engine;
  float* master = arena_.as<float>(master_id);
  std::byte* grads = arena_.ptr(grad_id);
  for (ParamSlot* slot : slots_) {
    slot->master = memory(slot->master_desc, eng, master + slot->offset);
    slot->grad = memory(slot->grad_desc, eng, grads + slot->grad_offset);
    slot->copy = slot->copy_mode == CopyMode::master
                     ? slot->master
                     : memory(slot->copy_desc, eng, arena_.ptr(slot->copy_id));
    if (slot->copy_mode == CopyMode::reorder) {
      slot->to_copy = DNNL_CHECK(dnnl::reorder(slot->master, slot->copy));
    }
    slot->backward_copy = slot->copy;
    if (!slot->backward_copy_desc.is_zero()) {
      slot->backward_copy =
          memory(slot->backward_copy_desc, eng, arena_.ptr(slot->backward_copy_id));
      slot->to_backward_copy = DNNL_CHECK(dnnl::reorder(slot->copy, slot->backward_copy));
    }
  }
  const memory scratchpad(memory::desc({static_cast<memory::dim>(scratchpad_bytes)},
                                       memory::data_type::u8, memory::format_tag::a),
                          eng, arena_.ptr(scratchpad_id));
  for (auto& node : nodes_) node->bind(arena_, scratchpad);
}

void CpuExecutor::initialise_parameters(std::uint64_t seed) {
  for (ParamSlot* slot : slots_) {
    if (slot->kind == ParamKind::gamma || slot->kind == ParamKind::moving_variance) {
      write_parameter(slot->layer, slot->kind,
                      std::vector<float>(static_cast<std::size_t>(keras_count(*slot)), 1.0f));
    }
    // Biases, beta and moving means start at zero (the arena is zeroed).
    if (!draws_initial_values(slot->kind)) continue;
    const auto values = initial_values(slot->kind, keras_count(*slot), slot->fan_in, slot->fan_out,
                                       kernel_init_seed(seed, slot->layer, slot->kind));
    write_parameter(slot->layer, slot->kind, values);
  }
  if (options_.initial_weights) {
    write_model_weights(*options_.initial_weights,
                        [this](int layer, ParamKind kind, std::span<const float> values) {
                          write_parameter(layer, kind, values);
                        });
    // Each FP8 matmul of the plan, in order (a MultiHeadAttention's four in turn).
    Fp8StateRestorer restorer(options_.initial_weights.get());
    for (std::size_t k = 0; k < nodes_.size(); ++k) {
      const PlanNode& node = plan_.nodes[k];
      if (node.fp8 && !nodes_[k]->restore_fp8(restorer)) restorer.skip(node.layer);
    }
    if (std::string note = restorer.note(); !note.empty()) notes_.push_back(std::move(note));
  }
  refresh_copies();
}

void CpuExecutor::refresh_copy(ParamSlot& slot, bool forward_copy) {
  if (forward_copy) {
    switch (slot.copy_mode) {
      case CopyMode::master:
        break;
      case CopyMode::elementwise:
        convert(slot.master.get_data_handle(), Storage::f32, slot.copy.get_data_handle(),
                slot.copy_storage, slot.count);
        break;
      case CopyMode::reorder:
        DNNL_CHECK(slot.to_copy.execute(ctx_.stream, slot.master, slot.copy));
        if (is_rounded(slot.copy_storage)) {
          round_inplace(slot.copy_storage, static_cast<float*>(slot.copy.get_data_handle()),
                        static_cast<std::int64_t>(slot.copy_desc.get_size() / sizeof(float)));
        }
        break;
    }
  }
  if (slot.to_backward_copy) {
    DNNL_CHECK(slot.to_backward_copy.execute(ctx_.stream, slot.copy, slot.backward_copy));
  }
}

void CpuExecutor::refresh_copies() {
  for (ParamSlot* slot : slots_) refresh_copy(*slot, true);
}

ParamSlot& CpuExecutor::slot(int layer, ParamKind kind) {
  for (ParamSlot* s : slots_) {
    if (s->layer == layer && s->kind == kind) return *s;
  }
  throw ConfigError("layer " + std::to_string(layer) + " has no " + std::string(to_string(kind)));
}

Tensor CpuExecutor::grad_view(int buffer, const Tensor& like) const {
  Tensor t;
  t.data = grad_buffers_[buffer];
  t.storage = like.storage;
  t.dims = like.dims;
  return t;
}

std::vector<float> CpuExecutor::to_host(const Tensor& t) const {
  std::vector<float> out(static_cast<std::size_t>(t.elements()));
  convert(t.data, t.storage, out.data(), Storage::f32, t.elements());
  return out;
}

void CpuExecutor::load_batch(std::span<const float> images, std::span<const std::int32_t> labels,
                             int n) {
  const std::int64_t per_sample = input_.elements() / batch_;
  if (n < 1 || n > batch_) {
    throw ConfigError("a batch of " + std::to_string(n) + " samples does not fit batch size " +
                      std::to_string(batch_));
  }
  const std::int64_t positions = plan_.positions;
  if (static_cast<std::int64_t>(images.size()) < n * per_sample ||
      static_cast<std::int64_t>(labels.size()) < n * positions) {
    throw ConfigError("batch buffers are smaller than " + std::to_string(n) + " samples");
  }
  const bool binary = plan_.loss == LossKind::binary_crossentropy;
  const std::int64_t label_limit = binary && plan_.classes == 1 ? 2 : plan_.classes;
  for (std::int64_t i = 0; i < n * positions; ++i) {
    const std::int32_t label = labels[static_cast<std::size_t>(i)];
    if (label < 0 || label >= label_limit) {
      throw ConfigError("label " + std::to_string(label) + " is outside the model's " +
                        std::to_string(label_limit) + " classes");
    }
  }
  float* dst = static_cast<float*>(input_.data);
  std::memcpy(dst, images.data(), static_cast<std::size_t>(n * per_sample) * sizeof(float));
  std::memset(dst + n * per_sample, 0,
              static_cast<std::size_t>((batch_ - n) * per_sample) * sizeof(float));
  std::memcpy(labels_, labels.data(),
              static_cast<std::size_t>(n * positions) * sizeof(std::int32_t));
  std::memset(labels_ + n * positions, 0,
              static_cast<std::size_t>((batch_ - n) * positions) * sizeof(std::int32_t));
  real_samples_ = n;
  ctx_.real_samples = n;
}

void CpuExecutor::load_batch_indices(std::span<const std::int64_t>, int) {
  throw ConfigError("the CPU backend keeps no dataset: load_batch_indices() without "
                    "upload_dataset()");
}

void CpuExecutor::set_loss_scaling(const LossScaleConfig& config) {
  scaling_ = config;
  scale_state_ = initial_loss_scale<double>(config);
}

void CpuExecutor::launch_step(Phase phase, std::uint64_t step) {
  if (step_done_) throw ConfigError("launch_step() again before finish_step()");
  if (real_samples_ < 1) throw ConfigError("launch_step() before a batch was loaded");
  use_threads();
  const bool timed = options_.layer_timing && phase == Phase::train;
  StepResult r;
  const auto t0 = Clock::now();
  run_forward(phase, step, timed);
  r.forward_ms = ms_since(t0);
  if (phase == Phase::eval) {
    r.batch = compute_loss(false, 1.0f);
  } else {
    const auto t1 = Clock::now();
    r.loss_scale = scale_state_.scale;
    r.batch = compute_loss(true, static_cast<float>(r.loss_scale));
    run_backward(timed);
    r.backward_ms = ms_since(t1);
    const auto t2 = Clock::now();
    const bool loss_finite = std::isfinite(r.batch.loss);
    if (scaling_.mode == LossScaleConfig::Mode::none) {
      // No scale to back off: update, checking the gradients in the same pass; the trainer
      // ends the run on a non-finite one.
      r.gradients_finite = loss_finite && apply_gradients(1.0f, iteration_ + 1);
      r.applied = update_loss_scale(scale_state_, scaling_, r.gradients_finite);
    } else {
      r.gradients_finite = loss_finite && gradients_finite();
      r.applied = update_loss_scale(scale_state_, scaling_, r.gradients_finite);
      if (r.applied) apply_gradients(static_cast<float>(1.0 / r.loss_scale), iteration_ + 1);
    }
    if (r.applied) ++iteration_;
    for (auto& node : nodes_) {
      node->end_training_step(r.applied);
      node->append_fp8_steps(r.fp8);
    }
    number_fp8_parts(r.fp8);
    if (!r.gradients_finite) r.overflows = layer_overflows();
    r.next_loss_scale = scale_state_.scale;
    r.optimizer_ms = ms_since(t2);
    if (timed) {
      layer_timings_.assign(plan_.layer_last_node.size(), LayerTiming{});
      for (std::size_t l = 0; l < layer_timings_.size(); ++l) {
        layer_timings_[l].layer = static_cast<int>(l);
      }
      for (std::size_t k = 0; k < nodes_.size(); ++k) {
        LayerTiming& t = layer_timings_[static_cast<std::size_t>(plan_.nodes[k].layer)];
        t.forward_ms += node_forward_ms_[k];
        t.backward_ms += node_backward_ms_[k];
      }
    }
  }
  if (phase == Phase::eval) r.loss_scale = r.next_loss_scale = scale_state_.scale;
  result_ = r;
  step_done_ = true;
}

StepResult CpuExecutor::finish_step() {
  if (!step_done_) throw ConfigError("finish_step() without launch_step()");
  step_done_ = false;
  return result_;
}

void CpuExecutor::run_forward(Phase phase, std::uint64_t step, bool timed) {
  std::vector<const Tensor*> xs;
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    node_forward_ms_[k] = 0.0;
    const PlanNode& node = plan_.nodes[k];
    if (node.aliases_input()) continue;
    const auto t = timed ? Clock::now() : Clock::time_point{};
    if (node.op == PlanOp::merge) {
      xs.clear();
      for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
      static_cast<const MergeNode&>(*nodes_[k]).forward_inputs(xs, outputs_[k]);
    } else if (node.op == PlanOp::attention) {
      xs.clear();
      for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
      static_cast<AttentionNode&>(*nodes_[k]).forward_inputs(xs, outputs_[k]);
    } else {
      nodes_[k]->forward(ctx_, node_input(static_cast<int>(k)), outputs_[k], phase, step);
    }
    if (timed) node_forward_ms_[k] = ms_since(t);
  }
}

BatchLoss CpuExecutor::compute_loss(bool compute_gradient, float loss_scale) {
  // Fused heads read the logits: the final activation's input.
  const int seed = plan_.loss_node;
  const Tensor& src = outputs_[static_cast<std::size_t>(seed)];
  const std::int64_t k = plan_.classes;
  // A row per label: a sample's, or each of its steps' (the loss is the mean over them all).
  const std::int64_t positions = plan_.positions;
  const std::int64_t rows = batch_ * positions;
  // The rows in float32: in a gradient buffer the seed does not use (free until backward), the
  // loss's gradient in the loss rows.
  const int seed_grad = plan_.nodes[static_cast<std::size_t>(seed)].grad;
  float* values = static_cast<float*>(grad_buffers_[seed_grad == 0 ? 1 : 0]);
  convert(src.data, src.storage, values, Storage::f32, rows * k);
  float* grads = compute_gradient ? loss_rows_ : nullptr;
  const std::int32_t* labels = labels_;
  const int n = real_samples_;
  const std::int64_t real_rows = n * positions;
  const float grad_mul = loss_scale / static_cast<float>(real_rows);
  const LossHead head = plan_.head;
  double loss_sum = 0.0, correct = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : loss_sum, correct)
  for (std::int64_t i = 0; i < rows; ++i) {
    float* dz = grads ? grads + i * k : nullptr;
    if (i >= real_rows) {
      if (dz) std::fill(dz, dz + k, 0.0f);
      continue;
    }
    const RowLoss r = loss_row(head, values + i * k, static_cast<int>(k), labels[i], grad_mul, dz);
    loss_sum += r.loss;
    correct += r.correct;
  }
  if (compute_gradient) {
    // A model without parameters takes no gradient (its nodes run no backward).
    if (seed_grad >= 0) {
      const Tensor dst = grad_view(seed_grad, outputs_[static_cast<std::size_t>(seed)]);
      convert(grads, Storage::f32, dst.data, dst.storage, dst.elements());
    }
    backward_from_ = seed;
  }
  BatchLoss result;
  result.loss = loss_sum / static_cast<double>(real_rows);
  // Per sample: the fraction of its steps predicted right (a sample's accuracy for one label).
  result.correct = correct / static_cast<double>(positions);
  result.samples = n;
  return result;
}

void CpuExecutor::run_backward(bool timed) {
  if (backward_from_ < 0) throw ConfigError("backward() without a seeded output gradient");
  for (std::size_t k = 0; k < nodes_.size(); ++k) node_backward_ms_[k] = 0.0;
  std::vector<const Tensor*> xs;
  for (int k = backward_from_; k >= 0; --k) {
    const PlanNode& node = plan_.nodes[static_cast<std::size_t>(k)];
    if (!node.backward) continue;
    const Tensor dy = grad_view(node.grad, outputs_[static_cast<std::size_t>(k)]);
    const auto t = timed ? Clock::now() : Clock::time_point{};
    xs.clear();
    for (const PlanInput& in : node.inputs) xs.push_back(&tensor(in.node));
    if (node.aliases_input()) {
      // The same values seen with the input's shape: nothing to compute unless the input's
      // gradient buffer is another one (copied) or holds an earlier reader's (added).
      const PlanInput& in = node.inputs.front();
      const int target = in.node == kPlanInput
                             ? plan_.input_grad
                             : plan_.nodes[static_cast<std::size_t>(in.node)].grad;
      if (in.grad && (in.accumulate || target != node.grad)) {
        Tensor src = dy;
        src.dims = xs.front()->dims;
        const Tensor dst = grad_view(target, *xs.front());
        if (in.accumulate) {
          accumulate(src, dst);
        } else {
          convert(src.data, src.storage, dst.data, dst.storage, dst.elements());
        }
      }
    } else if (node.op == PlanOp::merge || node.op == PlanOp::attention) {
      for (std::size_t i = 0; i < node.inputs.size(); ++i) {
        if (node.inputs[i].grad)
          input_gradient(k, static_cast<int>(i), dy, xs.data(), static_cast<int>(xs.size()));
      }
    } else {
      input_gradient(k, 0, dy, xs.data(), 1);
    }
    if (timed) node_backward_ms_[static_cast<std::size_t>(k)] = ms_since(t);
  }
  if (options_.input_gradient && plan_.input_grad >= 0) {
    input_gradient_ = grad_view(plan_.input_grad, input_);
  }
  backward_from_ = -1;
}

void CpuExecutor::input_gradient(int k, int i, const Tensor& dy, const Tensor* const* xs,
                                 int count) {
  const PlanNode& node = plan_.nodes[static_cast<std::size_t>(k)];
  const PlanInput& in = node.inputs[static_cast<std::size_t>(i)];
  const Tensor& x = *xs[i];
  const Tensor& y = outputs_[static_cast<std::size_t>(k)];
  Tensor dx, target;
  if (in.grad) {
    const int buffer = in.node == kPlanInput ? plan_.input_grad
                                             : plan_.nodes[static_cast<std::size_t>(in.node)].grad;
    target = grad_view(buffer, x);
    dx = in.accumulate ? grad_view(plan_.grad_scratch, x) : target;
  }
  if (node.op == PlanOp::merge) {
    static_cast<const MergeNode&>(*nodes_[static_cast<std::size_t>(k)])
        .backward_input(std::span<const Tensor* const>(xs, static_cast<std::size_t>(count)), y, dy,
                        i, dx);
  } else if (node.op == PlanOp::attention) {
    // Input 0's call computes all three gradients: the plan gives each its own buffer (the
    // projections have no other reader).
    if (!in.grad || in.accumulate) {
      throw BackendError(node.label + ": its projections' gradients must have their own buffers");
    }
    static_cast<AttentionNode&>(*nodes_[static_cast<std::size_t>(k)])
        .backward_input(std::span<const Tensor* const>(xs, static_cast<std::size_t>(count)), dy, i,
                        dx);
  } else {
    nodes_[static_cast<std::size_t>(k)]->backward(ctx_, x, y, dy, in.grad ? &dx : nullptr);
  }
  if (in.grad && in.accumulate) accumulate(dx, target);
}

bool CpuExecutor::gradients_finite() const {
  for (const ParamSlot* slot : slots_) {
    if (!is_trainable(slot->kind)) continue;
    if (!all_finite(slot->grad.get_data_handle(), slot->grad_storage, slot->count)) return false;
  }
  return true;
}

std::vector<LayerOverflow> CpuExecutor::layer_overflows() const {
  std::vector<LayerOverflow> out;
  for (const ParamSlot* slot : slots_) {
    if (!is_trainable(slot->kind)) continue;
    if (out.empty() || out.back().layer != slot->layer) {
      // Slots come in layer order, a layer's together; a layer seen again merges below.
      out.push_back({slot->layer, 0, 0});
    }
    out.back().nonfinite +=
        count_nonfinite(slot->grad.get_data_handle(), slot->grad_storage, slot->count);
    // Keras's count (master_desc's may include a blocked layout's padding, which stays zero).
    out.back().values += static_cast<std::int64_t>(slot->keras_desc.get_size() / sizeof(float));
  }
  return merge_layer_overflows(std::move(out));
}

bool CpuExecutor::apply_gradients(float grad_scale, std::int64_t iteration) {
  bool finite = true;
  for (ParamSlot* slot : slots_) {
    if (!is_trainable(slot->kind)) continue;  // moving statistics: the layer updates them
    SlotArrays p;
    p.master = static_cast<float*>(slot->master.get_data_handle());
    p.grad = slot->grad.get_data_handle();
    p.grad_storage = slot->grad_storage;
    p.state0 = state_arrays_ > 0 ? state_[0] + slot->offset : nullptr;
    p.state1 = state_arrays_ > 1 ? state_[1] + slot->offset : nullptr;
    if (slot->copy_mode == CopyMode::elementwise) {  // written by the update loop itself
      p.copy = slot->copy.get_data_handle();
      p.copy_storage = slot->copy_storage;
    }
    p.n = slot->count;
    finite &= apply_update(options_.optimizer, p, grad_scale, iteration);
    refresh_copy(*slot, slot->copy_mode == CopyMode::reorder);
  }
  return finite;
}

// --- OpAccess ---

void CpuExecutor::forward(Phase phase, std::uint64_t step) {
  use_threads();
  run_forward(phase, step, false);
}

void CpuExecutor::set_output_gradient(std::span<const float> dy) {
  const Tensor& out = outputs_.back();
  if (static_cast<std::int64_t>(dy.size()) != out.elements()) {
    throw ConfigError("output gradient has " + std::to_string(dy.size()) + " values, expected " +
                      std::to_string(out.elements()));
  }
  if (plan_.nodes.back().grad < 0) {
    throw ConfigError(
        "set_output_gradient(): nothing in this model takes a gradient (no "
        "parameters, and ExecutorOptions::input_gradient is off)");
  }
  const Tensor dst = grad_view(plan_.nodes.back().grad, out);
  convert(dy.data(), Storage::f32, dst.data, dst.storage, dst.elements());
  backward_from_ = plan_.output_node;
}

void CpuExecutor::backward() {
  use_threads();
  run_backward(false);
}

std::vector<float> CpuExecutor::read_output() {
  return to_host(outputs_.back());
}

std::vector<float> CpuExecutor::read_activation(int layer) {
  if (layer < 0 || layer >= static_cast<int>(plan_.layer_last_node.size())) {
    throw ConfigError("no layer " + std::to_string(layer));
  }
  return to_host(outputs_[static_cast<std::size_t>(plan_.layer_last_node[static_cast<std::size_t>(layer)])]);
}

std::vector<float> CpuExecutor::read_input_gradient() {
  if (!options_.input_gradient || !input_gradient_.data) {
    throw ConfigError("the input gradient was not computed (ExecutorOptions::input_gradient)");
  }
  return to_host(input_gradient_);
}

std::vector<float> CpuExecutor::read_parameter(int layer, ParamKind kind) {
  ParamSlot& s = slot(layer, kind);
  return to_keras_layout(s, s.master);
}

std::vector<float> CpuExecutor::read_gradient(int layer, ParamKind kind) {
  ParamSlot& s = slot(layer, kind);
  return to_keras_layout(s, s.grad);
}

std::vector<float> CpuExecutor::to_keras_layout(const ParamSlot& slot, memory from) {
  std::vector<float> out(static_cast<std::size_t>(keras_count(slot)));
  memory keras(slot.keras_desc, ctx_.engine, out.data());
  DNNL_CHECK(dnnl::reorder(from, keras).execute(ctx_.stream, from, keras));
  return out;
}

void CpuExecutor::write_parameter(int layer, ParamKind kind, std::span<const float> values) {
  ParamSlot& s = slot(layer, kind);
  if (static_cast<std::int64_t>(values.size()) != keras_count(s)) {
    throw ConfigError("layer " + std::to_string(layer) + " " + std::string(to_string(kind)) +
                      " has " + std::to_string(keras_count(s)) + " values, got " +
                      std::to_string(values.size()));
  }
  memory keras(s.keras_desc, ctx_.engine, const_cast<float*>(values.data()));
  DNNL_CHECK(dnnl::reorder(keras, s.master).execute(ctx_.stream, keras, s.master));
  refresh_copy(s, true);
}

}  // namespace mixlab::cpu
