// cuDNN's fused attention graphs (engine/backend/cuda/fused_attention.cpp) without a GPU: every
// tensor and operation descriptor of the forward and backward graphs, and both operation graphs,
// finalised by the cuDNN this build links (cuDNN 9.8 on finalises a graph without a handle), for
// the shapes MixLab runs; and the backend takes the fused kernels exactly where the doctor
// predicts them (engine/doctor/cost_model.h's fused_attention_blocker). Whether the graphs find
// an engine, and their numbers, need a GPU: tests/gpu/executor/ops_test.cpp's Fused* cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "engine/backend/cuda/fused_attention.h"
#include "engine/backend/cuda/fused_attention_graph.h"
#include "engine/doctor/cost_model.h"
#include "engine/doctor/device_profile.h"
#include "engine/plan/execution_plan.h"

namespace mixlab::cuda {
namespace {

std::size_t count_starting(const std::vector<std::string>& lines, const std::string& prefix) {
  return static_cast<std::size_t>(std::count_if(
      lines.begin(), lines.end(), [&](const auto& l) { return l.rfind(prefix, 0) == 0; }));
}

TEST(CudnnFusedAttention, GraphsFinaliseWithoutAGpu) {
  if (cudnnGetVersion() < 90800) {
    GTEST_SKIP() << "cuDNN " << cudnnGetVersion()
                 << " finalises an operation graph only with a handle (a GPU); 9.8 on without";
  }
  struct Case {
    FusedAttentionShape shape;
    std::size_t forward_ops;
  };
  // The forward's ten operations (scores, scale, max, subtract, exp, sum, log, the statistics,
  // the division, the weighted values), four more for the causal mask (two index generators, a
  // comparison, a select).
  const Case cases[] = {
      {{.batch = 4,
        .steps = 128,
        .heads = 4,
        .key_dim = 32,
        .value_dim = 32,
        .causal = true,
        .dtype = DType::bf16},
       14},
      {{.batch = 3,
        .steps = 100,
        .heads = 2,
        .key_dim = 64,
        .value_dim = 32,
        .causal = false,
        .dtype = DType::f16},
       10},
      {{.batch = 1,
        .steps = 7,
        .heads = 1,
        .key_dim = 16,
        .value_dim = 16,
        .causal = true,
        .dtype = DType::f16},
       14},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("steps " + std::to_string(c.shape.steps) + ", key_dim " +
                 std::to_string(c.shape.key_dim));
    ASSERT_EQ(fused_attention_unsupported(c.shape, 9, 0), "");
    std::vector<std::string> lines;
    ASSERT_NO_THROW(lines = fused_attention_dry_run(c.shape, "attention"));
    for (const std::string& line : lines) {
      EXPECT_EQ(line.find("no plan"), std::string::npos) << line;
    }
    EXPECT_EQ(count_starting(lines, "forward "), c.forward_ops);
    // The backward recomputes the weights from the statistics and adds the four gradients'
    // products, the dO.O row sums and the dQ accumulator's copy: at least 18 operations.
    EXPECT_GE(count_starting(lines, "backward "), c.forward_ops + 8);
  }
}

// What cuDNN releases before this build's take (GraphOptions from graph_options): up to 9.15 the
// frontend's padding-mask workaround of a backward bug at lengths off 128, from 9.0 to 9.9 a
// second padding mask after the statistics, before 9.10 the lowest float as the causal mask's
// value, before 9.11 no determinism attribute on the reductions. The cuDNN this build links
// (9.19 on these machines) never builds them itself; it checks them here.
TEST(CudnnFusedAttention, OlderCudnnsGraphsFinaliseToo) {
  if (cudnnGetVersion() < 90800) {
    GTEST_SKIP() << "cuDNN " << cudnnGetVersion()
                 << " finalises an operation graph only with a handle (a GPU); 9.8 on without";
  }
  const FusedAttentionShape shape{.batch = 3,
                                  .steps = 100,
                                  .heads = 2,
                                  .key_dim = 64,
                                  .value_dim = 32,
                                  .causal = true,
                                  .dtype = DType::bf16};
  const attention_graph::Layout layout(shape);
  const auto backward_ops = [&](const attention_graph::GraphOptions& o) {
    attention_graph::Graph g;
    attention_graph::build_backward(g, layout, o);
    EXPECT_EQ(attention_graph::finalize_graph(g, nullptr, "backward"), "");
    return g.ops.size();
  };
  attention_graph::GraphOptions now = attention_graph::graph_options(shape);
  now.padding_workaround = now.second_padding = false;
  now.set_deterministic = true;
  now.mask_value = -std::numeric_limits<float>::infinity();
  attention_graph::GraphOptions old = now;
  old.mask_value = std::numeric_limits<float>::lowest();
  old.set_deterministic = false;
  old.padding_workaround = true;
  const std::size_t plain = backward_ops(now), padded = backward_ops(old);
  old.second_padding = true;
  const std::size_t twice = backward_ops(old);
  // A padding mask is two index generators, two comparisons against the lengths, their AND and a
  // select: six operations each time.
  EXPECT_EQ(padded, plain + 6);
  EXPECT_EQ(twice, padded + 6);

  attention_graph::Graph fwd;
  attention_graph::build_forward(fwd, layout, old);
  EXPECT_EQ(attention_graph::finalize_graph(fwd, nullptr, "forward"), "");
}

// The backend tries the fused kernels (AttentionNode under --attention auto) for the shapes
// and devices the doctor predicts them for, and no others.
TEST(CudnnFusedAttention, TakesTheShapesTheDoctorPredictsItFor) {
  for (const char* cc : {"7.5", "8.0", "8.9", "9.0", "10.0"}) {
    doctor::DeviceProfile device;
    device.kind = "cuda";
    device.compute_capability = cc;
    const int major = std::stoi(cc), minor = cc[std::string(cc).find('.') + 1] - '0';
    for (const DType dtype : {DType::f32, DType::f16, DType::bf16}) {
      for (const int key_dim : {12, 16, 64, 128, 136, 256, 264}) {
        for (const int steps : {1, 2, 128}) {
          FusedAttentionShape shape{.batch = 2,
                                    .steps = steps,
                                    .heads = 2,
                                    .key_dim = key_dim,
                                    .value_dim = key_dim,
                                    .causal = true,
                                    .dtype = dtype};
          PlanNode node;
          node.op = PlanOp::attention;
          node.out_dtype = dtype;
          node.out_shape = {steps, 2 * key_dim};
          node.heads = 2;
          node.key_dim = node.value_dim = key_dim;
          const std::string backend = fused_attention_unsupported(shape, major, minor);
          const std::string predicted = doctor::fused_attention_blocker(device, node);
          EXPECT_EQ(backend.empty(), predicted.empty())
              << "compute capability " << cc << ", " << to_string(dtype) << ", key_dim " << key_dim
              << ", " << steps << " steps: the backend says \"" << backend << "\", the doctor \""
              << predicted << "\"";
        }
      }
    }
  }
}

}  // namespace
}  // namespace mixlab::cuda
