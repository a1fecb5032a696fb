#include "ui/editor/layer_text.h"

#include <QCoreApplication>
#include <QLocale>
#include <QStringList>
#include <array>
#include <cmath>

#include "engine/spec/layer_text.h"

namespace mixlab::ui {
namespace {

QString tr(const char* text) {
  return QCoreApplication::translate("LayerText", text);
}

QString text_of(std::string_view s) {
  return QString::fromUtf8(s.data(), static_cast<qsizetype>(s.size()));
}

}  // namespace

QString layer_summary(const LayerSpec& layer) {
  return text_of(mixlab::layer_summary(layer));
}

QString layer_description(LayerType type) {
  switch (type) {
    case LayerType::Dense:
      return tr(
          "Fully connected layer: each output unit is a weighted sum of all inputs of the "
          "last axis, plus a bias, through an optional activation.");
    case LayerType::Conv2D:
      return tr(
          "2-D convolution over an [H, W, C] image: 'filters' output channels, each a "
          "kernel_size window over all input channels.");
    case LayerType::MaxPooling2D:
      return tr(
          "Keeps the largest value of each pool_size window of an image; strides default "
          "to the pool size.");
    case LayerType::AveragePooling2D:
      return tr("Averages each pool_size window of an image; strides default to the pool size.");
    case LayerType::Flatten:
      return tr("Reshapes the input to one axis, e.g. an image before Dense layers.");
    case LayerType::Dropout:
      return tr(
          "During training, zeroes a fraction 'rate' of the inputs and scales the rest "
          "by 1/(1 - rate).");
    case LayerType::Activation:
      return tr(
          "Applies an activation function elementwise; with dtype float32 it keeps the "
          "final softmax in float32 under a mixed policy.");
    case LayerType::Rescaling:
      return tr("Multiplies the input by 'scale' and adds 'offset', e.g. 1/255 for pixels.");
    case LayerType::Add:
      return tr("Adds its inputs (two or more, of one shape), as a residual connection does.");
    case LayerType::Subtract:
      return tr("Subtracts its second input from its first (of one shape).");
    case LayerType::Multiply:
      return tr("Multiplies its inputs elementwise (two or more, of one shape).");
    case LayerType::Average:
      return tr("Averages its inputs elementwise (two or more, of one shape).");
    case LayerType::Maximum:
      return tr("Takes the elementwise maximum of its inputs (two or more, of one shape).");
    case LayerType::Concatenate:
      return tr(
          "Joins its inputs along 'axis' (-1: the channels); they agree on every other axis.");
    case LayerType::GlobalAveragePooling2D:
      return tr("Averages each channel of an image over its height and width: HxWxC to C.");
    case LayerType::GlobalMaxPooling2D:
      return tr("Keeps each channel's largest value over height and width: HxWxC to C.");
    case LayerType::GlobalAveragePooling1D:
      return tr(
          "Averages each feature of a sequence over its steps: (steps, features) to "
          "features.");
    case LayerType::GlobalMaxPooling1D:
      return tr(
          "Keeps each feature's largest value over a sequence's steps: (steps, features) "
          "to features.");
    case LayerType::ReLU:
      return tr(
          "ReLU with options: clipped at max_value (6 gives ReLU6), negative_slope below "
          "the threshold (a leaky ReLU).");
    case LayerType::Embedding:
      return tr(
          "A learned vector per token: (steps) token ids to (steps, features); the model's "
          "input holds the ids.");
    case LayerType::LayerNormalization:
      return tr(
          "Normalizes each position's features by their own mean and variance, then scales "
          "and shifts; computed in float32 under a mixed policy.");
    case LayerType::MultiHeadAttention:
      return tr(
          "Self-attention: each step's query against every step's key (only earlier ones with "
          "the causal mask), the softmax weighting the values, over several heads; scores "
          "and softmax in float32 under a mixed policy.");
    case LayerType::PositionEmbedding:
      return tr(
          "A learned vector per position (keras_hub's PositionEmbedding); add it to the "
          "tokens' embeddings with Add.");
    case LayerType::Normalization:
      return tr(
          "Subtracts a fixed mean and divides by the square root of a fixed variance, per "
          "channel (EfficientNet's first layers); nothing is trained.");
    case LayerType::BatchNormalization:
      return tr(
          "Normalizes each channel by the batch's mean and variance while training (their "
          "moving averages otherwise), then scales and shifts; computed in float32 under a "
          "mixed policy.");
    case LayerType::ZeroPadding2D:
      return tr("Adds rows and columns of zeros around an image.");
    case LayerType::SeparableConv2D:
      return tr(
          "A depthwise convolution (each channel on its own) followed by a 1x1 convolution to "
          "'filters' channels, as Xception does: fewer FLOPs than a Conv2D of the same window.");
    case LayerType::Reshape:
      return tr(
          "Gives the values another shape (target_shape, one size -1 to infer), in Keras's "
          "order: no copy.");
    case LayerType::DepthwiseConv2D:
      return tr(
          "Convolves each channel of an image on its own (depth_multiplier filters per "
          "channel), as MobileNets do; cheap in FLOPs, bound by memory.");
  }
  return {};
}

LayerSpec default_layer(LayerType type) {
  LayerSpec layer;
  layer.type = type;
  switch (type) {
    case LayerType::Dense:
      layer.units = 128;
      layer.activation = ActivationFn::relu;
      break;
    case LayerType::Conv2D:
      layer.filters = 32;
      layer.kernel_size = {3, 3};
      layer.activation = ActivationFn::relu;
      break;
    case LayerType::MaxPooling2D:
    case LayerType::AveragePooling2D:
      // LayerSpec{} has strides 1x1; Keras's strides=None means the pool size.
      layer.pool_size = {2, 2};
      layer.strides = layer.pool_size;
      break;
    case LayerType::Dropout:
      layer.rate = 0.2;
      break;
    case LayerType::Activation:
      layer.activation = ActivationFn::softmax;
      break;
    case LayerType::Rescaling:
      layer.scale = 1.0 / 255.0;
      break;
    case LayerType::ReLU:
      layer.max_value = 6.0;
      break;
    case LayerType::DepthwiseConv2D:
    case LayerType::SeparableConv2D:
      if (type == LayerType::SeparableConv2D) {
        layer.filters = 64;
        layer.activation = ActivationFn::relu;
      }
      layer.kernel_size = {3, 3};
      layer.padding = Padding::same;
      break;
    case LayerType::Flatten:
    case LayerType::Add:
    case LayerType::Subtract:
    case LayerType::Multiply:
    case LayerType::Average:
    case LayerType::Maximum:
    case LayerType::Concatenate:
    case LayerType::GlobalAveragePooling2D:
    case LayerType::GlobalMaxPooling2D:
    case LayerType::GlobalAveragePooling1D:
    case LayerType::GlobalMaxPooling1D:
    case LayerType::Reshape:
      layer.target_shape = {-1};
      break;
    case LayerType::Normalization:
      // ImageNet's per-channel statistics of 0..1 pixels, as Keras's EfficientNet uses them.
      layer.mean = {0.485, 0.456, 0.406};
      layer.variance = {0.229 * 0.229, 0.224 * 0.224, 0.225 * 0.225};
      break;
    case LayerType::Embedding:
      layer.input_dim = 256;  // bytes
      layer.output_dim = 128;
      break;
    case LayerType::PositionEmbedding:
      layer.sequence_length = 128;
      break;
    case LayerType::MultiHeadAttention:
      layer.num_heads = 4;
      layer.key_dim = 32;
      break;
    case LayerType::BatchNormalization:
    case LayerType::LayerNormalization:
    case LayerType::ZeroPadding2D:
      break;
  }
  return layer;
}

QString format_size2(Size2 size) {
  return text_of(mixlab::format_size2(size));
}

QString format_count(std::int64_t count) {
  return QLocale().toString(static_cast<qlonglong>(count));
}

QString format_flops(std::int64_t flops) {
  static constexpr std::array<const char*, 5> kPrefixes = {"", " k", " M", " G", " T"};
  double value = static_cast<double>(flops);
  std::size_t prefix = 0;
  while (value >= 999.5 && prefix + 1 < kPrefixes.size()) {
    value /= 1000.0;
    ++prefix;
  }
  // Three significant digits: "203 k", "12.3 M", "1.23 G".
  const int decimals = prefix == 0 || value >= 99.95 ? 0 : value >= 9.995 ? 1 : 2;
  return QLocale().toString(value, 'f', decimals) + QString::fromLatin1(kPrefixes[prefix]);
}

QString format_bytes(std::int64_t bytes) {
  return QLocale().formattedDataSize(bytes, 1);
}

QString param_groups_text(const LayerInfo& info) {
  QStringList groups;
  for (const ParamGroup& group : info.params)
    groups << QStringLiteral("%1 %2").arg(text_of(to_string(group.kind)),
                                          text_of(format_shape(group.shape)));
  return groups.isEmpty() ? tr("none") : groups.join(QStringLiteral(" + "));
}

QString totals_text(const ShapeTable& table) {
  return tr("Input %1 → %2 · %3 parameters · %4 FLOPs · %5 activations per sample")
      .arg(text_of(format_shape(table.input_shape)), text_of(format_shape(table.output_shape)),
           format_count(table.params_total), format_flops(table.flops_total),
           format_bytes(table.activation_bytes_total));
}

QString training_memory_text(const MemoryPlan& memory, int batch_size, Policy policy,
                             OptimizerKind optimizer) {
  QStringList parts;
  for (const MemoryPurpose p :
       {MemoryPurpose::parameters, MemoryPurpose::weight_copies, MemoryPurpose::gradients,
        MemoryPurpose::optimizer, MemoryPurpose::activations, MemoryPurpose::workspace}) {
    if (memory.bytes(p) > 0) parts << text_of(to_string(p)) + QLatin1Char(' ') +
                                          format_bytes(memory.bytes(p));
  }
  return tr("Training at batch %1, %2, %3: %4 (%5)")
      .arg(batch_size)
      .arg(text_of(to_string(policy)), text_of(to_string(optimizer)), format_bytes(memory.total()),
           parts.join(QStringLiteral(", ")));
}

}  // namespace mixlab::ui
