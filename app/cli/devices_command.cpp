// mixlab-cli devices: what this build can train on.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/backend/backend.h"

namespace mixlab::cli {

int run_devices(const std::vector<std::string>& argv) {
  const Args args(argv, {}, {"json"});
  const std::vector<DeviceInfo> devices = available_devices();
  if (args.has("json")) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    int gpu = 0;
    for (const DeviceInfo& d : devices) {
      out.push_back({{"id", d.kind == "cpu" ? std::string("cpu") : "cuda:" + std::to_string(gpu++)},
                     {"kind", d.kind},
                     {"name", d.name},
                     {"compute_capability", d.compute_capability},
                     {"threads", d.threads},
                     {"memory_bytes", d.memory_bytes},
                     {"native_bf16", d.native_bf16},
                     {"native_fp16", d.native_fp16},
                     {"libraries", d.library_versions}});
    }
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  int gpu = 0;
  for (const DeviceInfo& d : devices) {
    if (d.kind == "cpu") {
      std::printf(
          "cpu     %s, %d threads, %s; bfloat16 %s, float16 emulated (float16 storage, float32 "
          "arithmetic)\n",
          d.name.c_str(), d.threads, d.library_versions.c_str(),
          d.native_bf16 ? "in hardware" : "emulated by oneDNN");
    } else {
      std::printf(
          "cuda:%d  %s, compute capability %s, %s, %s (found; training on CUDA comes with the "
          "CUDA backend, runs use the cpu)\n",
          gpu++, d.name.c_str(), d.compute_capability.c_str(), format_bytes(d.memory_bytes).c_str(),
          d.library_versions.c_str());
    }
  }
  if (!built_with_cuda()) std::printf("(built without CUDA: no GPUs are looked for)\n");
  return kExitOk;
}

}  // namespace mixlab::cli
