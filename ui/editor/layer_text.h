// How the editor writes layers and figures for people: one-line layer summaries in Keras's
// vocabulary, counts, FLOPs and bytes, and the layer a palette entry starts as.
#pragma once

#include <QString>
#include <cstdint>

#include "engine/spec/model_spec.h"
#include "engine/ops/optimizer.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/shape_inference.h"

namespace mixlab::ui {

// engine/spec/layer_text.h's summary: "Dense 128, relu", "Conv2D 64, 4x4, stride 2, same".
QString layer_summary(const LayerSpec& layer);
// What a layer type does, for tooltips.
QString layer_description(LayerType type);
// A new layer of `type` as the palette inserts it: Keras's defaults, and for the arguments Keras
// requires, the values the product's example models use.
LayerSpec default_layer(LayerType type);

QString format_size2(Size2 size);          // "3x3"
QString format_count(std::int64_t count);  // "101,770" (grouped in the user's locale)
QString format_flops(std::int64_t flops);  // "203 k", "1.23 G"
QString format_bytes(std::int64_t bytes);  // "3.1 KiB"
// "kernel 784x128 + bias 128", or "none".
QString param_groups_text(const LayerInfo& info);
// "Input 28x28x1 → 10 · 101,770 parameters · 203 k FLOPs · 3.1 KiB activations per sample".
QString totals_text(const ShapeTable& table);
// "Training at batch 32, float32, adam: 2.0 MiB (parameters 398 KiB, …, workspace 197 KiB)".
QString training_memory_text(const MemoryPlan& memory, int batch_size, Policy policy,
                             OptimizerKind optimizer);

}  // namespace mixlab::ui
