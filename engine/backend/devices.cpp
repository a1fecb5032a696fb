// Every device this build can train on, and a backend by device name: the CPU (oneDNN, always),
// and CUDA GPUs through libmixlab-cuda.so, loaded at run time (engine/backend/cuda_loader.h).
// GPUs are discovered through the static CUDA runtime linked into the engine (it needs only the
// driver); whether the CUDA backend can train on one is the plugin's answer.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda_loader.h"
#include "engine/core/error.h"

#if defined(MIXLAB_HAVE_CUDA)
#include "engine/backend/cuda/cuda_devices.h"
#endif

namespace mixlab {

namespace {

constexpr const char* kDeviceNames = "cpu, cuda, cuda:N, auto";

std::vector<DeviceInfo> discovered_gpus() {
#if defined(MIXLAB_HAVE_CUDA)
  return cuda::list_devices();
#else
  return {};
#endif
}

std::string gpu_name(int gpu) {
  return "cuda:" + std::to_string(gpu);
}

// A CUDA backend on `gpu`, or BackendError saying why there is none: the plugin cannot be
// loaded, there is no driver or GPU, no such GPU, or the backend fails to start on it.
std::unique_ptr<Backend> create_cuda_backend(int gpu) {
  const cuda::PluginLoad& plugin = cuda::plugin();
  if (plugin.api == nullptr) throw BackendError(plugin.error);
  std::string why;
  try {
    std::unique_ptr<Backend> backend = plugin.api->create_backend(gpu);
    if (backend) return backend;
    why = "the CUDA backend returned no backend";
  } catch (const std::exception& e) {
    why = e.what();
  }
  const std::vector<DeviceInfo> gpus = discovered_gpus();
  if (gpus.empty()) throw BackendError("no NVIDIA GPU or driver found (" + why + ")");
  if (gpu >= static_cast<int>(gpus.size())) {
    throw BackendError(
        "no such device: " + gpu_name(gpu) + " (this machine has " + std::to_string(gpus.size()) +
        " GPU" + (gpus.size() == 1 ? "" : "s") + ": cuda:0" +
        (gpus.size() > 1 ? " to cuda:" + std::to_string(gpus.size() - 1) : "") + ")");
  }
  throw BackendError("the CUDA backend cannot use " + gpu_name(gpu) + " (" +
                     gpus[static_cast<std::size_t>(gpu)].name + "): " + why);
}

// What trying the first GPU found, once per process: creating a backend is the only reliable
// answer (the driver, the GPU, cuBLASLt and cuDNN all have to start).
struct CudaProbe {
  std::string reason;  // empty: the backend trains on cuda:0
  DeviceInfo device;   // cuda:0 as its backend reports it
};

const CudaProbe& probe() {
  static const CudaProbe result = [] {
    CudaProbe p;
    try {
      p.device = create_cuda_backend(0)->device();
    } catch (const std::exception& e) {
      p.reason = e.what();
    }
    return p;
  }();
  return result;
}

std::string format_gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return text;
}

// "cuda:3" -> 3; "cuda" -> 0; anything else -> -1.
int parse_gpu(std::string_view device) {
  if (device == "cuda") return 0;
  constexpr std::string_view prefix = "cuda:";
  if (device.substr(0, prefix.size()) != prefix || device.size() == prefix.size()) return -1;
  if (device.size() - prefix.size() > 4) return -1;
  int n = 0;
  for (const char c : device.substr(prefix.size())) {
    if (c < '0' || c > '9') return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

bool built_with_cuda() {
#if defined(MIXLAB_HAVE_CUDA)
  return true;
#else
  return false;
#endif
}

std::vector<DeviceInfo> available_devices() {
  std::vector<DeviceInfo> devices{make_cpu_backend()->device()};
  for (auto& gpu : discovered_gpus()) devices.push_back(std::move(gpu));
  return devices;
}

std::string cuda_backend_unavailable_reason() {
  return probe().reason;
}

std::string cuda_device_unavailable_reason(int gpu) {
  if (gpu == 0) return probe().reason;
  // Once per GPU and process, as for the first: the run panel asks on every change.
  static std::mutex mutex;
  static std::map<int, std::string> reasons;
  std::lock_guard lock(mutex);
  const auto known = reasons.find(gpu);
  if (known != reasons.end()) return known->second;
  std::string reason;
  try {
    create_cuda_backend(gpu);
  } catch (const std::exception& e) {
    reason = e.what();
  }
  return reasons.emplace(gpu, std::move(reason)).first->second;
}

GpuCalibration calibrate_gpu(int gpu) {
  const std::string why = cuda_device_unavailable_reason(gpu);
  if (!why.empty()) throw BackendError("cannot calibrate " + gpu_name(gpu) + ": " + why);
  return cuda::plugin().api->calibrate(gpu);
}

void check_device_name(std::string_view device) {
  if (device != "cpu" && device != "auto" && parse_gpu(device) < 0) {
    throw ConfigError("unknown device " + quote(device) + " (valid: " + kDeviceNames + ")");
  }
}

BackendChoice make_backend(std::string_view device, int threads, bool fallback) {
  BackendChoice choice;
  if (device == "cpu") {
    choice.backend = make_cpu_backend(threads);
    choice.device = "cpu";
    return choice;
  }
  if (device == "auto") {
    // The first GPU the backend can train on; without a plugin there is none to try.
    if (cuda::plugin().api != nullptr) {
      const int gpus = std::max<int>(1, static_cast<int>(discovered_gpus().size()));
      for (int gpu = 0; gpu < gpus; ++gpu) {
        if (gpu == 0 && !probe().reason.empty()) continue;
        try {
          choice.backend = create_cuda_backend(gpu);
          choice.device = gpu_name(gpu);
          return choice;
        } catch (const std::exception&) {
          // try the next one, then the CPU
        }
      }
    }
    choice.backend = make_cpu_backend(threads);
    choice.device = "cpu";
    return choice;
  }
  check_device_name(device);
  const int gpu = parse_gpu(device);
  try {
    choice.backend = create_cuda_backend(gpu);
    choice.device = gpu_name(gpu);
  } catch (const BackendError& e) {
    const std::string why = gpu_name(gpu) + " is unavailable: " + e.what();
    if (!fallback) throw BackendError(why);
    choice.backend = make_cpu_backend(threads);
    choice.device = "cpu";
    choice.note = why + "; training on the CPU instead";
  }
  return choice;
}

std::vector<BackendStatus> backend_statuses() {
  std::vector<BackendStatus> statuses;
  const DeviceInfo cpu = make_cpu_backend()->device();
  statuses.push_back(
      {"cpu", true,
       cpu.name + ", " + std::to_string(cpu.threads) + " threads, " + cpu.library_versions()});
  BackendStatus cuda{"cuda", false, {}};
  const CudaProbe& p = probe();
  if (p.reason.empty()) {
    cuda.available = true;
    std::string libraries;
    try {
      libraries = cuda::plugin().api->library_versions();
    } catch (const std::exception& e) {
      libraries = std::string("library versions unknown: ") + e.what();
    }
    cuda.detail = p.device.name + ", compute capability " + p.device.compute_capability + ", " +
                  format_gib(p.device.memory_bytes) + ", " + libraries;
  } else {
    cuda.detail = p.reason;
  }
  statuses.push_back(std::move(cuda));
  return statuses;
}

}  // namespace mixlab
