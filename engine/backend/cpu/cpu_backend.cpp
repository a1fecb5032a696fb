// The oneDNN CPU backend: device description and compilation of models into CpuExecutors.
#include <omp.h>

#include <fstream>
#include <string>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_executor.h"
#include "engine/backend/cpu/cpu_isa.h"
#include "engine/core/error.h"

namespace mixlab {

namespace {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_num_procs()) {}

  DeviceInfo device() const override {
    DeviceInfo info;
    info.kind = "cpu";
    info.name = cpu_model_name();
    info.threads = threads_;
    info.isa = cpu::onednn_isa();
    const dnnl_version_t* v = dnnl_version();
    info.libraries.onednn = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                            std::to_string(v->patch);
    info.libraries.onednn_isa = cpu::onednn_isa_name();
    return info;
  }

  std::unique_ptr<ModelExecutor> compile(const ModelSpec& spec, const ShapeTable& table,
                                         const ExecutorOptions& options) override {
    const PolicySupport support = policy_support(device(), options.policy);
    if (support.level == Support::unsupported) throw ConfigError(support.reason);
    const ExecutionPlan plan =
        build_plan(spec, table, options.policy, options.batch_size, options.optimizer,
                   cpu::kCpuLowering, options.input_gradient);
    return std::make_unique<cpu::CpuExecutor>(spec, table, plan, options, threads_);
  }

 private:
  int threads_;
};

}  // namespace

std::string cpu_model_name() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::unique_ptr<Backend> make_cpu_backend(int threads) {
  return std::make_unique<CpuBackend>(threads);
}

}  // namespace mixlab
