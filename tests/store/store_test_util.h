// Pieces the run-store, CLI and GUI tests share: a temporary folder, runs with every field
// filled, and a tiny model.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "app/store/run_record.h"
#include "engine/train/run_types.h"

namespace mixlab::store::testing {

// A model small enough that a run of it is mostly the machinery around it: 8x8x1 -> 4 classes,
// for synthetic:8x8x1:4:N data.
inline constexpr const char* kTinyModel = R"({
  "name": "tiny",
  "input": {"shape": [8, 8, 1]},
  "layers": [{"type": "Flatten"}, {"type": "Dense", "units": 4, "activation": "softmax"}]
})";

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string templ =
        std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/mixlab-store-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ec);
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

inline std::string read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_bytes(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A run with every stored field set to something other than its default.
inline RunRecord sample_run(const std::string& name = "mlp, \"fast\" → ß") {
  RunRecord r;
  r.name = name;
  r.created_at_ms = 1'764'470'707'123;  // 2025-11-30T02:45:07.123Z
  r.model_name = "fashion-mlp";
  r.model_json = R"({"name": "fashion-mlp", "layers": []})";
  r.config.precision = Policy::mixed_float16;
  r.config.loss_scale = *parse_loss_scale("dynamic:1024");
  r.config.batch_size = 96;
  r.config.epochs = 3;
  r.config.steps = 1234;
  r.config.optimizer.kind = OptimizerKind::sgd;
  r.config.optimizer.learning_rate = 0.0125;
  r.config.optimizer.momentum = 0.9;
  r.config.optimizer.nesterov = true;
  r.config.optimizer.beta_1 = 0.8;
  r.config.optimizer.beta_2 = 0.99;
  r.config.optimizer.epsilon = 1e-6;
  r.config.seed = 987654321987ULL;
  r.config.threads = 3;
  r.config.dataset = parse_dataset_spec("synthetic:8x8x1:4:640:7");
  r.config.evaluate = false;
  r.config.warmup_steps = 5;
  r.config.tf32 = true;  // GPU options, two on and two off
  r.config.cuda_graphs = false;
  r.config.data_on_device = true;
  r.config.layer_timing = false;
  r.device = "cuda:1";
  r.total_steps = 1234;
  r.tags = {"baseline", "a,b"};
  r.note = "line one\r\nline \"two\", with comma";
  return r;
}

inline Environment sample_environment() {
  Environment e;
  e.device_kind = "cuda";
  e.device_name = "NVIDIA H200";
  e.compute_capability = "9.0";
  e.driver_version = "580.65";
  e.cuda_version = "13.0";
  e.cudnn_version = "9.10.2";
  e.cublas_version = "13.0.0";
  e.onednn_version = "2.6.3";
  e.cpu_model = "Intel(R) Xeon(R) Platinum";
  e.threads = 16;
  e.mixlab_version = "0.1.0";
  e.hostname = "gpu-node-7";
  return e;
}

inline StepMetrics sample_step(std::int64_t step) {
  StepMetrics m;
  m.step = step;
  m.epoch = static_cast<int>(step / 100);
  m.wall_offset_s = 0.5 + step * 0.0123;
  m.step_ms = 1.0 + (step % 7) * 0.25;
  m.data_wait_ms = 0.01 * step;
  m.forward_ms = 0.3;
  m.backward_ms = 0.6;
  m.optimizer_ms = 0.1;
  m.device_ms = step % 3 == 0 ? kNotMeasured : 0.9;
  m.loss = 2.0 / (1.0 + step);
  m.accuracy = 0.25 + step * 1e-4;
  m.loss_scale = step % 11 == 10 ? 512.0 : 1024.0;
  m.skipped = step % 11 == 10;
  m.samples = 96;
  return m;
}

}  // namespace mixlab::store::testing
