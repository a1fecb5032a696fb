#include "engine/backend/cpu/cpu_executor.h"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "engine/backend/cpu/conv2d.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/dense.h"
#include "engine/backend/cpu/dnnl_check.h"
#include "engine/backend/cpu/elementwise.h"
#include "engine/backend/cpu/optimizer_loops.h"
#include "engine/backend/cpu/pooling.h"
#include "engine/ops/dropout.h"
#include "engine/ops/initializers.h"
#include "engine/ops/loss.h"

namespace mixlab::cpu {

namespace {

using dnnl::memory;

std::int64_t keras_count(const ParamSlot& slot) {
  std::int64_t n = 1;
  for (auto d : slot.keras_desc.dims()) n *= d;
  return n;
}

std::string layer_name(const ModelSpec& spec, int layer) {
  return "layer " + std::to_string(layer) + " (" +
         std::string(to_string(spec.layers.at(static_cast<std::size_t>(layer)).type)) + ")";
}

}  // namespace

CpuExecutor::CpuExecutor(const ModelSpec& spec, const ShapeTable& table,
                         const ExecutorOptions& options, int threads)
    : options_(options), threads_(threads), batch_(options.batch_size), loss_kind_(spec.loss) {
  if (batch_ < 1) throw ConfigError("batch size must be at least 1, got " + std::to_string(batch_));
  if (spec.layers.size() != table.layers.size()) {
    throw ConfigError("the shape table does not belong to model '" + spec.name + "'");
  }
  use_threads();
  ctx_.seed = options.seed;
  lower(spec, table);
  plan_and_allocate();
  initialise_parameters(options.seed);
}

CpuExecutor::~CpuExecutor() = default;

void CpuExecutor::use_threads() const {
  if (threads_ > 0) omp_set_num_threads(threads_);
}

void CpuExecutor::lower(const ModelSpec& spec, const ShapeTable& table) {
  Storage cur = Storage::f32;  // the batch arrives as float32
  Shape cur_shape = table.input_shape;
  const auto batch_dims = [&](const Shape& s) {
    std::vector<std::int64_t> d{batch_};
    d.insert(d.end(), s.begin(), s.end());
    return d;
  };
  const auto add = [&](std::unique_ptr<CpuNode> node, const Shape& out_shape) {
    Tensor t;
    t.storage = node->out_storage;
    t.dims = batch_dims(out_shape);
    outputs_.push_back(std::move(t));
    cur = node->out_storage;
    nodes_.push_back(std::move(node));
  };
  const auto cast_to = [&](Storage s, int layer) {
    if (cur != s) add(std::make_unique<CastNode>(layer, s), cur_shape);
  };

  // Below AVX-512 oneDNN has no bfloat16 kernels: bfloat16 layers then compute in float32 and
  // round every value they write to bfloat16, as float16 is emulated everywhere.
  const bool bf16_kernels = has_bf16_kernels(onednn_isa());
  input_.storage = Storage::f32;
  input_.dims = batch_dims(table.input_shape);
  layer_last_node_.resize(spec.layers.size());
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const LayerSpec& layer = spec.layers[i];
    const LayerInfo& info = table.layers[i];
    const int li = static_cast<int>(i);
    const Storage s = storage_for(info.compute, bf16_kernels);
    const Shape& out = info.output_shape;
    // An activation (a layer of its own, or fused into Dense / Conv2D) over the layer's output.
    const auto activation = [&](ActivationFn fn) {
      return std::make_unique<ActivationNode>(li, fn, out.back(), batch_ * num_elements(out), s);
    };
    try {
      switch (layer.type) {
        case LayerType::Dense: {
          cast_to(s, li);
          const std::int64_t rows =
              batch_ * num_elements(info.input_shape) / info.input_shape.back();
          add(std::make_unique<DenseNode>(ctx_, layer, li, rows, info.input_shape.back(),
                                          out.back(), s),
              out);
          if (layer.activation != ActivationFn::linear) add(activation(layer.activation), out);
          break;
        }
        case LayerType::Conv2D:
          cast_to(s, li);
          add(std::make_unique<Conv2DNode>(ctx_, layer, info, batch_, s), out);
          if (layer.activation != ActivationFn::linear) add(activation(layer.activation), out);
          break;
        case LayerType::MaxPooling2D:
        case LayerType::AveragePooling2D:
          cast_to(s, li);
          add(std::make_unique<PoolingNode>(ctx_, layer, info, batch_, s), out);
          break;
        case LayerType::Flatten:
          if (cur != s) {
            add(std::make_unique<CastNode>(li, s), out);
          } else {
            add(std::make_unique<FlattenNode>(li, s), out);
          }
          break;
        case LayerType::Dropout:
          add(std::make_unique<DropoutNode>(li, layer.rate, s), out);
          break;
        case LayerType::Activation:
          add(activation(layer.activation), out);
          break;
        case LayerType::Rescaling:
          add(std::make_unique<RescalingNode>(li, layer.scale, layer.offset, s), out);
          break;
      }
    } catch (const BackendError& e) {
      throw BackendError(layer_name(spec, li) + ": " + e.what());
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

void CpuExecutor::plan_and_allocate() {
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
  // Two gradient buffers, used in turn, each as large as the largest tensor in float32.
  const auto grad_buffer_bytes = static_cast<std::size_t>(max_elements) * sizeof(float);
  for (auto& id : grad_ids_) {
    id = arena_.reserve(grad_buffer_bytes, Purpose::workspace);
  }
  const auto loss_bytes = static_cast<std::size_t>(batch_ * classes_) * sizeof(float);
  loss_values_id_ = arena_.reserve(loss_bytes, Purpose::workspace);
  loss_grads_id_ = arena_.reserve(loss_bytes, Purpose::workspace);

  std::size_t scratchpad_bytes = 1;
  for (auto& node : nodes_) scratchpad_bytes = std::max(scratchpad_bytes, node->reserve(arena_));
  scratchpad_id_ = arena_.reserve(scratchpad_bytes, Purpose::workspace);

  std::int64_t grad_bytes = 0;
  for (auto& node : nodes_) {
    for (ParamSlot* slot : node->params()) {
      slot->count = static_cast<std::int64_t>(slot->master_desc.get_size() / sizeof(float));
      slot->offset = param_floats_;
      param_floats_ += (slot->count + 15) / 16 * 16;  // 64-byte aligned slots
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
  master_id_ = arena_.reserve(param_bytes, Purpose::parameters);
  grad_id_ = arena_.reserve(static_cast<std::size_t>(grad_bytes), Purpose::gradients);
  state_arrays_ = optimizer_state_per_param(options_.optimizer);
  for (int i = 0; i < state_arrays_; ++i) {
    state_ids_[i] = arena_.reserve(param_bytes, Purpose::optimizer);
  }

  arena_.allocate();

  input_.data = arena_.ptr(input_id_);
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    outputs_[k].data = nodes_[k]->aliases_input() ? node_input(static_cast<int>(k)).data
                                                  : arena_.ptr(output_ids_[k]);
  }
  const auto& eng = ctx_.engine;
  float* master = arena_.as<float>(master_id_);
  std::byte* grads = arena_.ptr(grad_id_);
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
                          eng, arena_.ptr(scratchpad_id_));
  for (auto& node : nodes_) node->bind(arena_, scratchpad);
}

void CpuExecutor::initialise_parameters(std::uint64_t seed) {
  for (ParamSlot* slot : slots_) {
    if (slot->kind != ParamKind::kernel) continue;  // biases start at zero (the arena is zeroed)
    const auto values = glorot_uniform(keras_count(*slot), slot->fan_in, slot->fan_out,
                                       kernel_init_seed(seed, slot->layer));
    write_parameter(slot->layer, slot->kind, values);
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
  t.data = arena_.ptr(grad_ids_[buffer]);
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
  if (static_cast<std::int64_t>(images.size()) < n * per_sample ||
      static_cast<std::int64_t>(labels.size()) < n) {
    throw ConfigError("batch buffers are smaller than " + std::to_string(n) + " samples");
  }
  const bool binary = loss_kind_ == LossKind::binary_crossentropy;
  const std::int64_t label_limit = binary && classes_ == 1 ? 2 : classes_;
  for (int i = 0; i < n; ++i) {
    if (labels[static_cast<std::size_t>(i)] < 0 ||
        labels[static_cast<std::size_t>(i)] >= label_limit) {
      throw ConfigError("label " + std::to_string(labels[static_cast<std::size_t>(i)]) +
                        " is outside the model's " + std::to_string(label_limit) + " classes");
    }
  }
  float* dst = static_cast<float*>(input_.data);
  std::memcpy(dst, images.data(), static_cast<std::size_t>(n * per_sample) * sizeof(float));
  std::memset(dst + n * per_sample, 0,
              static_cast<std::size_t>((batch_ - n) * per_sample) * sizeof(float));
  auto* lab = arena_.as<std::int32_t>(labels_id_);
  std::memcpy(lab, labels.data(), static_cast<std::size_t>(n) * sizeof(std::int32_t));
  std::memset(lab + n, 0, static_cast<std::size_t>(batch_ - n) * sizeof(std::int32_t));
  real_samples_ = n;
}

void CpuExecutor::forward(Phase phase, std::uint64_t step) {
  use_threads();
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    if (nodes_[k]->aliases_input()) continue;
    nodes_[k]->forward(ctx_, node_input(static_cast<int>(k)), outputs_[k], phase, step);
  }
}

BatchLoss CpuExecutor::loss(bool compute_gradient, float loss_scale) {
  use_threads();
  if (real_samples_ < 1) throw ConfigError("loss() before a batch was loaded");
  const int last = static_cast<int>(nodes_.size()) - 1;
  const Tensor& src = head_ == Head::probabilities ? outputs_[last] : node_input(last);
  const std::int64_t k = classes_;
  float* values = arena_.as<float>(loss_values_id_);
  convert(src.data, src.storage, values, Storage::f32, batch_ * k);
  float* grads = compute_gradient ? arena_.as<float>(loss_grads_id_) : nullptr;
  const std::int32_t* labels = arena_.as<std::int32_t>(labels_id_);
  const int n = real_samples_;
  const float grad_mul = loss_scale / static_cast<float>(n);
  const bool binary = loss_kind_ == LossKind::binary_crossentropy;
  const Head head = head_;
  double loss_sum = 0.0, correct = 0.0;
#pragma omp parallel for schedule(static) reduction(+ : loss_sum, correct)
  for (int i = 0; i < batch_; ++i) {
    float* dz = grads ? grads + i * k : nullptr;
    if (i >= n) {
      if (dz) std::fill(dz, dz + k, 0.0f);
      continue;
    }
    const float* row = values + i * k;
    const int kk = static_cast<int>(k);
    RowLoss r;
    if (head == Head::softmax_logits) {
      r = softmax_crossentropy_row(row, kk, labels[i], grad_mul, dz);
    } else if (head == Head::sigmoid_logits) {
      r = sigmoid_binary_crossentropy_row(row, kk, labels[i], grad_mul, dz);
    } else if (binary) {
      r = binary_crossentropy_probabilities_row(row, kk, labels[i], grad_mul, dz);
    } else {
      r = crossentropy_probabilities_row(row, kk, labels[i], grad_mul, dz);
    }
    loss_sum += r.loss;
    correct += r.correct;
  }
  if (compute_gradient) {
    const int seed = head_ == Head::probabilities ? last : last - 1;
    const Tensor dst = grad_view(0, outputs_[seed]);
    convert(grads, Storage::f32, dst.data, dst.storage, dst.elements());
    backward_from_ = seed;
  }
  BatchLoss result;
  result.loss = loss_sum / n;
  result.correct = correct;
  result.samples = n;
  return result;
}

void CpuExecutor::set_output_gradient(std::span<const float> dy) {
  const Tensor& out = outputs_.back();
  if (static_cast<std::int64_t>(dy.size()) != out.elements()) {
    throw ConfigError("output gradient has " + std::to_string(dy.size()) + " values, expected " +
                      std::to_string(out.elements()));
  }
  const Tensor dst = grad_view(0, out);
  convert(dy.data(), Storage::f32, dst.data, dst.storage, dst.elements());
  backward_from_ = static_cast<int>(nodes_.size()) - 1;
}

void CpuExecutor::backward() {
  use_threads();
  if (backward_from_ < 0) throw ConfigError("backward() without a seeded output gradient");
  const int stop = options_.input_gradient ? 0 : first_param_node_;
  int buffer = 0;
  Tensor dy = grad_view(0, outputs_[backward_from_]);
  for (int k = backward_from_; stop >= 0 && k >= stop; --k) {
    const Tensor& x = node_input(k);
    const bool need_dx = k > stop || options_.input_gradient;
    if (nodes_[k]->aliases_input()) {
      dy.dims = x.dims;  // same buffer, seen with the input's shape
      continue;
    }
    Tensor dx;
    if (need_dx) dx = grad_view(1 - buffer, x);
    nodes_[k]->backward(ctx_, x, outputs_[k], dy, need_dx ? &dx : nullptr);
    if (need_dx) {
      dy = dx;
      buffer = 1 - buffer;
    }
  }
  if (options_.input_gradient) input_gradient_ = dy;
  backward_from_ = -1;
}

bool CpuExecutor::gradients_finite() {
  use_threads();
  for (const ParamSlot* slot : slots_) {
    if (!all_finite(slot->grad.get_data_handle(), slot->grad_storage, slot->count)) return false;
  }
  return true;
}

bool CpuExecutor::apply_gradients(float grad_scale, std::int64_t iteration) {
  use_threads();
  bool finite = true;
  for (ParamSlot* slot : slots_) {
    SlotArrays p;
    p.master = static_cast<float*>(slot->master.get_data_handle());
    p.grad = slot->grad.get_data_handle();
    p.grad_storage = slot->grad_storage;
    p.state0 = state_arrays_ > 0 ? arena_.as<float>(state_ids_[0]) + slot->offset : nullptr;
    p.state1 = state_arrays_ > 1 ? arena_.as<float>(state_ids_[1]) + slot->offset : nullptr;
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

std::vector<float> CpuExecutor::read_output() {
  return to_host(outputs_.back());
}

std::vector<float> CpuExecutor::read_activation(int layer) {
  if (layer < 0 || layer >= static_cast<int>(layer_last_node_.size())) {
    throw ConfigError("no layer " + std::to_string(layer));
  }
  return to_host(outputs_[layer_last_node_[layer]]);
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
