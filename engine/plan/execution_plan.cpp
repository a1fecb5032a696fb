#include "engine/plan/execution_plan.h"

#include <algorithm>

#include "engine/core/error.h"

namespace mixlab {

std::string_view to_string(MemoryPurpose purpose) {
  switch (purpose) {
    case MemoryPurpose::parameters:
      return "parameters";
    case MemoryPurpose::weight_copies:
      return "weight copies";
    case MemoryPurpose::gradients:
      return "gradients";
    case MemoryPurpose::optimizer:
      return "optimizer state";
    case MemoryPurpose::activations:
      return "activations";
    case MemoryPurpose::workspace:
      return "workspace";
  }
  return "?";
}

void MemoryPlan::add(MemoryPurpose purpose, std::int64_t n) {
  switch (purpose) {
    case MemoryPurpose::parameters:
      parameter_bytes += n;
      return;
    case MemoryPurpose::weight_copies:
      weight_copy_bytes += n;
      return;
    case MemoryPurpose::gradients:
      gradient_bytes += n;
      return;
    case MemoryPurpose::optimizer:
      optimizer_bytes += n;
      return;
    case MemoryPurpose::activations:
      activation_bytes += n;
      return;
    case MemoryPurpose::workspace:
      workspace_bytes += n;
      return;
  }
}

std::int64_t MemoryPlan::bytes(MemoryPurpose purpose) const {
  switch (purpose) {
    case MemoryPurpose::parameters:
      return parameter_bytes;
    case MemoryPurpose::weight_copies:
      return weight_copy_bytes;
    case MemoryPurpose::gradients:
      return gradient_bytes;
    case MemoryPurpose::optimizer:
      return optimizer_bytes;
    case MemoryPurpose::activations:
      return activation_bytes;
    case MemoryPurpose::workspace:
      return workspace_bytes;
  }
  return 0;
}

std::string_view to_string(PlanOp op) {
  switch (op) {
    case PlanOp::dense:
      return "dense";
    case PlanOp::conv2d:
      return "conv2d";
    case PlanOp::pooling:
      return "pooling";
    case PlanOp::flatten:
      return "flatten";
    case PlanOp::cast:
      return "cast";
    case PlanOp::activation:
      return "activation";
    case PlanOp::rescaling:
      return "rescaling";
    case PlanOp::dropout:
      return "dropout";
  }
  return "?";
}

std::string PlanBuffer::name() const {
  const std::string i = std::to_string(index);
  switch (role) {
    case BufferRole::input:
      return "input";
    case BufferRole::labels:
      return "labels";
    case BufferRole::node_output:
      return "output of node " + i;
    case BufferRole::activation_gradient:
      return "activation gradient " + i;
    case BufferRole::loss_rows:
      return "loss rows";
    case BufferRole::masters:
      return "float32 masters";
    case BufferRole::parameter_gradients:
      return "parameter gradients";
    case BufferRole::weight_copies:
      return "16-bit weight copies";
    case BufferRole::optimizer_state:
      return "optimizer state " + i;
  }
  return "?";
}

MemoryPlan ExecutionPlan::memory() const {
  MemoryPlan m;
  for (const PlanBuffer& b : buffers) m.add(b.purpose, b.bytes());
  return m;
}

std::int64_t ExecutionPlan::in_elements(int node) const {
  return batch * num_elements(nodes.at(static_cast<std::size_t>(node)).in_shape);
}

std::int64_t ExecutionPlan::out_elements(int node) const {
  return batch * num_elements(nodes.at(static_cast<std::size_t>(node)).out_shape);
}

namespace {

std::string layer_label(const ModelSpec& spec, int layer) {
  return "layer " + std::to_string(layer) + " (" +
         std::string(to_string(spec.layers.at(static_cast<std::size_t>(layer)).type)) + ")";
}

// Lowers layer by layer, tracking the dtype the running tensor is in.
class Lowering {
 public:
  Lowering(const ModelSpec& spec, const ShapeTable& table, const LoweringRules& rules,
           ExecutionPlan& plan)
      : spec_(spec), table_(table), rules_(rules), plan_(plan), shape_(table.input_shape) {}

  void layer(int li) {
    const LayerSpec& layer = spec_.layers[static_cast<std::size_t>(li)];
    const LayerInfo& info = table_.layers[static_cast<std::size_t>(li)];
    const DType s = info.compute;
    const Shape& out = info.output_shape;
    const std::string label = layer_label(spec_, li);
    const bool elementwise_cast = rules_.elementwise_same_dtype;
    switch (layer.type) {
      case LayerType::Dense: {
        cast_to(s, li, label);
        const bool fused = rules_.dense_fuses_relu && layer.activation == ActivationFn::relu;
        PlanNode& dense = add(PlanOp::dense, li, s, out, label);
        if (fused) dense.activation = ActivationFn::relu;
        add_slots(info, li);
        if (layer.activation != ActivationFn::linear && !fused) {
          add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        }
        break;
      }
      case LayerType::Conv2D:
        cast_to(s, li, label);
        add(PlanOp::conv2d, li, s, out, label);
        add_slots(info, li);
        if (layer.activation != ActivationFn::linear) {
          add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        }
        break;
      case LayerType::MaxPooling2D:
      case LayerType::AveragePooling2D:
        cast_to(s, li, label);
        add(PlanOp::pooling, li, s, out, label);
        break;
      case LayerType::Flatten:
        add(dtype_ != s ? PlanOp::cast : PlanOp::flatten, li, s, out, label);
        break;
      case LayerType::Dropout:
        if (elementwise_cast) cast_to(s, li, label);
        add(PlanOp::dropout, li, s, out, label);
        break;
      case LayerType::Activation:
        if (elementwise_cast) cast_to(s, li, label);
        add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        break;
      case LayerType::Rescaling:
        if (elementwise_cast) cast_to(s, li, label);
        add(PlanOp::rescaling, li, s, out, label);
        break;
    }
    plan_.layer_last_node[static_cast<std::size_t>(li)] = static_cast<int>(plan_.nodes.size()) - 1;
  }

 private:
  PlanNode& add(PlanOp op, int li, DType out_dtype, const Shape& out_shape, std::string label) {
    PlanNode n;
    n.op = op;
    n.layer = li;
    n.in_dtype = dtype_;
    n.out_dtype = out_dtype;
    n.in_shape = shape_;
    n.out_shape = out_shape;
    n.label = std::move(label);
    dtype_ = out_dtype;
    shape_ = out_shape;
    plan_.nodes.push_back(std::move(n));
    return plan_.nodes.back();
  }

  void cast_to(DType to, int li, const std::string& label) {
    if (dtype_ != to) add(PlanOp::cast, li, to, shape_, label + " cast");
  }

  // The kernel's glorot_uniform fans, as Keras computes them: Dense (in, units); Conv2D the
  // receptive field times the input and output channels.
  void add_slots(const LayerInfo& info, int li) {
    PlanNode& node = plan_.nodes.back();
    const int node_index = static_cast<int>(plan_.nodes.size()) - 1;
    for (const ParamGroup& group : info.params) {
      PlanSlot slot;
      slot.layer = li;
      slot.node = node_index;
      slot.kind = group.kind;
      slot.keras_shape = group.shape;
      slot.count = group.count();
      slot.compute = info.compute;
      if (group.kind == ParamKind::kernel) {
        const Shape& k = group.shape;
        std::int64_t receptive = 1;
        for (std::size_t d = 0; d + 2 < k.size(); ++d) receptive *= k[d];
        slot.fan_in = receptive * k[k.size() - 2];
        slot.fan_out = receptive * k.back();
      }
      node.params.push_back(static_cast<int>(plan_.params.size()));
      plan_.params.push_back(std::move(slot));
    }
  }

  const ModelSpec& spec_;
  const ShapeTable& table_;
  const LoweringRules& rules_;
  ExecutionPlan& plan_;
  DType dtype_ = DType::f32;  // the batch arrives as float32
  Shape shape_;
};

LossHead head_of(const ExecutionPlan& plan, LossKind loss) {
  const bool binary = loss == LossKind::binary_crossentropy;
  if (plan.nodes.size() >= 2) {
    const PlanNode& last = plan.nodes.back();
    if (last.op == PlanOp::activation) {
      if (last.activation == ActivationFn::softmax && !binary) {
        return LossHead::softmax_crossentropy;
      }
      if (last.activation == ActivationFn::sigmoid && binary) return LossHead::sigmoid_binary;
    }
  }
  return binary ? LossHead::binary_probabilities : LossHead::crossentropy_probabilities;
}

}  // namespace

ExecutionPlan build_plan(const ModelSpec& spec, const ShapeTable& table, int batch,
                         const OptimizerConfig& optimizer, const LoweringRules& rules) {
  if (batch < 1) throw ConfigError("batch size must be at least 1, got " + std::to_string(batch));
  if (spec.layers.size() != table.layers.size()) {
    throw ConfigError("the shape table does not belong to model " + quote(spec.name));
  }
  ExecutionPlan plan;
  plan.policy = table.policy;
  plan.batch = batch;
  plan.loss = spec.loss;
  plan.input_shape = table.input_shape;
  plan.classes = num_elements(table.output_shape);
  plan.layer_last_node.resize(spec.layers.size());
  Lowering lowering(spec, table, rules, plan);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) lowering.layer(static_cast<int>(i));
  plan.head = head_of(plan, spec.loss);
  for (std::size_t k = 0; k < plan.nodes.size(); ++k) {
    if (!plan.nodes[k].params.empty()) {
      plan.first_param_node = static_cast<int>(k);
      break;
    }
  }
  for (PlanSlot& slot : plan.params) {
    slot.offset = plan.param_floats;
    plan.param_floats += (slot.count + kSlotAlignFloats - 1) / kSlotAlignFloats * kSlotAlignFloats;
  }
  plan.optimizer_states = optimizer_state_per_param(optimizer);
  plan.copy_dtype = compute_dtype(plan.policy);

  // The buffers.
  using P = MemoryPurpose;
  using R = BufferRole;
  const auto add = [&plan](R role, int index, P purpose, std::int64_t elements,
                           std::int64_t element_bytes) {
    plan.buffers.push_back({role, index, purpose, elements, element_bytes});
  };
  constexpr std::int64_t f32 = sizeof(float);
  const std::int64_t input_elements = batch * num_elements(table.input_shape);
  add(R::input, 0, P::activations, input_elements, f32);
  add(R::labels, 0, P::workspace, batch, sizeof(std::int32_t));
  plan.max_tensor_elements = input_elements;
  for (std::size_t k = 0; k < plan.nodes.size(); ++k) {
    const PlanNode& node = plan.nodes[k];
    const std::int64_t elements = plan.out_elements(static_cast<int>(k));
    plan.max_tensor_elements = std::max(plan.max_tensor_elements, elements);
    if (node.aliases_input()) continue;
    add(R::node_output, static_cast<int>(k), P::activations, elements,
        static_cast<std::int64_t>(dtype_bytes(node.out_dtype)));
  }
  for (int i = 0; i < 2; ++i) {
    add(R::activation_gradient, i, P::workspace, plan.max_tensor_elements, f32);
  }
  add(R::loss_rows, 0, P::workspace, batch * plan.classes, f32);
  if (plan.param_floats > 0) {
    add(R::masters, 0, P::parameters, plan.param_floats, f32);
    add(R::parameter_gradients, 0, P::gradients, plan.param_floats, f32);
    if (plan.copy_dtype != DType::f32) {
      add(R::weight_copies, 0, P::weight_copies, plan.param_floats,
          static_cast<std::int64_t>(dtype_bytes(plan.copy_dtype)));
    }
    for (int i = 0; i < plan.optimizer_states; ++i) {
      add(R::optimizer_state, i, P::optimizer, plan.param_floats, f32);
    }
  }
  return plan;
}

ExecutionPlan build_plan(const ModelSpec& spec, const ShapeTable& table, Policy policy, int batch,
                         const OptimizerConfig& optimizer, const LoweringRules& rules) {
  if (table.policy != policy) {
    throw ConfigError("the shape table of model " + quote(spec.name) + " was inferred under " +
                      std::string(to_string(table.policy)) + ", not " +
                      std::string(to_string(policy)));
  }
  return build_plan(spec, table, batch, optimizer, rules);
}

}  // namespace mixlab
