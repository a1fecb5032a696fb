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
#include "engine/backend/cpu/elementwise.h"

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

// FLOP/s of a 3x3 `channels` -> `channels` convolution's forward (training), NHWC, 32 images of
// `size` x `size`, in `type`, as the backend runs it.
double conv_flops(const dnnl::engine& eng, dnnl::stream& strm, dt type, dnnl::memory::dim channels,
                  dnnl::memory::dim size) {
  const dnnl::memory::dim n = 32, c = channels, h = size, w = size, f = channels;
  const dnnl::memory::desc src({n, c, h, w}, type, tag::nhwc), dst({n, f, h, w}, type, tag::nhwc),
      weights({f, c, 3, 3}, type, tag::any);
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

// FLOP/s of the weight gradient of conv_flops's convolution (float32 weights gradient, as the
// backend keeps it), in `type`.
double conv_weights_flops(const dnnl::engine& eng, dnnl::stream& strm, dt type,
                          dnnl::memory::dim channels, dnnl::memory::dim size) {
  const dnnl::memory::dim n = 32, c = channels, h = size, w = size, f = channels;
  const dnnl::memory::desc src({n, c, h, w}, type, tag::nhwc), dst({n, f, h, w}, type, tag::nhwc),
      weights({f, c, 3, 3}, type, tag::any), weights_grad({f, c, 3, 3}, dt::f32, tag::any);
  const auto fwd_pd = DNNL_CHECK(dnnl::convolution_forward::primitive_desc(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_auto, src, weights, dst, {1, 1},
                                      {1, 1}, {1, 1}),
      eng));
  const auto pd = DNNL_CHECK(dnnl::convolution_backward_weights::primitive_desc(
      dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_auto, src, weights_grad,
                                               dst, {1, 1}, {1, 1}, {1, 1}),
      eng, fwd_pd));
  dnnl::memory s(src, eng), d(dst, eng), g(pd.diff_weights_desc(), eng);
  std::fill_n(static_cast<char*>(s.get_data_handle()), src.get_size(), 0);
  std::fill_n(static_cast<char*>(d.get_data_handle()), dst.get_size(), 0);
  const dnnl::convolution_backward_weights prim(pd);
  const double seconds = best_seconds(
      [&] {
        prim.execute(strm, {{DNNL_ARG_SRC, s}, {DNNL_ARG_DIFF_DST, d}, {DNNL_ARG_DIFF_WEIGHTS, g}});
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
// MixLab's elementwise add, 2M elements of `storage`: two read and one written per element.
double elementwise_bytes_per_s(cpu::Storage storage) {
  constexpr std::int64_t n = std::int64_t{2} << 20;
  return 3.0 * static_cast<double>(n * static_cast<std::int64_t>(cpu::storage_bytes(storage))) /
         cpu::elementwise_add_seconds(storage, n);
}

// oneDNN's batch normalization, training forward then backward (with scale and shift) on
// 32x32x32x16 NHWC in `type`, as bytes per second of what the doctor's model counts for the
// pair: forward the input twice and the output, backward the input twice, the gradient twice
// and the input's gradient (float32, 12 bytes an element, whatever the tensors' type).
double bnorm_bytes_per_s(const dnnl::engine& eng, dnnl::stream& strm, dt type) {
  constexpr dnnl::memory::dim n = 32, c = 16, h = 32;
  const dnnl::memory::desc data({n, c, h, h}, type, tag::nhwc);
  const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
  const auto fwd_pd = DNNL_CHECK(dnnl::batch_normalization_forward::primitive_desc(
      dnnl::batch_normalization_forward::desc(dnnl::prop_kind::forward_training, data, 1e-3f,
                                              flags),
      eng));
  const auto bwd_pd = DNNL_CHECK(dnnl::batch_normalization_backward::primitive_desc(
      dnnl::batch_normalization_backward::desc(dnnl::prop_kind::backward, data, data, 1e-3f, flags),
      eng, fwd_pd));
  dnnl::memory x(data, eng), y(data, eng), dy(data, eng), dx(data, eng);
  for (dnnl::memory* m : {&x, &y, &dy, &dx}) {
    std::fill_n(static_cast<char*>(m->get_data_handle()), data.get_size(), 0);
  }
  const dnnl::memory::desc vec({c}, dt::f32, tag::a);
  std::vector<float> values(7 * c, 1.0f);
  const auto at = [&](int i) { return dnnl::memory(vec, eng, values.data() + i * c); };
  const dnnl::batch_normalization_forward fwd(fwd_pd);
  const dnnl::batch_normalization_backward bwd(bwd_pd);
  const double seconds = best_seconds(
      [&] {
        fwd.execute(strm, {{DNNL_ARG_SRC, x},
                           {DNNL_ARG_DST, y},
                           {DNNL_ARG_MEAN, at(0)},
                           {DNNL_ARG_VARIANCE, at(1)},
                           {DNNL_ARG_SCALE, at(2)},
                           {DNNL_ARG_SHIFT, at(3)}});
        bwd.execute(strm, {{DNNL_ARG_SRC, x},
                           {DNNL_ARG_MEAN, at(0)},
                           {DNNL_ARG_VARIANCE, at(1)},
                           {DNNL_ARG_DIFF_DST, dy},
                           {DNNL_ARG_DIFF_SRC, dx},
                           {DNNL_ARG_SCALE, at(2)},
                           {DNNL_ARG_SHIFT, at(3)},
                           {DNNL_ARG_DIFF_SCALE, at(4)},
                           {DNNL_ARG_DIFF_SHIFT, at(5)}});
        strm.wait();
      },
      5, 5);
  const double elements = static_cast<double>(n * c * h * h);
  const double bytes = type == dt::bf16 ? 2.0 : 4.0;
  return (5.0 * bytes + 12.0) * elements / seconds;
}

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
  c.f32_conv_flops = conv_flops(eng, strm, dt::f32, 64, 16);
  c.f32_narrow_conv_flops = conv_flops(eng, strm, dt::f32, 16, 32);
  if (cpu::has_bf16_kernels(c.isa)) {
    c.bf16_conv_flops = conv_flops(eng, strm, dt::bf16, 64, 16);
    c.bf16_narrow_conv_flops = conv_flops(eng, strm, dt::bf16, 16, 32);
    c.bf16_narrow_conv_weights_flops = conv_weights_flops(eng, strm, dt::bf16, 16, 32);
  }
  c.stream_bytes_per_s = stream_bytes_per_s();
  c.f32_elementwise_bytes_per_s = elementwise_bytes_per_s(cpu::Storage::f32);
  c.f32_bnorm_bytes_per_s = bnorm_bytes_per_s(eng, strm, dt::f32);
  if (cpu::has_bf16_kernels(c.isa)) {
    c.bf16_elementwise_bytes_per_s = elementwise_bytes_per_s(cpu::Storage::bf16);
    c.bf16_bnorm_bytes_per_s = bnorm_bytes_per_s(eng, strm, dt::bf16);
  }
  c.pooling_bytes_per_s = pooling_bytes_per_s(eng, strm);
  c.call_overhead_s = call_seconds(eng, strm);
  return c;
}

}  // namespace mixlab
