// Conv2D on oneDNN's convolution (NHWC activations, as Keras), with Keras's 'same' padding split
// (more at the bottom/right).
#pragma once

#include "engine/backend/cpu/weighted_node.h"

namespace mixlab::cpu {

class Conv2DNode : public WeightedNode {
 public:
  Conv2DNode(CpuContext& ctx, const LayerSpec& spec, const LayerInfo& info, std::int64_t batch,
             Storage storage);
};

}  // namespace mixlab::cpu
