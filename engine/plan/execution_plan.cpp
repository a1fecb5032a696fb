#include "engine/plan/execution_plan.h"

#include <algorithm>
#include <cmath>

#include "engine/core/error.h"
#include "engine/core/round_dtype.h"
#include "engine/spec/model_graph.h"

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
    case PlanOp::merge:
      return "merge";
    case PlanOp::batch_norm:
      return "batch_norm";
    case PlanOp::zero_padding:
      return "zero_padding";
    case PlanOp::normalization:
      return "normalization";
    case PlanOp::embedding:
      return "embedding";
    case PlanOp::layer_norm:
      return "layer_norm";
    case PlanOp::position_embedding:
      return "position_embedding";
    case PlanOp::attention:
      return "attention";
  }
  return "?";
}

std::string_view to_string(MergeOp op) {
  switch (op) {
    case MergeOp::add:
      return "add";
    case MergeOp::subtract:
      return "subtract";
    case MergeOp::multiply:
      return "multiply";
    case MergeOp::average:
      return "average";
    case MergeOp::maximum:
      return "maximum";
    case MergeOp::concatenate:
      return "concatenate";
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

bool fp8_layer(Policy policy, const LayerSpec& layer, DType compute) {
  const bool matmul = layer.type == LayerType::Dense ||
                      layer.type == LayerType::MultiHeadAttention ||
                      layer.type == LayerType::Conv2D;
  return policy == Policy::mixed_float8 && matmul && compute == DType::bf16 &&
         !layer.force_bfloat16;
}

namespace {

std::string layer_label(const ModelSpec& spec, int layer) {
  return "layer " + std::to_string(layer) + " (" +
         std::string(to_string(spec.layers.at(static_cast<std::size_t>(layer)).type)) + ")";
}

MergeOp merge_op(LayerType type) {
  switch (type) {
    case LayerType::Subtract:
      return MergeOp::subtract;
    case LayerType::Multiply:
      return MergeOp::multiply;
    case LayerType::Average:
      return MergeOp::average;
    case LayerType::Maximum:
      return MergeOp::maximum;
    case LayerType::Concatenate:
      return MergeOp::concatenate;
    default:
      return MergeOp::add;
  }
}

// Lowers layer by layer in the table's order. Each layer starts from the tensors it reads (a
// layer's last node, or the batch) and chains its nodes from there.
class Lowering {
 public:
  Lowering(const ModelSpec& spec, const ShapeTable& table, const LoweringRules& rules,
           ExecutionPlan& plan)
      : spec_(spec), table_(table), rules_(rules), plan_(plan), readers_(spec.layers.size(), 0) {
    for (const LayerInfo& info : table.layers)
      for (const int source : info.inputs)
        if (source != kModelInput) ++readers_[static_cast<std::size_t>(source)];
  }

  void layer(int li) {
    const LayerSpec& layer = spec_.layers[static_cast<std::size_t>(li)];
    const LayerInfo& info = table_.layers[static_cast<std::size_t>(li)];
    if (fuse_relu(li, layer, info)) return;
    const DType s = info.compute;
    const Shape& out = info.output_shape;
    const std::string label = layer_label(spec_, li);
    const bool elementwise_cast = rules_.elementwise_same_dtype;
    current_ = tensor_of(info.inputs.front());
    switch (layer.type) {
      case LayerType::Dense: {
        cast_to(s, li, label);
        const bool fused = rules_.dense_fuses_relu && layer.activation == ActivationFn::relu;
        PlanNode& dense = add(PlanOp::dense, li, s, out, label);
        if (fused) dense.activation = ActivationFn::relu;
        dense.fp8 = fp8_matmul(layer, s);
        add_slots(info, li);
        if (layer.activation != ActivationFn::linear && !fused) {
          add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        }
        break;
      }
      case LayerType::Conv2D:
      case LayerType::DepthwiseConv2D:
        cast_to(s, li, label);
        if (layer.type == LayerType::DepthwiseConv2D) {
          add(PlanOp::conv2d, li, s, out, label).groups = static_cast<int>(info.input_shape[2]);
        } else {
          add(PlanOp::conv2d, li, s, out, label).fp8 = fp8_matmul(layer, s);
        }
        add_slots(info, li);
        if (layer.activation != ActivationFn::linear) {
          add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        }
        break;
      case LayerType::SeparableConv2D: {
        // Two convolutions: the depthwise one (its kernel) into H'xW'x(C * multiplier), then
        // the 1x1 one (the pointwise kernel and the bias), then the activation.
        cast_to(s, li, label);
        Shape depth = out;
        depth.back() = info.input_shape[2] * layer.depth_multiplier;
        add(PlanOp::conv2d, li, s, depth, label + " depthwise").groups =
            static_cast<int>(info.input_shape[2]);
        add_slots(info, li, 0, 1);
        add(PlanOp::conv2d, li, s, out, label + " pointwise");
        add_slots(info, li, 1, info.params.size());
        if (layer.activation != ActivationFn::linear) {
          add(PlanOp::activation, li, s, out, label).activation = layer.activation;
        }
        break;
      }
      case LayerType::MaxPooling2D:
      case LayerType::AveragePooling2D:
        cast_to(s, li, label);
        add(PlanOp::pooling, li, s, out, label);
        break;
      case LayerType::GlobalAveragePooling2D:
      case LayerType::GlobalMaxPooling2D:
      case LayerType::GlobalAveragePooling1D:
      case LayerType::GlobalMaxPooling1D: {
        // One window over the whole image (a sequence's steps as its height), then (without
        // keepdims, or for a sequence) a view with the layer's shape.
        cast_to(s, li, label);
        const std::int64_t channels = info.input_shape.back();
        add(PlanOp::pooling, li, s, {1, 1, channels}, label);
        if (out != Shape{1, 1, channels}) add(PlanOp::flatten, li, s, out, label);
        break;
      }
      case LayerType::Flatten:
      case LayerType::Reshape:  // a view with another shape, as Flatten's
        add(current_.dtype != s ? PlanOp::cast : PlanOp::flatten, li, s, out, label);
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
      case LayerType::Add:
      case LayerType::Subtract:
      case LayerType::Multiply:
      case LayerType::Average:
      case LayerType::Maximum:
      case LayerType::Concatenate:
        merge(layer, info, li, label);
        break;
      case LayerType::ReLU: {
        if (elementwise_cast) cast_to(s, li, label);
        PlanNode& node = add(PlanOp::activation, li, s, out, label);
        node.activation = ActivationFn::relu;
        // Keras casts max_value and threshold to the layer's dtype (its slope multiplies in it).
        node.relu = {static_cast<float>(layer.negative_slope),
                     round_to_dtype(s, static_cast<float>(layer.max_value)),
                     round_to_dtype(s, static_cast<float>(layer.threshold))};
        break;
      }
      case LayerType::BatchNormalization:
        // Keras casts the input to the layer's dtype, then computes in float32.
        cast_to(s, li, label);
        add(PlanOp::batch_norm, li, s, out, label);
        add_slots(info, li);
        break;
      case LayerType::Normalization:
        // Keras converts the input to the layer's dtype and computes in it.
        cast_to(s, li, label);
        add(PlanOp::normalization, li, s, out, label);
        break;
      case LayerType::ZeroPadding2D:
        cast_to(s, li, label);
        add(PlanOp::zero_padding, li, s, out, label);
        break;
      case LayerType::Embedding:  // reads the float32 ids as they are
        add(PlanOp::embedding, li, s, out, label);
        add_slots(info, li);
        break;
      case LayerType::PositionEmbedding:  // reads only the input's shape: no cast
        add(PlanOp::position_embedding, li, s, out, label);
        add_slots(info, li);
        break;
      case LayerType::LayerNormalization:
        // Keras casts the input to the layer's dtype, then computes in float32.
        cast_to(s, li, label);
        add(PlanOp::layer_norm, li, s, out, label);
        add_slots(info, li);
        break;
      case LayerType::MultiHeadAttention:
        attention(layer, info, li, label);
        break;
    }
    plan_.layer_last_node[static_cast<std::size_t>(li)] = static_cast<int>(plan_.nodes.size()) - 1;
  }

 private:
  // A tensor the lowering reads: a node's output (kPlanInput: the batch).
  struct Tensor {
    int node = kPlanInput;
    DType dtype = DType::f32;
    Shape shape;
  };

  Tensor tensor_of(int layer) const {
    if (layer == kModelInput) return {kPlanInput, DType::f32, table_.input_shape};  // float32 batch
    const int node = plan_.layer_last_node[static_cast<std::size_t>(layer)];
    const PlanNode& n = plan_.nodes[static_cast<std::size_t>(node)];
    return {node, n.out_dtype, n.out_shape};
  }

  bool fp8_matmul(const LayerSpec& layer, DType compute) const {
    return fp8_layer(plan_.policy, layer, compute);
  }

  PlanNode& add(PlanOp op, int li, DType out_dtype, const Shape& out_shape, std::string label,
                std::vector<Tensor> inputs = {}) {
    if (inputs.empty()) inputs.push_back(current_);
    PlanNode n;
    n.op = op;
    n.layer = li;
    n.in_dtype = inputs.front().dtype;
    n.out_dtype = out_dtype;
    n.in_shape = inputs.front().shape;
    n.out_shape = out_shape;
    for (const Tensor& t : inputs) n.inputs.push_back({t.node, false, false});
    n.label = std::move(label);
    plan_.nodes.push_back(std::move(n));
    current_ = {static_cast<int>(plan_.nodes.size()) - 1, out_dtype, out_shape};
    return plan_.nodes.back();
  }

  // LoweringRules::fuse_relu: a plain ReLU layer (Activation relu, or ReLU without arguments)
  // whose one input is a BatchNormalization or Add that nothing else reads, whose node is the
  // last so far, in the ReLU's dtype, becomes that node's activation.
  bool fuse_relu(int li, const LayerSpec& layer, const LayerInfo& info) {
    if (!rules_.fuse_relu || info.inputs.size() != 1 || info.inputs.front() == kModelInput) {
      return false;
    }
    const bool plain = layer.type == LayerType::Activation
                           ? layer.activation == ActivationFn::relu
                           : layer.type == LayerType::ReLU && std::isinf(layer.max_value) &&
                                 layer.negative_slope == 0.0 && layer.threshold == 0.0;
    const int source = info.inputs.front();
    if (!plain || readers_[static_cast<std::size_t>(source)] != 1 || plan_.nodes.empty()) {
      return false;
    }
    const int k = plan_.layer_last_node[static_cast<std::size_t>(source)];
    PlanNode& node = plan_.nodes[static_cast<std::size_t>(k)];
    const bool fusable =
        k == static_cast<int>(plan_.nodes.size()) - 1 && node.layer == source &&
        node.activation == ActivationFn::linear && node.out_dtype == info.compute &&
        (node.op == PlanOp::batch_norm || (node.op == PlanOp::merge && node.merge == MergeOp::add));
    if (!fusable) return false;
    node.activation = ActivationFn::relu;
    node.label += " + " + layer_label(spec_, li);
    plan_.layer_fused[static_cast<std::size_t>(source)] = true;
    plan_.layer_last_node[static_cast<std::size_t>(li)] = k;
    return true;
  }

  void cast_to(DType to, int li, const std::string& label) {
    if (current_.dtype != to) add(PlanOp::cast, li, to, current_.shape, label + " cast");
  }

  // A merge reads every input in its own dtype (a cast first where an input's differs, on
  // every backend: the merge kernels read one dtype).
  void merge(const LayerSpec& layer, const LayerInfo& info, int li, const std::string& label) {
    std::vector<Tensor> inputs;
    for (std::size_t i = 0; i < info.inputs.size(); ++i) {
      current_ = tensor_of(info.inputs[i]);
      cast_to(info.compute, li, label + " input " + std::to_string(i));
      inputs.push_back(current_);
    }
    PlanNode& node = add(PlanOp::merge, li, info.compute, info.output_shape, label, inputs);
    node.merge = merge_op(layer.type);
    if (layer.type == LayerType::Concatenate) {
      const int rank = static_cast<int>(info.input_shape.size());
      node.axis = (layer.axis < 0 ? layer.axis + rank + 1 : layer.axis) - 1;
    }
  }

  // MultiHeadAttention: the query, key and value projections, each a Dense on every step (Keras's
  // (features, heads, dim) kernel is a (features, heads * dim) matrix in the same order), the
  // attention core reading the three, and the output projection ((heads, value_dim, out): a
  // (heads * value_dim, out) matrix).
  void attention(const LayerSpec& layer, const LayerInfo& info, int li, const std::string& label) {
    const DType s = info.compute;
    cast_to(s, li, label);
    const Tensor x = current_;
    const std::int64_t steps = info.input_shape[0];
    const int heads = layer.num_heads, kd = layer.key_dim;
    const int vd = layer.value_dim > 0 ? layer.value_dim : layer.key_dim;
    const std::size_t per = layer.use_bias ? 2 : 1;  // groups per projection
    static constexpr const char* kParts[] = {" query", " key", " value"};
    std::vector<Tensor> parts;
    for (std::size_t p = 0; p < 3; ++p) {
      current_ = x;
      add(PlanOp::dense, li, s, {steps, static_cast<std::int64_t>(heads) * (p == 2 ? vd : kd)},
          label + kParts[p])
          .fp8 = fp8_matmul(layer, s);
      add_slots(info, li, p * per, (p + 1) * per);
      parts.push_back(current_);
    }
    PlanNode& core = add(PlanOp::attention, li, s, {steps, static_cast<std::int64_t>(heads) * vd},
                         label + " attention", parts);
    core.heads = heads;
    core.key_dim = kd;
    core.value_dim = vd;
    core.causal = layer.causal;
    add(PlanOp::dense, li, s, info.output_shape, label + " output").fp8 = fp8_matmul(layer, s);
    add_slots(info, li, 3 * per, info.params.size());
  }

  // The kernel's glorot_uniform fans, as Keras computes them: Dense (in, units); Conv2D the
  // receptive field times the input and output channels.
  // Groups [first, last) of the layer's parameters, to its last node so far.
  void add_slots(const LayerInfo& info, int li, std::size_t first = 0,
                 std::size_t last = static_cast<std::size_t>(-1)) {
    PlanNode& node = plan_.nodes.back();
    const int node_index = static_cast<int>(plan_.nodes.size()) - 1;
    last = std::min(last, info.params.size());
    for (std::size_t g = first; g < last; ++g) {
      const ParamGroup& group = info.params[g];
      PlanSlot slot;
      slot.layer = li;
      slot.node = node_index;
      slot.kind = group.kind;
      slot.keras_shape = group.shape;
      slot.count = group.count();
      // Normalizations compute in float32; Keras reads an Embedding's float32 table and casts
      // the rows it takes (a PositionEmbedding's: the same values).
      const bool float32_params = info.type == LayerType::BatchNormalization ||
                                  info.type == LayerType::LayerNormalization ||
                                  group.kind == ParamKind::embeddings;
      slot.compute = float32_params ? DType::f32 : info.compute;
      if (group.kind == ParamKind::embeddings && info.type == LayerType::PositionEmbedding) {
        slot.fan_in = group.shape[0];  // keras_hub's glorot_uniform; an Embedding's: uniform
        slot.fan_out = group.shape[1];
      }
      if (is_kernel(group.kind)) {
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
  std::vector<int> readers_;  // per layer: how many layers read it
  Tensor current_;  // the tensor the layer's next node reads
};

// The backward schedule: which nodes run backward, which inputs get a gradient, and the
// activation-gradient buffers, reused once their tensor's producer has read them.
void schedule_backward(ExecutionPlan& plan, bool input_gradient) {
  const int n = static_cast<int>(plan.nodes.size());
  // A node's output gradient is needed when it or a node before it has parameters, or it
  // reads the batch and the batch's gradient is wanted.
  std::vector<bool> needs(static_cast<std::size_t>(n), false);
  for (int k = 0; k < n; ++k) {
    PlanNode& node = plan.nodes[static_cast<std::size_t>(k)];
    bool need = !node.params.empty();
    for (PlanInput& in : node.inputs) {
      in.grad = !blocks_input_gradient(node.op) &&
                (in.node == kPlanInput ? input_gradient : needs[static_cast<std::size_t>(in.node)]);
      need = need || in.grad;
    }
    needs[static_cast<std::size_t>(k)] = need;
  }
  // Only what the loss reaches runs backward (every node reaches it: the graph has one output).
  std::vector<int> free_buffers;
  int count = 0;
  const auto take = [&]() {
    if (free_buffers.empty()) return count++;
    const int b = free_buffers.back();
    free_buffers.pop_back();
    return b;
  };
  std::vector<int> grad(static_cast<std::size_t>(n), -1);
  int input_grad = -1;
  // Backward starts at the output (OpAccess seeds its gradient) or, with a fused loss head, at
  // the final activation's input (the loss seeds that; the activation's backward is skipped):
  // the schedule is the output's, which serves both.
  if (n > 0 && needs[static_cast<std::size_t>(n - 1)])
    grad[static_cast<std::size_t>(n - 1)] = take();
  bool any_accumulate = false;
  for (int k = n - 1; k >= 0; --k) {
    PlanNode& node = plan.nodes[static_cast<std::size_t>(k)];
    node.backward = needs[static_cast<std::size_t>(k)] && grad[static_cast<std::size_t>(k)] >= 0;
    node.grad = grad[static_cast<std::size_t>(k)];
    if (!node.backward) continue;
    bool shared = false;  // a Flatten's input gradient is its own buffer, seen with another shape
    for (PlanInput& in : node.inputs) {
      if (!in.grad) continue;
      int& target = in.node == kPlanInput ? input_grad : grad[static_cast<std::size_t>(in.node)];
      if (target >= 0) {
        in.accumulate = true;
        any_accumulate = true;
      } else if (node.aliases_input()) {
        target = node.grad;
        shared = true;
      } else {
        target = take();
      }
    }
    if (!shared) free_buffers.push_back(node.grad);
  }
  // The scratch buffer of accumulations is one more, live beside the others.
  plan.grad_scratch = any_accumulate ? count++ : -1;
  plan.input_grad = input_grad;
  // Two at least, as a chain has: the loss stages its float32 rows in the one it does not seed.
  plan.gradient_buffers = std::max(count, 2);
}
LossHead head_of(const ExecutionPlan& plan, LossKind loss) {
  const bool binary = loss == LossKind::binary_crossentropy;
  if (plan.nodes.size() >= 2 && plan.nodes.back().input() != kPlanInput) {
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

bool pointwise_conv(const ExecutionPlan& plan, const PlanNode& node) {
  if (node.op != PlanOp::conv2d || node.groups != 1 || node.params.empty()) return false;
  const PlanSlot& kernel = plan.params.at(static_cast<std::size_t>(node.params.front()));
  return kernel.keras_shape.size() == 4 && kernel.keras_shape[0] == 1 &&
         kernel.keras_shape[1] == 1 && node.in_shape.size() == 3 && node.out_shape.size() == 3 &&
         node.in_shape[0] == node.out_shape[0] && node.in_shape[1] == node.out_shape[1];
}

ConvPart conv_part(const LayerSpec& layer, const LayerInfo& info, const PlanNode& node) {
  ConvPart part{layer, info};
  if (layer.type != LayerType::SeparableConv2D) return part;
  part.layer.activation = ActivationFn::linear;
  part.info.output_shape = node.out_shape;
  if (node.groups > 1) {
    part.layer.type = LayerType::DepthwiseConv2D;
    part.layer.use_bias = false;
    return part;
  }
  part.layer.type = LayerType::Conv2D;
  part.layer.kernel_size = {1, 1};
  part.layer.strides = {1, 1};
  part.layer.padding = Padding::valid;
  part.info.input_shape = node.in_shape;
  part.info.pad_top = part.info.pad_bottom = part.info.pad_left = part.info.pad_right = 0;
  return part;
}

ExecutionPlan build_plan(const ModelSpec& spec, const ShapeTable& table, int batch,
                         const OptimizerConfig& optimizer, const LoweringRules& rules,
                         bool input_gradient) {
  if (batch < 1) throw ConfigError("batch size must be at least 1, got " + std::to_string(batch));
  if (spec.layers.size() != table.layers.size()) {
    throw ConfigError("the shape table does not belong to model " + quote(spec.name));
  }
  ExecutionPlan plan;
  plan.policy = table.policy;
  plan.batch = batch;
  plan.loss = spec.loss;
  plan.input_shape = table.input_shape;
  plan.classes = table.classes();
  plan.positions = table.label_positions();
  plan.layer_last_node.resize(spec.layers.size());
  plan.layer_fused.assign(spec.layers.size(), false);
  if (table.order.size() != spec.layers.size()) {
    throw ConfigError("the shape table of model " + quote(spec.name) + " has no execution order");
  }
  Lowering lowering(spec, table, rules, plan);
  for (const int layer : table.order) lowering.layer(layer);
  plan.head = head_of(plan, spec.loss);
  plan.output_node = static_cast<int>(plan.nodes.size()) - 1;
  const bool fused_head =
      plan.head == LossHead::softmax_crossentropy || plan.head == LossHead::sigmoid_binary;
  plan.loss_node = fused_head ? plan.nodes.back().input() : plan.output_node;
  schedule_backward(plan, input_gradient);
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
  add(R::labels, 0, P::workspace, batch * plan.positions, sizeof(std::int32_t));
  plan.max_tensor_elements = input_elements;
  for (std::size_t k = 0; k < plan.nodes.size(); ++k) {
    const PlanNode& node = plan.nodes[k];
    const std::int64_t elements = plan.out_elements(static_cast<int>(k));
    plan.max_tensor_elements = std::max(plan.max_tensor_elements, elements);
    if (node.aliases_input()) continue;
    add(R::node_output, static_cast<int>(k), P::activations, elements,
        static_cast<std::int64_t>(dtype_bytes(node.out_dtype)));
  }
  for (int i = 0; i < plan.gradient_buffers; ++i) {
    add(R::activation_gradient, i, P::workspace, plan.max_tensor_elements, f32);
  }
  add(R::loss_rows, 0, P::workspace, batch * plan.positions * plan.classes, f32);
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
                         const OptimizerConfig& optimizer, const LoweringRules& rules,
                         bool input_gradient) {
  if (table.policy != policy) {
    throw ConfigError("the shape table of model " + quote(spec.name) + " was inferred under " +
                      std::string(to_string(table.policy)) + ", not " +
                      std::string(to_string(policy)));
  }
  return build_plan(spec, table, batch, optimizer, rules, input_gradient);
}

}  // namespace mixlab
