// The local CPU's roofs, measured the way the CPU backend computes: oneDNN inner products and a
// convolution at the thread count, and an OpenMP streaming copy, each timed as the best of a few
// repetitions after a warm-up (the machine's capability, not its noise).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/backend/cpu/dnnl_check.h"

namespace mixlab {

namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Clock = std::chrono::steady_clock;

// Seconds per call of `work`: the best of `rounds` rounds of `calls` calls.
double best_seconds(const std::function<void()>& work, int calls, int rounds) {
  work();  // warm-up: first-touch, kernel selection
  double best = 1e30;
  for (int r = 0; r < rounds; ++r) {
    const auto t0 = Clock::now();
    for (int i = 0; i < calls; ++i) work();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count() / calls;
    best = std::min(best, s);
  }
  return best;
}

// FLOP/s of an (m x k) x (k x n) inner product in `type`.
double matmul_flops(const dnnl::engine& eng, dnnl::stream& strm, dnnl::memory::dim m,
                    dnnl::memory::dim k, dnnl::memory::dim n, dt type, int calls) {
  const dnnl::memory::desc src({m, k}, type, tag::ab), dst({m, n}, type, tag::ab),
      weights({n, k}, type, tag::any);
  const auto pd = DNNL_CHECK(dnnl::inner_product_forward::primitive_desc(
      dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src, weights, dst),
      eng));
  dnnl::memory s(src, eng), w(pd.weights_desc(), eng), d(dst, eng);
  std::fill_n(static_cast<char*>(s.get_data_handle()), src.get_size(), 0);
  std::fill_n(static_cast<char*>(w.get_data_handle()), pd.weights_desc().get_size(), 0);
  const dnnl::inner_product_forward prim(pd);
  const double seconds = best_seconds(
      [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}});
        strm.wait();
      },
      calls, 7);
  return 2.0 * static_cast<double>(m * k * n) / seconds;
}

// What a small layer's call costs beyond its work: the mean of a 32-row inner product to 10
// outputs and a softmax over them (the CIFAR heads' sizes), whose arithmetic is negligible.
double call_seconds(const dnnl::engine& eng, dnnl::stream& strm) {
  const dnnl::memory::desc src({32, 64}, dt::f32, tag::ab), dst({32, 10}, dt::f32, tag::ab),
      weights({10, 64}, dt::f32, tag::ab);
  const auto pd = DNNL_CHECK(dnnl::inner_product_forward::primitive_desc(
      dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training, src, weights, dst),
      eng));
  const auto softmax_pd = DNNL_CHECK(dnnl::softmax_forward::primitive_desc(
      dnnl::softmax_forward::desc(dnnl::prop_kind::forward_training, dst, 1), eng));
  dnnl::memory s(src, eng), w(weights, eng), d(dst, eng);
  std::fill_n(static_cast<float*>(s.get_data_handle()), 32 * 64, 0.f);
  std::fill_n(static_cast<float*>(w.get_data_handle()), 10 * 64, 0.f);
  const dnnl::inner_product_forward prim(pd);
  const dnnl::softmax_forward softmax(softmax_pd);
  return best_seconds(
             [&] {
               prim.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, d}});
               strm.wait();
               softmax.execute(strm, {{DNNL_ARG_SRC, d}, {DNNL_ARG_DST, d}});
               strm.wait();
             },
             1000, 3) /
         2.0;
}

double conv_flops(const dnnl::engine& eng, dnnl::stream& strm) {
  constexpr dnnl::memory::dim n = 32, c = 64, h = 16, w = 16, f = 64;
  const dnnl::memory::desc src({n, c, h, w}, dt::f32, tag::nhwc),
      dst({n, f, h, w}, dt::f32, tag::nhwc), weights({f, c, 3, 3}, dt::f32, tag::any);
  const auto pd = DNNL_CHECK(dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_auto, src, weights, dst,
                                      {1, 1}, {1, 1}, {1, 1}),
      eng));
  dnnl::memory s(src, eng), wm(pd.weights_desc(), eng), d(dst, eng);
  std::fill_n(static_cast<char*>(s.get_data_handle()), src.get_size(), 0);
  std::fill_n(static_cast<char*>(wm.get_data_handle()), pd.weights_desc().get_size(), 0);
  const dnnl::convolution_forward prim(pd);
  const double seconds = best_seconds(
      [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_WEIGHTS, wm}, {DNNL_ARG_DST, d}});
        strm.wait();
      },
      10, 5);
  return 2.0 * static_cast<double>(n * h * w * f * c * 9) / seconds;
}

// Bytes read and written per second by a 2x2 max pooling for training (with its workspace), NHWC
// as the backend runs it: oneDNN's pooling runs far below the streaming rate on some CPUs.
double pooling_bytes_per_s(const dnnl::engine& eng, dnnl::stream& strm) {
  constexpr dnnl::memory::dim n = 32, c = 16, h = 28;
  const dnnl::memory::desc src({n, c, h, h}, dt::f32, tag::nhwc),
      dst({n, c, h / 2, h / 2}, dt::f32, tag::nhwc);
  const auto pd = DNNL_CHECK(dnnl::pooling_forward::primitive_desc(
      dnnl::pooling_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::pooling_max,
                                  src, dst, {2, 2}, {2, 2}, {0, 0}, {0, 0}),
      eng));
  dnnl::memory s(src, eng), d(dst, eng), ws(pd.workspace_desc(), eng);
  std::fill_n(static_cast<char*>(s.get_data_handle()), src.get_size(), 0);
  const dnnl::pooling_forward prim(pd);
  const double seconds = best_seconds(
      [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DST, d}, {DNNL_ARG_WORKSPACE, ws}});
        strm.wait();
      },
      20, 5);
  return static_cast<double>(src.get_size() + dst.get_size()) / seconds;
}

// Bytes read and written per second by an in-place update a += s * b of 64 MiB arrays (what an
// optimizer's pass does: no write-allocate traffic), past every cache.
double stream_bytes_per_s() {
  const std::size_t count = std::size_t{16} << 20;  // floats
  std::vector<float> a(count, 1.0f), b(count, 0.5f);
  const auto n = static_cast<std::int64_t>(count);
  float* const x = a.data();
  const float* const y = b.data();
  const double seconds = best_seconds(
      [&] {
#pragma omp parallel for schedule(static)
        for (std::int64_t i = 0; i < n; ++i) x[i] += 1e-3f * y[i];
      },
      4, 5);
  return 3.0 * static_cast<double>(count * sizeof(float)) / seconds;
}

}  // namespace

CpuCalibration calibrate_cpu(int threads) {
  const int t = threads > 0 ? threads : omp_get_num_procs();
  omp_set_num_threads(t);
  CpuCalibration c;
  c.cpu = cpu_model_name();
  c.threads = t;
  c.isa = cpu::onednn_isa();
  const dnnl_version_t* v = dnnl_version();
  c.onednn = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
             std::to_string(v->patch) + " " + cpu::onednn_isa_name();
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  c.f32_matmul_flops = matmul_flops(eng, strm, 512, 1024, 1024, dt::f32, 10);
  // oneDNN's rate at a small batch swings with the layer's widths (power-of-two widths are slow
  // here): the median of three.
  std::vector<double> small{matmul_flops(eng, strm, 32, 1024, 1024, dt::f32, 40),
                            matmul_flops(eng, strm, 32, 3072, 3000, dt::f32, 10),
                            matmul_flops(eng, strm, 32, 3000, 1000, dt::f32, 20)};
  std::sort(small.begin(), small.end());
  c.f32_small_matmul_flops = small[1];
  if (cpu::has_bf16_kernels(c.isa)) {
    c.bf16_matmul_flops = matmul_flops(eng, strm, 512, 1024, 1024, dt::bf16, 10);
  }
  c.f32_conv_flops = conv_flops(eng, strm);
  c.stream_bytes_per_s = stream_bytes_per_s();
  c.pooling_bytes_per_s = pooling_bytes_per_s(eng, strm);
  c.call_overhead_s = call_seconds(eng, strm);
  return c;
}

}  // namespace mixlab
