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
  const DeviceInfo cpu = make_cpu_backend()->device();
  if (args.has("json")) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    out.push_back({{"id", "cpu"},
                   {"kind", cpu.kind},
                   {"name", cpu.name},
                   {"threads", cpu.threads},
                   {"native_bf16", cpu.native_bf16},
                   {"native_fp16", cpu.native_fp16},
                   {"libraries", cpu.library_versions}});
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  std::printf(
      "cpu  %s, %d threads, %s; bfloat16 %s, float16 emulated (float16 storage, float32 "
      "arithmetic)\n",
      cpu.name.c_str(), cpu.threads, cpu.library_versions.c_str(),
      cpu.native_bf16 ? "in hardware" : "emulated by oneDNN");
  return kExitOk;
}

}  // namespace mixlab::cli
