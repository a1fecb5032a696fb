// Dense on oneDNN's inner product. A Dense on a rank-3 input acts on the last axis (Keras): the
// batch and leading axes fold into rows.
#pragma once

#include "engine/backend/cpu/weighted_node.h"

namespace mixlab::cpu {

class DenseNode : public WeightedNode {
 public:
  // rows: batch * leading elements; in/out: features.
  DenseNode(CpuContext& ctx, const LayerSpec& spec, int layer, std::int64_t rows,
            std::int64_t in_features, std::int64_t out_features, Storage storage);
};

}  // namespace mixlab::cpu
