// mixlab-cli devices: what this build can train on: the CPU, and each GPU with what matters for
// mixed precision (tensor cores; how each policy runs, by engine/core/device_info.h's rule) and
// whether the CUDA backend can train on it, or why not.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "engine/backend/backend.h"

namespace mixlab::cli {

namespace {

constexpr auto& kPolicies = kAllPolicies;

// "float32 native, mixed_float16 emulated, mixed_bfloat16 unsupported" and the reasons.
void print_policies(const DeviceInfo& d) {
  for (const Policy p : kPolicies) {
    const PolicySupport s = policy_support(d, p);
    std::printf("        %-15s %s%s%s\n", std::string(to_string(p)).c_str(),
                std::string(to_string(s.level)).c_str(), s.reason.empty() ? "" : ": ",
                s.reason.c_str());
  }
}

}  // namespace

int run_devices(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli devices",
                      "The devices this build can train on, how each runs every policy, and why "
                      "the GPU backend cannot when it cannot.");
  bool json = false;
  command.app().add_flag("--json", json, "one JSON array instead of the table");
  if (!command.parse(argv)) return kExitOk;
  const std::vector<DeviceInfo> devices = available_devices();
  // Whether the CUDA backend trains on each GPU ("" when it does), in the order listed.
  std::vector<std::string> gpu_reasons;
  for (const DeviceInfo& d : devices) {
    if (d.is_gpu())
      gpu_reasons.push_back(cuda_device_unavailable_reason(static_cast<int>(gpu_reasons.size())));
  }
  if (json) {
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    int gpu = 0;
    for (const DeviceInfo& d : devices) {
      const bool is_gpu = d.is_gpu();
      nlohmann::ordered_json entry = {
          {"id", is_gpu ? "cuda:" + std::to_string(gpu) : std::string("cpu")},
          {"kind", d.kind},
          {"name", d.name},
          {"compute_capability", d.compute_capability},
          {"threads", d.threads},
          {"memory_bytes", d.memory_bytes},
          {"libraries", d.library_versions()}};
      if (is_gpu) {
        entry["tensor_cores"] = d.tensor_cores;
      } else {
        entry["isa"] = to_string(d.isa);
      }
      nlohmann::ordered_json policies = nlohmann::ordered_json::object();
      for (const Policy p : kPolicies) {
        const PolicySupport s = policy_support(d, p);
        policies[std::string(to_string(p))] = {{"support", to_string(s.level)},
                                               {"reason", s.reason}};
      }
      entry["policies"] = std::move(policies);
      entry["comparison_policy"] = to_string(comparison_mixed_policy(d));
      if (is_gpu) {
        const std::string& reason = gpu_reasons[static_cast<std::size_t>(gpu++)];
        entry["trainable"] = reason.empty();
        if (!reason.empty()) entry["unavailable_reason"] = reason;
      }
      out.push_back(std::move(entry));
    }
    std::cout << out.dump(2) << std::endl;
    return kExitOk;
  }
  int gpu = 0;
  for (const DeviceInfo& d : devices) {
    if (!d.is_gpu()) {
      std::printf("cpu     %s, %d threads, %s\n", d.name.c_str(), d.threads,
                  d.library_versions().c_str());
    } else {
      const std::string& reason = gpu_reasons[static_cast<std::size_t>(gpu)];
      std::printf("cuda:%d  %s, compute capability %s, %s, %s\n", gpu, d.name.c_str(),
                  d.compute_capability.c_str(), format_bytes(d.memory_bytes).c_str(),
                  d.library_versions().c_str());
      std::printf("        tensor cores: %s\n", d.tensor_cores ? "yes" : "no");
      std::printf("        CUDA backend: %s%s\n",
                  reason.empty() ? "trains here" : "cannot train: ", reason.c_str());
      ++gpu;
    }
    print_policies(d);
  }
  if (gpu == 0) {
    const std::string reason = cuda_backend_unavailable_reason();
    if (reason.empty()) {
      std::printf("cuda    the CUDA backend trains on cuda:0 (no GPU listed by the driver)\n");
    } else {
      std::printf("cuda    no GPU to train on: %s\n", reason.c_str());
    }
  }
  return kExitOk;
}

}  // namespace mixlab::cli
