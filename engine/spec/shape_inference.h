// Shape inference: checks a model spec and computes, per layer, the output shape, parameters,
// forward FLOPs and activation memory. Device-free; backends plan their memory from it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/precision.h"
#include "engine/spec/model_spec.h"

namespace mixlab {

using Shape = std::vector<std::int64_t>;  // without the batch dimension

std::int64_t num_elements(const Shape& shape);
std::string format_shape(const Shape& shape);  // "28x28x1"

// A named group of a layer's trainable parameters, in Keras's layout and order.
// A layer's variables, in Keras's order within the layer (kernel, bias; BatchNormalization's
// gamma, beta, moving_mean, moving_variance). The moving statistics are state, not trained:
// the optimizer leaves them alone and the layer updates them while training (Keras's
// non-trainable weights).
enum class ParamKind : std::uint8_t {
  kernel,
  bias,
  gamma,
  beta,
  moving_mean,
  moving_variance,
  pointwise_kernel,  // SeparableConv2D's second kernel (its first is `kernel`, the depthwise one)
  embeddings,  // Embedding's (input_dim, output_dim), PositionEmbedding's (positions, features)
  // MultiHeadAttention's projections (Keras's EinsumDense layers query, key and value): kernels
  // (features, heads, key_dim or value_dim), biases (heads, key_dim or value_dim); its output
  // projection is its kernel (heads, value_dim, output) and bias.
  query_kernel,
  query_bias,
  key_kernel,
  key_bias,
  value_kernel,
  value_bias,
};
std::string_view to_string(ParamKind kind);
// Kernels start from glorot_uniform, embeddings from Keras's initializer for their layer
// (engine/ops/initializers.h); the other groups from zeros or ones.
constexpr bool is_kernel(ParamKind kind) {
  return kind == ParamKind::kernel || kind == ParamKind::pointwise_kernel ||
         kind == ParamKind::query_kernel || kind == ParamKind::key_kernel ||
         kind == ParamKind::value_kernel;
}
constexpr bool is_trainable(ParamKind kind) {
  return kind != ParamKind::moving_mean && kind != ParamKind::moving_variance;
}

struct ParamGroup {
  ParamKind kind = ParamKind::kernel;
  // Dense kernel: (in, units); Conv2D kernel: (kh, kw, in, filters); DepthwiseConv2D kernel:
  // (kh, kw, in, depth_multiplier); SeparableConv2D's pointwise kernel (1, 1, in * multiplier,
  // filters); bias and BatchNormalization's: (n)
  Shape shape;
  std::int64_t count() const { return num_elements(shape); }
};

struct LayerInfo {
  int index = 0;  // position in ModelSpec::layers
  LayerType type = LayerType::Dense;
  std::vector<int> inputs;          // the layers it reads (kModelInput: the model's input)
  std::vector<Shape> input_shapes;  // their outputs' shapes, in the same order
  Shape input_shape;                // the first input's shape (a merge's inputs[0])
  Shape output_shape;
  std::vector<ParamGroup> params;
  std::int64_t param_count = 0;
  // Forward FLOPs per sample: 2 per multiply-add of Dense/Conv2D plus one per bias add and one
  // per element of a fused activation; pooling one per window element; elementwise layers one
  // per element (softmax 3, gelu 8).
  std::int64_t flops = 0;
  // Bytes of this layer's output per sample, in the dtype it is stored in under the policy.
  std::int64_t activation_bytes = 0;
  DType compute = DType::f32;  // the dtype the layer computes and stores its output in
  // Keras's padding for 'same' (top/left, bottom/right), zero for 'valid'; ZeroPadding2D's.
  int pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
};

struct ShapeTable {
  Policy policy = Policy::float32;  // the dtypes and activation bytes below are under it
  Shape input_shape;
  // (classes), or (steps, classes) under sparse crossentropy: a label per step
  Shape output_shape;
  // The classes of each label, and the labels of a sample (1, or the steps).
  std::int64_t classes() const { return output_shape.empty() ? 0 : output_shape.back(); }
  std::int64_t label_positions() const {
    return output_shape.size() > 1 ? num_elements(output_shape) / output_shape.back() : 1;
  }
  std::vector<LayerInfo> layers;  // by index in ModelSpec::layers
  std::vector<int> order;         // the layers in the order they run (model_graph.h)
  std::int64_t params_total = 0;
  std::int64_t non_trainable_total = 0;  // of params_total: BatchNormalization's moving statistics
  std::int64_t flops_total = 0;             // forward, per sample
  std::int64_t activation_bytes_total = 0;  // per sample
};

// The window a pooling layer slides over its [H, W, C] input: MaxPooling2D and AveragePooling2D
// as given (with the table's padding); the global poolings the whole image once, to 1x1xC (a
// Flatten after it when not keepdims). The backends' pooling kernels read this.
struct PoolWindow {
  bool max = false;
  Size2 size;
  Size2 strides;
  std::int64_t out_h = 1;
  std::int64_t out_w = 1;
};
PoolWindow pool_window(const LayerSpec& layer, const LayerInfo& info);
// The H x W x C a pooling runs over: the input, or a sequence's (steps, features) as a
// steps x 1 x features image (GlobalAveragePooling1D, GlobalMaxPooling1D).
Shape pool_image_shape(const LayerSpec& layer, const LayerInfo& info);

// Validates the spec and its graph (model_graph.h) and computes its table. Throws SpecError
// naming the layer (index and type) and the field or edge, e.g. "layer 4 (Conv2D): kernel_size
// 5x5 does not fit input 4x4x32 with padding 'valid'" or "layer 9 (Add) 'add_3': adds 32x32x64
// from 'conv_7' to 16x16x64 from 'pool_2'"; its layer() is that index (-1 for the input shape,
// an empty model and the totals). The policy only affects dtypes and activation bytes.
ShapeTable infer_shapes(const ModelSpec& spec, Policy policy = Policy::float32);

}  // namespace mixlab
