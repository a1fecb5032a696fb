// Fuzzes a model file: parse_model_json, then (on what parses) the documented round trip
// parse_model_json(to_json(s)) == s, the editor's layer titles, infer_shapes under every
// policy, and the execution plan of what infers (a graph's order and backward schedule). Bad input
// must end in a SpecError; any other exception, a crash, a leak or a broken invariant of the shape
// table is a finding.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "engine/core/error.h"
#include "engine/core/precision.h"
#include "engine/ops/optimizer.h"
#include "engine/plan/execution_plan.h"
#include "engine/spec/layer_text.h"
#include "engine/spec/model_spec.h"
#include "engine/spec/shape_inference.h"
#include "fuzz/fuzz_support.h"

namespace {

using mixlab::fuzz::finding;
using mixlab::fuzz::unexpected_exception;

void check_table(const mixlab::ModelSpec& spec, const mixlab::ShapeTable& table) {
  if (table.layers.size() != spec.layers.size()) finding("infer_shapes: one row per layer");
  std::int64_t params = 0;
  for (const mixlab::LayerInfo& info : table.layers) {
    if (info.param_count < 0 || info.flops < 0 || info.activation_bytes < 0)
      finding("infer_shapes: a negative count in layer " + std::to_string(info.index));
    if (mixlab::num_elements(info.output_shape) <= 0)
      finding("infer_shapes: an empty output in layer " + std::to_string(info.index));
    std::int64_t group_sum = 0;
    for (const mixlab::ParamGroup& group : info.params) group_sum += group.count();
    if (group_sum != info.param_count)
      finding("infer_shapes: parameter groups do not add up in layer " +
              std::to_string(info.index));
    params += info.param_count;
  }
  if (params != table.params_total) finding("infer_shapes: params_total is not the sum");
  if (!table.layers.empty() && table.output_shape != table.layers.back().output_shape)
    finding("infer_shapes: the model's output is not its last layer's");
}

// The plan's invariants: each node reads only nodes before it (or the batch), the output is the
// last node, and every gradient buffer a node uses is one of the plan's.
void check_plan(const mixlab::ExecutionPlan& plan) {
  const int nodes = static_cast<int>(plan.nodes.size());
  if (nodes == 0 || plan.output_node != nodes - 1) finding("build_plan: the output is not last");
  if (plan.gradient_buffers < 2) finding("build_plan: fewer than two gradient buffers");
  for (int n = 0; n < nodes; ++n) {
    const mixlab::PlanNode& node = plan.nodes[static_cast<std::size_t>(n)];
    if (node.inputs.empty()) finding("build_plan: node " + std::to_string(n) + " reads nothing");
    for (const mixlab::PlanInput& in : node.inputs) {
      if (in.node != mixlab::kPlanInput && (in.node < 0 || in.node >= n))
        finding("build_plan: node " + std::to_string(n) + " reads a node that runs later");
    }
    if (node.backward && (node.grad < 0 || node.grad >= plan.gradient_buffers))
      finding("build_plan: node " + std::to_string(n) + " has no gradient buffer");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  mixlab::ModelSpec spec;
  try {
    spec = mixlab::parse_model_json(text, "fuzz.json");
  } catch (const mixlab::SpecError&) {
    return 0;
  } catch (const std::exception& e) {
    unexpected_exception("parse_model_json", e);
  }

  // The file format's contract (model_spec.h): what parses writes back to the same spec.
  try {
    const std::string written = mixlab::to_json(spec);
    const mixlab::ModelSpec again = mixlab::parse_model_json(written, "to_json");
    if (!(again == spec)) finding("parse_model_json(to_json(s)) != s; to_json wrote:\n" + written);
  } catch (const std::exception& e) {
    unexpected_exception("to_json / parse_model_json of a parsed spec", e);
  }

  try {
    for (int i = 0; i < static_cast<int>(spec.layers.size()); ++i) {
      (void)mixlab::layer_title(spec, i);
      (void)mixlab::layer_summary(spec.layers[static_cast<std::size_t>(i)]);
    }
  } catch (const std::exception& e) {
    unexpected_exception("layer_title / layer_summary", e);
  }

  for (const mixlab::Policy policy : {mixlab::Policy::float32, mixlab::Policy::mixed_float16,
                                      mixlab::Policy::mixed_bfloat16}) {
    mixlab::ShapeTable table;
    try {
      table = mixlab::infer_shapes(spec, policy);
      check_table(spec, table);
    } catch (const mixlab::SpecError&) {
      return 0;  // the same spec fails under every policy
    } catch (const std::exception& e) {
      unexpected_exception("infer_shapes", e);
    }
    try {
      check_plan(mixlab::build_plan(
          spec, table, 2, mixlab::default_optimizer(mixlab::OptimizerKind::sgd), {}, true));
    } catch (const std::exception& e) {
      unexpected_exception("build_plan", e);
    }
  }
  return 0;
}
