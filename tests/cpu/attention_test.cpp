// MultiHeadAttention on the CPU backend (issue 29) against a float64 reference of Keras 3's
// layer: forward, and backward against the reference's central finite differences, with and
// without the causal mask, with value_dim and output_shape of their own, without biases; then
// the mixed policies against float32 within their epsilon.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/op_access.h"
#include "engine/spec/shape_inference.h"

namespace mixlab {
namespace {

using Vec = std::vector<double>;
constexpr int kBatch = 2;

struct AttentionCase {
  std::string name;
  int steps, features, heads, key_dim, value_dim, out;
  bool causal, bias;
};

std::vector<AttentionCase> cases() {
  return {{"SelfAttention", 5, 6, 2, 3, 0, 0, false, true},
          {"Causal", 6, 4, 3, 2, 0, 0, true, true},
          {"ValueDimAndOutputShape", 4, 5, 2, 3, 4, 7, true, true},
          {"NoBias", 5, 4, 1, 4, 0, 0, false, false}};
}

ModelSpec model_of(const AttentionCase& c) {
  LayerSpec l;
  l.type = LayerType::MultiHeadAttention;
  l.num_heads = c.heads;
  l.key_dim = c.key_dim;
  l.value_dim = c.value_dim;
  l.output_dim = c.out;
  l.causal = c.causal;
  l.use_bias = c.bias;
  ModelSpec spec;
  spec.name = c.name;
  spec.input_shape = {c.steps, c.features};
  spec.layers = {l};
  return spec;
}

// The layer's groups in Keras's order, by kind.
struct Params {
  std::vector<ParamKind> kinds;
  std::vector<Vec> values;
  const Vec& of(ParamKind kind) const {
    static const Vec none;
    for (std::size_t i = 0; i < kinds.size(); ++i)
      if (kinds[i] == kind) return values[i];
    return none;
  }
};

// Keras's MultiHeadAttention in float64: projections (features, heads, dim), scores scaled by
// 1/sqrt(key_dim), the causal mask, softmax over the keys, the output projection.
Vec reference(const AttentionCase& c, const Vec& x, const Params& p) {
  const int s = c.steps, d = c.features, h = c.heads, kd = c.key_dim;
  const int vd = c.value_dim > 0 ? c.value_dim : c.key_dim;
  const int out = c.out > 0 ? c.out : c.features;
  const auto project = [&](ParamKind kernel, ParamKind bias, int dim) {
    const Vec& w = p.of(kernel);
    const Vec& b = p.of(bias);
    Vec r(static_cast<std::size_t>(kBatch * s * h * dim));
    for (int n = 0; n < kBatch * s; ++n)
      for (int o = 0; o < h * dim; ++o) {
        double acc = b.empty() ? 0.0 : b[o];
        for (int i = 0; i < d; ++i) acc += x[n * d + i] * w[i * h * dim + o];
        r[n * h * dim + o] = acc;
      }
    return r;
  };
  const Vec q = project(ParamKind::query_kernel, ParamKind::query_bias, kd);
  const Vec k = project(ParamKind::key_kernel, ParamKind::key_bias, kd);
  const Vec v = project(ParamKind::value_kernel, ParamKind::value_bias, vd);
  Vec o(static_cast<std::size_t>(kBatch * s * h * vd), 0.0);
  for (int b = 0; b < kBatch; ++b)
    for (int hh = 0; hh < h; ++hh)
      for (int i = 0; i < s; ++i) {
        Vec z(s);
        double m = -1e300;
        for (int j = 0; j < s; ++j) {
          double dot = 0.0;
          for (int e = 0; e < kd; ++e)
            dot += q[((b * s + i) * h + hh) * kd + e] * k[((b * s + j) * h + hh) * kd + e];
          z[j] = (c.causal && j > i) ? -1e300 : dot / std::sqrt(static_cast<double>(kd));
          m = std::max(m, z[j]);
        }
        double sum = 0.0;
        for (int j = 0; j < s; ++j) sum += (z[j] = (c.causal && j > i) ? 0.0 : std::exp(z[j] - m));
        for (int j = 0; j < s; ++j)
          for (int e = 0; e < vd; ++e)
            o[((b * s + i) * h + hh) * vd + e] += z[j] / sum * v[((b * s + j) * h + hh) * vd + e];
      }
  const Vec& wo = p.of(ParamKind::kernel);
  const Vec& bo = p.of(ParamKind::bias);
  Vec y(static_cast<std::size_t>(kBatch * s * out));
  for (int n = 0; n < kBatch * s; ++n)
    for (int e = 0; e < out; ++e) {
      double acc = bo.empty() ? 0.0 : bo[e];
      for (int i = 0; i < h * vd; ++i) acc += o[n * h * vd + i] * wo[i * out + e];
      y[n * out + e] = acc;
    }
  return y;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

Vec finite_difference(Vec v, const Vec& dy, const std::function<Vec(const Vec&)>& f) {
  constexpr double h = 1e-4;
  Vec g(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    const double plus = dot(dy, f(v));
    v[i] = keep - h;
    const double minus = dot(dy, f(v));
    v[i] = keep;
    g[i] = (plus - minus) / (2 * h);
  }
  return g;
}

void expect_close(const std::vector<float>& got, const Vec& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 1.0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (!(std::abs(got[i] - want[i]) <= tol * scale) && reported++ < 5) {
      ADD_FAILURE() << what << "[" << i << "]: got " << got[i] << ", want " << want[i];
    }
  }
}

struct AttentionRun {
  std::vector<float> y, dx;
  std::vector<std::vector<float>> grads;
};

AttentionRun run(const AttentionCase& c, Policy policy, const Vec& x, const Params& p,
                 const Vec& dy) {
  const ModelSpec spec = model_of(c);
  const ShapeTable table = infer_shapes(spec, policy);
  auto backend = make_cpu_backend(2);
  ExecutorOptions options;
  options.policy = policy;
  options.batch_size = kBatch;
  options.input_gradient = true;
  auto exec = backend->compile(spec, table, options);
  OpAccess& ops = exec->ops();
  for (std::size_t i = 0; i < p.kinds.size(); ++i) {
    ops.write_parameter(0, p.kinds[i], std::vector<float>(p.values[i].begin(), p.values[i].end()));
  }
  const std::vector<float> xf(x.begin(), x.end());
  const std::vector<std::int32_t> labels(static_cast<std::size_t>(kBatch * c.steps), 0);
  exec->load_batch(xf, labels, kBatch);
  ops.forward(Phase::train, 1);
  AttentionRun r;
  r.y = ops.read_output();
  ops.set_output_gradient(std::vector<float>(dy.begin(), dy.end()));
  ops.backward();
  r.dx = ops.read_input_gradient();
  for (const ParamKind kind : p.kinds) r.grads.push_back(ops.read_gradient(0, kind));
  return r;
}

struct Inputs {
  Vec x, dy;
  Params params;
};

// bfloat16-exact values, so that a 16-bit policy's cast of them is exact.
Inputs make_inputs(const AttentionCase& c) {
  std::mt19937_64 rng(7);
  const auto value = [&](double scale) {
    const double v = std::uniform_real_distribution<double>(-scale, scale)(rng);
    return std::ldexp(std::round(std::ldexp(v, 7)), -7);
  };
  Inputs in;
  const ShapeTable table = infer_shapes(model_of(c));
  for (int i = 0; i < kBatch * c.steps * c.features; ++i) in.x.push_back(value(1.5));
  for (const ParamGroup& g : table.layers[0].params) {
    in.params.kinds.push_back(g.kind);
    Vec v;
    for (std::int64_t i = 0; i < g.count(); ++i) v.push_back(value(0.6));
    in.params.values.push_back(v);
  }
  for (std::int64_t i = 0; i < kBatch * num_elements(table.output_shape); ++i) {
    in.dy.push_back(value(1.0));
  }
  return in;
}

class CpuAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(CpuAttention, Float32MatchesFloat64ReferenceAndFiniteDifferences) {
  const AttentionCase& c = GetParam();
  const Inputs in = make_inputs(c);
  const AttentionRun r = run(c, Policy::float32, in.x, in.params, in.dy);
  expect_close(r.y, reference(c, in.x, in.params), 1e-5, "forward");
  expect_close(
      r.dx,
      finite_difference(in.x, in.dy, [&](const Vec& x) { return reference(c, x, in.params); }),
      2e-4, "input gradient");
  for (std::size_t g = 0; g < in.params.kinds.size(); ++g) {
    expect_close(r.grads[g],
                 finite_difference(in.params.values[g], in.dy,
                                   [&](const Vec& v) {
                                     Params p = in.params;
                                     p.values[g] = v;
                                     return reference(c, in.x, p);
                                   }),
                 2e-4, std::string(to_string(in.params.kinds[g])) + " gradient");
  }
}

TEST_P(CpuAttention, MixedPoliciesMatchFloat32WithinTheirEpsilon) {
  const AttentionCase& c = GetParam();
  const Inputs in = make_inputs(c);
  const AttentionRun ref = run(c, Policy::float32, in.x, in.params, in.dy);
  for (const Policy policy : {Policy::mixed_bfloat16, Policy::mixed_float16}) {
    SCOPED_TRACE(std::string(to_string(policy)));
    const double eps = policy == Policy::mixed_bfloat16 ? 1.0 / 256 : 1.0 / 2048;
    const AttentionRun r = run(c, policy, in.x, in.params, in.dy);
    const auto as_vec = [](const std::vector<float>& v) { return Vec(v.begin(), v.end()); };
    // Five chained roundings (projections, scores, weights, weighted values, output) and more
    // for the long dot products of backward.
    expect_close(r.y, as_vec(ref.y), 24 * eps, "forward");
    expect_close(r.dx, as_vec(ref.dx), 48 * eps, "input gradient");
    for (std::size_t g = 0; g < ref.grads.size(); ++g) {
      expect_close(r.grads[g], as_vec(ref.grads[g]), 48 * eps,
                   std::string(to_string(in.params.kinds[g])) + " gradient");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layers, CpuAttention, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace mixlab
