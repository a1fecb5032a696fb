// MixLab's CUDA kernels (engine/backend/cuda/kernels_*.cu) against host loops of the same shared
// math (engine/core/half.h, engine/ops/*.h), per dtype, on random data. Tolerances: exact where
// both sides do the same IEEE operations (casts, copies, pooling's max, the optimizer with
// --fmad=false), a few float32 ulps where the device's expf/erff/tanhf/logf differ from glibc's,
// and one rounding step of the 16-bit type on top. Skipped without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cuda/kernels.h"
#include "engine/core/half.h"
#include "engine/ops/activation.h"
#include "engine/ops/dropout.h"
#include "engine/ops/loss.h"
#include "engine/ops/loss_scale.h"
#include "engine/ops/optimizer.h"

namespace mixlab::cuda {
namespace {

namespace k = kernels;

void cuda_ok(cudaError_t err, const char* expr) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(expr) + ": " + cudaGetErrorString(err));
}
#define CUDA_OK(expr) cuda_ok((expr), #expr)

// Device memory for a test, freed at scope exit.
class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    CUDA_OK(cudaMalloc(&ptr_, std::max<std::size_t>(bytes, 1)));
  }
  template <class T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    upload(host.data());
  }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(other.bytes_) {}
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <class T = void>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  void upload(const void* src) { CUDA_OK(cudaMemcpy(ptr_, src, bytes_, cudaMemcpyHostToDevice)); }
  template <class T>
  std::vector<T> download() const {
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<T> out(bytes_ / sizeof(T));
    CUDA_OK(cudaMemcpy(out.data(), ptr_, bytes_, cudaMemcpyDeviceToHost));
    return out;
  }

 private:
  void* ptr_ = nullptr;
  std::size_t bytes_;
};

constexpr DType kDTypes[] = {DType::f32, DType::f16, DType::bf16};

float round_to(DType dtype, float v) {
  switch (dtype) {
    case DType::f16:
      return round_to_f16(v);
    case DType::bf16:
      return round_to_bf16(v);
    case DType::f32:
      break;
  }
  return v;
}

// Host floats (representable in dtype) as the device's bytes, and back.
std::vector<std::uint8_t> encode(const std::vector<float>& v, DType dtype) {
  std::vector<std::uint8_t> bytes(v.size() * dtype_bytes(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(bytes.data() + 4 * i, &v[i], 4);
    } else {
      const std::uint16_t h =
          dtype == DType::f16 ? float_to_f16_bits(v[i]) : float_to_bf16_bits(v[i]);
      std::memcpy(bytes.data() + 2 * i, &h, 2);
    }
  }
  return bytes;
}

std::vector<float> decode(const std::vector<std::uint8_t>& bytes, DType dtype) {
  std::vector<float> v(bytes.size() / dtype_bytes(dtype));
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (dtype == DType::f32) {
      std::memcpy(&v[i], bytes.data() + 4 * i, 4);
    } else {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      v[i] = dtype == DType::f16 ? f16_bits_to_float(h) : bf16_bits_to_float(h);
    }
  }
  return v;
}

DeviceBuffer to_device(const std::vector<float>& v, DType dtype) {
  return DeviceBuffer(encode(v, dtype));
}
std::vector<float> from_device(const DeviceBuffer& b, DType dtype) {
  return decode(b.download<std::uint8_t>(), dtype);
}

std::vector<float> random_values(std::size_t n, DType dtype, float lo, float hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = round_to(dtype, dist(rng));
  return v;
}

// One rounding step of the 16-bit type (relative), plus `rel32` for float32 math differences;
// none at all when both are 0 (casts, copies, exact arithmetic: the same rounding is required).
float tolerance(DType dtype, float want, float rel32, float abs) {
  if (rel32 == 0.0f && abs == 0.0f) return 0.0f;
  const float rel = dtype == DType::f16 ? 1.0f / 1024 : dtype == DType::bf16 ? 1.0f / 128 : 0.0f;
  return abs + (rel + rel32) * std::fabs(want);
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, DType dtype,
                  float rel32, float abs, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const float tol = tolerance(dtype, want[i], rel32, abs);
    const bool ok = (std::isnan(want[i]) && std::isnan(got[i])) || got[i] == want[i] ||
                    std::fabs(got[i] - want[i]) <= tol;
    if (!ok && reported++ < 5) {
      ADD_FAILURE() << what << " [" << to_string(dtype) << "] element " << i << ": got " << got[i]
                    << ", want " << want[i] << " (tolerance " << tol << ")";
    }
  }
}

template <class T>
DeviceBuffer device_value(const T& v) {
  DeviceBuffer b(sizeof(T));
  b.upload(&v);
  return b;
}
template <class T>
T host_value(const DeviceBuffer& b) {
  return b.download<T>().at(0);
}

class Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount failed: " << cudaGetErrorString(err);
    }
    if (count == 0) GTEST_SKIP() << "no CUDA device: cudaGetDeviceCount returned 0";
  }
};

TEST_F(Kernels, CastBetweenAllTypes) {
  std::vector<float> base = random_values(4099, DType::f32, -3.0f, 3.0f, 1);
  base[0] = 70000.0f;  // past float16's range
  base[1] = 3e-6f;     // float16 subnormal
  base[2] = -0.0f;
  base[3] = std::numeric_limits<float>::infinity();
  for (DType from : kDTypes) {
    std::vector<float> src = base;
    for (auto& v : src) v = round_to(from, v);
    const DeviceBuffer d_src = to_device(src, from);
    for (DType to : kDTypes) {
      DeviceBuffer d_dst(src.size() * dtype_bytes(to));
      k::cast(d_src.as(), from, d_dst.as(), to, static_cast<std::int64_t>(src.size()), nullptr);
      std::vector<float> want(src.size());
      for (std::size_t i = 0; i < src.size(); ++i) want[i] = round_to(to, src[i]);
      expect_close(from_device(d_dst, to), want, to, 0.0f, 0.0f,
                   std::string("cast from ") + std::string(to_string(from)));
    }
  }
}

TEST_F(Kernels, GatherBatchTakesIndexedSamplesAndZeroesPadding) {
  const int samples = 50, batch = 16, real = 11;
  const std::int64_t per_sample = 3 * 5 * 7;
  std::vector<std::uint8_t> images(static_cast<std::size_t>(samples * per_sample));
  for (std::size_t i = 0; i < images.size(); ++i)
    images[i] = static_cast<std::uint8_t>(i * 37 + 11);
  std::vector<std::int32_t> labels(samples);
  for (int i = 0; i < samples; ++i) labels[i] = i % 10;
  std::vector<std::int64_t> indices(batch);
  for (int r = 0; r < batch; ++r) indices[r] = (r * 17 + 3) % samples;
  StepParams params;
  params.real_samples = real;
  const DeviceBuffer d_images(images), d_labels(labels), d_indices(indices);
  const DeviceBuffer d_params = device_value(params);
  DeviceBuffer d_out(batch * per_sample * sizeof(float)),
      d_out_labels(batch * sizeof(std::int32_t));
  CUDA_OK(cudaMemset(d_out.as(), 0xff, batch * per_sample * sizeof(float)));
  k::gather_batch(d_images.as<std::uint8_t>(), d_labels.as<std::int32_t>(),
                  d_indices.as<std::int64_t>(), d_params.as<StepParams>(), batch, per_sample,
                  d_out.as<float>(), d_out_labels.as<std::int32_t>(), nullptr);
  const auto out = d_out.download<float>();
  const auto out_labels = d_out_labels.download<std::int32_t>();
  for (int r = 0; r < batch; ++r) {
    EXPECT_EQ(out_labels[r], r < real ? labels[indices[r]] : 0) << r;
    for (std::int64_t j = 0; j < per_sample; ++j) {
      const float want = r < real ? static_cast<float>(images[indices[r] * per_sample + j]) : 0.0f;
      ASSERT_EQ(out[r * per_sample + j], want) << r << ", " << j;
    }
  }
}

TEST_F(Kernels, ActivationsForwardAndBackward) {
  const std::size_t n = 10007;
  for (DType dt : kDTypes) {
    const auto x = random_values(n, dt, -5.0f, 5.0f, 2);
    const auto dy = random_values(n, dt, -1.0f, 1.0f, 3);
    const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
    for (ActivationFn fn : {ActivationFn::linear, ActivationFn::relu, ActivationFn::sigmoid,
                            ActivationFn::tanh, ActivationFn::gelu}) {
      const std::string name = "activation " + std::to_string(static_cast<int>(fn));
      DeviceBuffer d_y(n * dtype_bytes(dt)), d_dx(n * dtype_bytes(dt));
      k::activation_forward(fn, d_x.as(), d_y.as(), dt, static_cast<std::int64_t>(n), nullptr);
      const auto y = from_device(d_y, dt);
      std::vector<float> want_y(n), want_dx(n);
      for (std::size_t i = 0; i < n; ++i) want_y[i] = round_to(dt, activation_forward(fn, x[i]));
      // gelu for x below -3: 1 + erff(x / sqrt 2) is about 1e-6, so an ulp of erff (CUDA's is
      // within 2 ulp, glibc's another implementation) moves it by about 1e-7 absolute.
      expect_close(y, want_y, dt, 4e-6f, fn == ActivationFn::gelu ? 1e-6f : 1e-7f,
                   name + " forward");
      // Backward from the device's own output, as the executor does.
      k::activation_backward(fn, d_x.as(), d_y.as(), d_dy.as(), d_dx.as(), dt,
                             static_cast<std::int64_t>(n), nullptr);
      for (std::size_t i = 0; i < n; ++i) {
        want_dx[i] = round_to(dt, activation_backward(fn, x[i], y[i], dy[i]));
      }
      expect_close(from_device(d_dx, dt), want_dx, dt, 4e-6f, 1e-7f, name + " backward");
    }
  }
}

TEST_F(Kernels, SoftmaxForwardAndBackward) {
  struct Case {
    std::int64_t rows;
    int k;
  };
  for (DType dt : kDTypes) {
    for (const Case c :
         {Case{300, 1}, Case{300, 10}, Case{257, 33}, Case{40, 1000}, Case{9, 7000}}) {
      if (c.k > 6000 && dt != DType::f32) continue;  // float32 only: one thread per row
      const std::size_t n = static_cast<std::size_t>(c.rows) * c.k;
      const auto x = random_values(n, dt, -6.0f, 6.0f, 4);
      const auto dy = random_values(n, dt, -1.0f, 1.0f, 5);
      const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
      DeviceBuffer d_y(n * dtype_bytes(dt)), d_dx(n * dtype_bytes(dt));
      k::softmax_forward(d_x.as(), d_y.as(), dt, c.rows, c.k, nullptr);
      k::softmax_backward(d_y.as(), d_dy.as(), d_dx.as(), dt, c.rows, c.k, nullptr);
      const auto y = from_device(d_y, dt);
      std::vector<float> want_y(n), want_dx(n), row(static_cast<std::size_t>(c.k));
      for (std::int64_t r = 0; r < c.rows; ++r) {
        softmax_row(x.data() + r * c.k, c.k, row.data());
        for (int j = 0; j < c.k; ++j) want_y[r * c.k + j] = round_to(dt, row[j]);
        softmax_backward_row(y.data() + r * c.k, dy.data() + r * c.k, c.k, row.data());
        for (int j = 0; j < c.k; ++j) want_dx[r * c.k + j] = round_to(dt, row[j]);
      }
      const std::string what = "softmax k=" + std::to_string(c.k);
      expect_close(y, want_y, dt, 1e-5f, 1e-9f, what + " forward");
      expect_close(from_device(d_dx, dt), want_dx, dt, 1e-5f, 1e-7f, what + " backward");
    }
  }
}

TEST_F(Kernels, ScaleOffsetDropoutAndBias) {
  const std::int64_t rows = 301;
  const int channels = 37;
  const std::size_t n = static_cast<std::size_t>(rows) * channels;
  for (DType dt : kDTypes) {
    const auto x = random_values(n, dt, -3.0f, 3.0f, 6);
    const auto bias = random_values(channels, dt, -1.0f, 1.0f, 7);
    const DeviceBuffer d_x = to_device(x, dt), d_bias = to_device(bias, dt);
    DeviceBuffer d_y(n * dtype_bytes(dt));

    k::scale_offset(d_x.as(), d_y.as(), dt, 1.0f / 255.0f, -0.5f, static_cast<std::int64_t>(n),
                    nullptr);
    std::vector<float> want(n);
    for (std::size_t i = 0; i < n; ++i) want[i] = round_to(dt, x[i] * (1.0f / 255.0f) + -0.5f);
    expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f, "scale_offset");

    for (const int train : {1, 0}) {
      StepParams params;
      params.step = 12345;
      params.train = train;
      const DeviceBuffer d_params = device_value(params);
      k::dropout(d_x.as(), d_y.as(), dt, static_cast<std::int64_t>(n), 0.3, 99, 4,
                 d_params.as<StepParams>(), nullptr);
      const DropoutMask mask = make_dropout_mask(0.3, 99, 4, params.step);
      for (std::size_t i = 0; i < n; ++i)
        want[i] = train ? round_to(dt, x[i] * mask.factor(i)) : x[i];
      expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f,
                   "dropout train=" + std::to_string(train));
    }

    CUDA_OK(cudaMemcpy(d_y.as(), d_x.as(), n * dtype_bytes(dt), cudaMemcpyDeviceToDevice));
    k::add_bias(d_y.as(), d_bias.as(), dt, rows, channels, nullptr);
    for (std::size_t i = 0; i < n; ++i) want[i] = round_to(dt, x[i] + bias[i % channels]);
    expect_close(from_device(d_y, dt), want, dt, 0.0f, 0.0f, "add_bias");
  }
}

TEST_F(Kernels, BiasGradientSumsColumnsAndOverwrites) {
  struct Case {
    std::int64_t rows;
    int channels;
  };
  for (DType dt : kDTypes) {
    for (const Case c : {Case{1, 10}, Case{3, 17}, Case{256, 128}, Case{200000, 10},
                         Case{30001, 129}, Case{5000, 300}, Case{2000, 4096}}) {
      const std::size_t n = static_cast<std::size_t>(c.rows) * c.channels;
      const auto dy = random_values(n, dt, -1.0f, 1.0f, 8);
      const DeviceBuffer d_dy = to_device(dy, dt);
      DeviceBuffer d_db(c.channels * sizeof(float));
      CUDA_OK(cudaMemset(d_db.as(), 0x7f, c.channels * sizeof(float)));  // garbage to overwrite
      k::bias_gradient(d_dy.as(), dt, c.rows, c.channels, d_db.as<float>(), nullptr);
      const auto db = d_db.download<float>();
      for (int ch = 0; ch < c.channels; ++ch) {
        double sum = 0.0, sum_abs = 0.0;
        for (std::int64_t r = 0; r < c.rows; ++r) {
          sum += dy[r * c.channels + ch];
          sum_abs += std::fabs(dy[r * c.channels + ch]);
        }
        ASSERT_NEAR(db[ch], sum, 1e-6 * sum_abs + 1e-6)
            << to_string(dt) << " rows " << c.rows << " channels " << c.channels << " column "
            << ch;
      }
    }
  }
}

TEST_F(Kernels, PadAndCropNhwc) {
  const int n = 2, h = 5, w = 6, c = 3, top = 1, left = 2, hp = 7, wp = 9;
  for (DType dt : kDTypes) {
    const std::size_t count = static_cast<std::size_t>(n) * h * w * c;
    const std::size_t padded = static_cast<std::size_t>(n) * hp * wp * c;
    const auto x = random_values(count, dt, -2.0f, 2.0f, 9);
    const DeviceBuffer d_x = to_device(x, dt);
    DeviceBuffer d_xp(padded * dtype_bytes(dt)), d_back(count * dtype_bytes(dt));
    CUDA_OK(cudaMemset(d_xp.as(), 0, padded * dtype_bytes(dt)));
    k::pad_nhwc(d_x.as(), d_xp.as(), dt, n, h, w, c, top, left, hp, wp, nullptr);
    k::crop_nhwc(d_xp.as(), d_back.as(), dt, n, h, w, c, top, left, hp, wp, nullptr);
    std::vector<float> want(padded, 0.0f);
    for (int b = 0; b < n; ++b)
      for (int y = 0; y < h; ++y)
        for (int xx = 0; xx < w; ++xx)
          for (int ch = 0; ch < c; ++ch)
            want[((b * hp + y + top) * wp + xx + left) * c + ch] =
                x[((b * h + y) * w + xx) * c + ch];
    expect_close(from_device(d_xp, dt), want, dt, 0.0f, 0.0f, "pad");
    expect_close(from_device(d_back, dt), x, dt, 0.0f, 0.0f, "crop");
  }
}

// The CPU backend's semantics (oneDNN): max over the inside of the window, gradient to the first
// maximum in window order; average over the inside only.
void pool_reference(bool max, const std::vector<float>& x, const std::vector<float>& dy,
                    const k::PoolShape& s, DType dt, std::vector<float>& y,
                    std::vector<float>& dx) {
  y.assign(static_cast<std::size_t>(s.n) * s.oh * s.ow * s.c, 0.0f);
  std::vector<float> acc(static_cast<std::size_t>(s.n) * s.h * s.w * s.c, 0.0f);
  for (int b = 0; b < s.n; ++b)
    for (int oy = 0; oy < s.oh; ++oy)
      for (int ox = 0; ox < s.ow; ++ox)
        for (int ch = 0; ch < s.c; ++ch) {
          float best = -INFINITY, sum = 0.0f;
          int best_at = -1, count = 0;
          for (int ky = 0; ky < s.kh; ++ky)
            for (int kx = 0; kx < s.kw; ++kx) {
              const int iy = oy * s.sh + ky - s.pad_top, ix = ox * s.sw + kx - s.pad_left;
              if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
              const int at = ((b * s.h + iy) * s.w + ix) * s.c + ch;
              if (best_at < 0 || x[at] > best) {
                best = x[at];
                best_at = at;
              }
              sum += x[at];
              ++count;
            }
          const int o = ((b * s.oh + oy) * s.ow + ox) * s.c + ch;
          y[o] = round_to(dt, max ? best : sum / static_cast<float>(count));
          if (max) {
            acc[best_at] += dy[o];
          } else {
            for (int ky = 0; ky < s.kh; ++ky)
              for (int kx = 0; kx < s.kw; ++kx) {
                const int iy = oy * s.sh + ky - s.pad_top, ix = ox * s.sw + kx - s.pad_left;
                if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
                acc[((b * s.h + iy) * s.w + ix) * s.c + ch] += dy[o] / static_cast<float>(count);
              }
          }
        }
  dx.resize(acc.size());
  for (std::size_t i = 0; i < acc.size(); ++i) dx[i] = round_to(dt, acc[i]);
}

TEST_F(Kernels, PoolingForwardAndBackward) {
  struct Case {
    const char* name;
    k::PoolShape s;
  };
  auto shape = [](int h, int w, int k, int stride, int pad_top, int pad_bottom, int pad_left,
                  int pad_right) {
    k::PoolShape s;
    s.n = 3;
    s.h = h;
    s.w = w;
    s.c = 5;
    s.kh = s.kw = k;
    s.sh = s.sw = stride;
    s.pad_top = pad_top;
    s.pad_left = pad_left;
    s.oh = (h + pad_top + pad_bottom - k) / stride + 1;
    s.ow = (w + pad_left + pad_right - k) / stride + 1;
    return s;
  };
  const Case cases[] = {
      {"2x2 stride 2 valid", shape(8, 6, 2, 2, 0, 0, 0, 0)},
      {"3x3 stride 2 same (asymmetric)", shape(7, 8, 3, 2, 1, 1, 0, 1)},
      {"3x3 stride 1 same", shape(6, 5, 3, 1, 1, 1, 1, 1)},
      {"2x2 stride 1 same (bottom/right only)", shape(5, 7, 2, 1, 0, 1, 0, 1)},
  };
  for (DType dt : kDTypes) {
    for (const Case& c : cases) {
      const k::PoolShape& s = c.s;
      const std::size_t n_in = static_cast<std::size_t>(s.n) * s.h * s.w * s.c;
      const std::size_t n_out = static_cast<std::size_t>(s.n) * s.oh * s.ow * s.c;
      // Distinct values (no ties), exact in every dtype: multiples of 1/16 below 8.
      std::vector<float> x(n_in);
      for (std::size_t i = 0; i < n_in; ++i)
        x[i] = static_cast<float>(static_cast<int>(i % 255) - 127) / 16.0f;
      std::shuffle(x.begin(), x.end(), std::mt19937(10));
      const auto dy = random_values(n_out, dt, -1.0f, 1.0f, 11);
      const DeviceBuffer d_x = to_device(x, dt), d_dy = to_device(dy, dt);
      for (const bool max : {true, false}) {
        DeviceBuffer d_y(n_out * dtype_bytes(dt)), d_dx(n_in * dtype_bytes(dt));
        CUDA_OK(cudaMemset(d_dx.as(), 0x7f, n_in * dtype_bytes(dt)));  // must be overwritten
        k::pool_forward(max, d_x.as(), d_y.as(), dt, s, nullptr);
        k::pool_backward(max, d_x.as(), d_dy.as(), d_dx.as(), dt, s, nullptr);
        std::vector<float> want_y, want_dx;
        pool_reference(max, x, dy, s, dt, want_y, want_dx);
        const std::string what = std::string(max ? "max " : "average ") + c.name;
        expect_close(from_device(d_y, dt), want_y, dt, 1e-6f, 0.0f, what + " forward");
        expect_close(from_device(d_dx, dt), want_dx, dt, 1e-6f, 1e-7f, what + " backward");
      }
    }
  }
}

RowLoss host_row(LossHead head, const float* z, int kk, int label, float grad_mul, float* dz) {
  switch (head) {
    case LossHead::softmax_crossentropy:
      return softmax_crossentropy_row(z, kk, label, grad_mul, dz);
    case LossHead::sigmoid_binary:
      return sigmoid_binary_crossentropy_row(z, kk, label, grad_mul, dz);
    case LossHead::crossentropy_probabilities:
      return crossentropy_probabilities_row(z, kk, label, grad_mul, dz);
    case LossHead::binary_probabilities:
      break;
  }
  return binary_crossentropy_probabilities_row(z, kk, label, grad_mul, dz);
}

TEST_F(Kernels, LossOfEachHead) {
  const int batch = 300, real = 290;
  const float scale = 1024.0f;
  for (DType dt : kDTypes) {
    for (const LossHead head :
         {LossHead::softmax_crossentropy, LossHead::sigmoid_binary,
          LossHead::crossentropy_probabilities, LossHead::binary_probabilities}) {
      const bool binary =
          head == LossHead::sigmoid_binary || head == LossHead::binary_probabilities;
      const bool probabilities =
          head == LossHead::crossentropy_probabilities || head == LossHead::binary_probabilities;
      for (const int kk : binary ? std::vector<int>{1, 4} : std::vector<int>{10, 200}) {
        const std::size_t n = static_cast<std::size_t>(batch) * kk;
        const auto src = probabilities ? random_values(n, dt, 0.02f, 0.98f, 12)
                                       : random_values(n, dt, -4.0f, 4.0f, 12);
        std::vector<std::int32_t> labels(batch);
        for (int r = 0; r < batch; ++r) labels[r] = kk == 1 ? r % 2 : (r * 7) % kk;
        StepParams params;
        params.real_samples = real;
        DeviceState state;
        state.scaler.scale = scale;
        const DeviceBuffer d_src = to_device(src, dt), d_labels(labels);
        const DeviceBuffer d_params = device_value(params);
        DeviceBuffer d_state = device_value(state);
        DeviceBuffer d_scratch(n * sizeof(float)), d_grad(n * dtype_bytes(dt));
        k::begin_step(d_state.as<DeviceState>(), true, nullptr);
        k::loss(head, d_src.as(), dt, d_labels.as<std::int32_t>(), batch, kk,
                d_params.as<StepParams>(), d_state.as<DeviceState>(), d_scratch.as<float>(),
                d_grad.as(), nullptr);
        const auto got_state = host_value<DeviceState>(d_state);
        std::vector<float> want_grad(n, 0.0f);
        double loss_sum = 0.0, correct = 0.0;
        const float grad_mul = scale / static_cast<float>(real);
        for (int r = 0; r < real; ++r) {
          const RowLoss rl = host_row(head, src.data() + r * kk, kk, labels[r], grad_mul,
                                      want_grad.data() + r * kk);
          loss_sum += rl.loss;
          correct += rl.correct;
        }
        for (auto& g : want_grad) g = round_to(dt, g);
        const std::string what =
            "loss head " + std::to_string(static_cast<int>(head)) + " k=" + std::to_string(kk);
        EXPECT_EQ(got_state.step_scale, scale) << what;
        EXPECT_NEAR(got_state.loss_sum, loss_sum, 1e-5 * std::fabs(loss_sum) + 1e-5) << what;
        EXPECT_NEAR(got_state.correct, correct, 1e-3) << what;
        expect_close(from_device(d_grad, dt), want_grad, dt, 2e-5f, grad_mul * 1e-6f,
                     what + " gradient");
      }
    }
  }
}

TEST_F(Kernels, UnscaleAndCheckFindsNonFinite) {
  const std::int64_t n = 100003;
  std::vector<float> g =
      random_values(static_cast<std::size_t>(n) + 1, DType::f32, -100.0f, 100.0f, 13);
  for (const bool scaling : {true, false}) {
    for (const std::int64_t bad_at : {std::int64_t{-1}, std::int64_t{5}, n - 1}) {
      for (const int offset : {0, 1}) {  // 16-byte aligned (float4) and not
        std::vector<float> grads = g;
        if (bad_at >= 0) grads[offset + bad_at] = bad_at == 5 ? NAN : INFINITY;
        DeviceBuffer d_g(grads);
        DeviceState state;
        state.scaler.scale = 65536.0f;
        DeviceBuffer d_state = device_value(state);
        k::begin_step(d_state.as<DeviceState>(), scaling, nullptr);
        k::unscale_and_check(d_g.as<float>() + offset, n, d_state.as<DeviceState>(), nullptr);
        const auto got = d_g.download<float>();
        const auto s = host_value<DeviceState>(d_state);
        EXPECT_EQ(s.nonfinite, bad_at >= 0 ? 1 : 0) << bad_at << " offset " << offset;
        const float inv = 1.0f / (scaling ? 65536.0f : 1.0f);
        for (std::int64_t i = 0; i < n; ++i) {
          const float want = grads[offset + i] * inv;
          if (std::isnan(want)) continue;
          ASSERT_EQ(got[offset + i], want) << i;
        }
      }
    }
  }
}

TEST_F(Kernels, LossScaleStateMachineMatchesTheHost) {
  LossScaleConfig rule = LossScaleConfig::dynamic();
  rule.growth_interval = 3;
  OptimizerParams opt;
  opt.kind = OptimizerKind::adam;
  opt.lr = 0.001;
  DeviceState state;
  state.scaler.scale = 32768.0f;
  DeviceBuffer d_state = device_value(state);
  LossScaleState<float> host = state.scaler;
  std::int64_t iteration = 0;
  const bool finite_steps[] = {true, true, false, true, true, true, true, false, false, true};
  for (const bool finite : finite_steps) {
    k::begin_step(d_state.as<DeviceState>(), true, nullptr);
    if (!finite) {
      std::vector<float> g = {1.0f, INFINITY};
      DeviceBuffer d_g(g);
      k::unscale_and_check(d_g.as<float>(), 2, d_state.as<DeviceState>(), nullptr);
      CUDA_OK(cudaDeviceSynchronize());
    }
    k::update_loss_scale(d_state.as<DeviceState>(), rule, opt, nullptr);
    const auto s = host_value<DeviceState>(d_state);
    const float step_scale = host.scale;
    const bool applied = update_loss_scale(host, rule, finite);
    if (applied) ++iteration;
    EXPECT_EQ(s.step_scale, step_scale);
    EXPECT_EQ(s.applied, applied ? 1 : 0);
    EXPECT_EQ(s.scaler.scale, host.scale);
    EXPECT_EQ(s.scaler.good_steps, host.good_steps);
    EXPECT_EQ(s.iteration, iteration);
    if (applied) EXPECT_EQ(s.lr_t, adam_learning_rate(opt.lr, opt.beta_1, opt.beta_2, iteration));
  }
}

TEST_F(Kernels, OptimizerUpdatesAllParametersAndTheCopy) {
  const std::int64_t n = 20011;
  const auto w0 = random_values(static_cast<std::size_t>(n), DType::f32, -1.0f, 1.0f, 14);
  const auto g = random_values(static_cast<std::size_t>(n), DType::f32, -0.1f, 0.1f, 15);
  const auto m0 = random_values(static_cast<std::size_t>(n), DType::f32, -0.01f, 0.01f, 16);
  const auto v0 = random_values(static_cast<std::size_t>(n), DType::f32, 0.0f, 0.001f, 17);
  struct Case {
    const char* name;
    OptimizerKind kind;
    float momentum;
    bool nesterov;
  };
  for (const Case c : {Case{"sgd", OptimizerKind::sgd, 0.0f, false},
                       Case{"momentum", OptimizerKind::sgd, 0.9f, false},
                       Case{"nesterov", OptimizerKind::sgd, 0.9f, true},
                       Case{"adam", OptimizerKind::adam, 0.0f, false}}) {
    for (const int copy_kind : {-1, 0, 1, 2}) {  // none, f32, f16, bf16
      for (const int applied : {1, 0}) {
        OptimizerParams opt;
        opt.kind = c.kind;
        opt.lr = c.kind == OptimizerKind::adam ? 0.001 : 0.01;
        opt.momentum = c.momentum;
        opt.nesterov = c.nesterov;
        DeviceState state;
        state.applied = applied;
        state.lr_t = adam_learning_rate(opt.lr, opt.beta_1, opt.beta_2, 7);
        const DType copy_dtype = copy_kind <= 0   ? DType::f32
                                 : copy_kind == 1 ? DType::f16
                                                  : DType::bf16;
        DeviceBuffer d_w(w0), d_g(g), d_m(m0), d_v(v0);
        DeviceBuffer d_copy(static_cast<std::size_t>(n) * dtype_bytes(copy_dtype));
        const DeviceBuffer d_state = device_value(state);
        k::optimizer_update(opt, d_w.as<float>(), d_g.as<float>(), d_m.as<float>(), d_v.as<float>(),
                            copy_kind < 0 ? nullptr : d_copy.as(), copy_dtype, n,
                            d_state.as<DeviceState>(), nullptr);
        std::vector<float> w = w0, m = m0, v = v0;
        if (applied) {
          SgdUpdate sgd;
          sgd.lr = static_cast<float>(opt.lr);
          sgd.momentum = opt.momentum;
          sgd.nesterov = opt.nesterov;
          AdamUpdate adam;
          adam.lr_t = state.lr_t;
          adam.one_minus_beta_1 = static_cast<float>(1.0 - opt.beta_1);
          adam.one_minus_beta_2 = static_cast<float>(1.0 - opt.beta_2);
          adam.epsilon = opt.epsilon;
          for (std::int64_t i = 0; i < n; ++i) {
            if (c.kind == OptimizerKind::adam) {
              adam(w[i], m[i], v[i], g[i]);
            } else if (c.momentum != 0.0f) {
              sgd(w[i], m[i], g[i]);
            } else {
              sgd(w[i], g[i]);
            }
          }
        }
        const std::string what = std::string(c.name) + " copy " + std::to_string(copy_kind) +
                                 " applied " + std::to_string(applied);
        // Same IEEE operations on both sides (the kernels are compiled with --fmad=false).
        expect_close(d_w.download<float>(), w, DType::f32, 2e-7f, 0.0f, what + " master");
        expect_close(d_m.download<float>(), m, DType::f32, 2e-7f, 0.0f, what + " state0");
        expect_close(d_v.download<float>(), v, DType::f32, 2e-7f, 0.0f, what + " state1");
        if (copy_kind >= 0 && applied) {
          std::vector<float> want(w.size());
          for (std::size_t i = 0; i < w.size(); ++i) want[i] = round_to(copy_dtype, w[i]);
          expect_close(from_device(d_copy, copy_dtype), want, copy_dtype, 2e-7f, 0.0f,
                       what + " copy");
        }
      }
    }
  }
}

}  // namespace
}  // namespace mixlab::cuda
