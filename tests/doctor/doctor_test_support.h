// Profiles with round figures for the doctor's tests, so that counts and times can be computed
// by hand.
#pragma once

#include "engine/doctor/device_profile.h"
#include "engine/spec/model_spec.h"

namespace mixlab::doctor::test {

// A GPU of compute capability 8.0 with tensor cores: 1 TFLOP/s float32, 4 in 16 bits, 100 GB/s,
// no SMs (no quantization), no launch overhead, 10 GB.
inline DeviceProfile round_gpu() {
  DeviceProfile p;
  p.name = "Round GPU";
  p.kind = "cuda";
  p.compute_capability = "8.0";
  p.tensor_cores = true;
  p.memory_bytes = 10'000'000'000;
  p.bandwidth_bytes_per_s = 100e9;
  p.host_link_bytes_per_s = 10e9;
  p.peak.float32 = 1e12;
  p.peak.float16_acc32 = 4e12;
  p.peak.bfloat16 = 4e12;
  return p;
}

// An AVX2 CPU: 0.1 TFLOP/s, 20 GB/s, no bf16 kernels.
inline DeviceProfile round_cpu() {
  DeviceProfile p;
  p.name = "Round CPU";
  p.kind = "cpu";
  p.threads = 2;
  p.isa = CpuIsa::avx2;
  p.bandwidth_bytes_per_s = 20e9;
  p.peak.float32 = 100e9;
  return p;
}

inline ModelSpec model(const char* json) { return parse_model_json(json, "test model"); }

}  // namespace mixlab::doctor::test
