// mixlab-cli self-test: proves an installation works. A 20-step run of a small model on
// synthetic data on every available backend in every policy, a round trip of one run through a
// temporary store, and a CSV export of it; a table of what passed, exit code 1 on any failure.
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "app/cli/common.h"
#include "app/store/csv_export.h"
#include "app/store/run_recorder.h"
#include "app/store/run_store.h"
#include "app/store/store_writer.h"
#include "engine/backend/backend.h"
#include "engine/data/dataset.h"
#include "engine/train/trainer.h"

namespace mixlab::cli {

namespace {

constexpr int kSteps = 20;
constexpr const char* kModel = R"({
  "name": "self-test-mlp",
  "input": {"shape": [8, 8, 1]},
  "layers": [
    {"type": "Rescaling", "scale": 0.00392156862745098},
    {"type": "Flatten"},
    {"type": "Dense", "units": 32, "activation": "relu"},
    {"type": "Dense", "units": 4},
    {"type": "Activation", "activation": "softmax", "dtype": "float32"}
  ]
})";

struct Check {
  std::string name;
  std::string result;  // "ok", "FAILED", "skipped"
  std::string detail;
};

// Keeps every step's loss, to check them and to compare with what the store gives back.
class StepLog final : public RunSink {
 public:
  void on_step(const StepMetrics& step) override { steps.push_back(step); }
  std::vector<StepMetrics> steps;
};

// A temporary folder, removed with its contents.
class ScratchDir {
 public:
  ScratchDir() {
    std::string templ = std::filesystem::temp_directory_path() / "mixlab-self-test-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr)
      throw Error("cannot create a temporary folder like " + templ + ": " + std::strerror(errno));
    path_ = templ;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

RunConfig config_for(Policy policy) {
  RunConfig c;
  c.precision = policy;
  c.loss_scale = LossScaleConfig::keras_default(policy);
  c.batch_size = 16;
  c.steps = kSteps;
  c.threads = 1;
  c.dataset = parse_dataset_spec("synthetic:8x8x1:4:512");
  c.warmup_steps = 2;
  return c;
}

// One short run on `device` ("cpu", "cuda"); fills `check` and returns the steps it ran.
std::vector<StepMetrics> short_run(const std::string& device, const ModelSpec& spec,
                                   const RunConfig& config, const DatasetPair& data, RunSink* also,
                                   Check& check) {
  StepLog log;
  RunSink none;
  store::FanoutSink sink{&log, also != nullptr ? also : &none};
  const std::atomic<bool> cancel{false};
  // No fallback: a backend that reported itself available must train here.
  const BackendChoice choice = make_backend(device, config.threads, false);
  const PolicySupport support = policy_support(choice.backend->device(), config.precision);
  if (support.level == Support::unsupported) {
    check.result = "skipped";
    check.detail = support.reason;
    return {};
  }
  const RunSummary s = train(spec, config, data, *choice.backend, sink, cancel);
  bool finite = true;
  for (const StepMetrics& m : log.steps) finite = finite && std::isfinite(m.loss);
  if (s.status != RunStatus::finished || s.steps != kSteps || !finite) {
    check.result = "FAILED";
    check.detail = std::string(to_string(s.status)) + " after " + std::to_string(s.steps) +
                   " steps" + (finite ? "" : ", a non-finite loss") +
                   (s.message.empty() ? "" : ": " + s.message);
  } else {
    check.result = "ok";
    check.detail = "median step " + format_fixed(s.median_step_ms, 3) + " ms, loss " +
                   format_fixed(log.steps.front().loss, 3) + " -> " +
                   format_fixed(log.steps.back().loss, 3) +
                   (support.level == Support::emulated ? " (emulated)" : "");
  }
  return log.steps;
}

}  // namespace

int run_self_test(const std::vector<std::string>& argv) {
  CommandLine command("mixlab-cli self-test",
                      "A 20-step run of a small model on synthetic data on every available "
                      "backend and policy, a round trip through a temporary run store and a CSV "
                      "export; exits non-zero on any failure.");
  if (!command.parse(argv)) return kExitOk;

  std::vector<Check> checks;
  const ModelSpec spec = parse_model_json(kModel);
  const DatasetPair data = load_dataset(config_for(Policy::float32).dataset);
  std::vector<StepMetrics> recorded;  // the float32 run's steps, as the store should give back
  std::optional<ScratchDir> scratch;
  std::string scratch_error;
  try {
    scratch.emplace();
  } catch (const std::exception& e) {
    scratch_error = e.what();  // the store checks fail; the runs still run
  }
  const auto db = scratch ? scratch->path() / "runs.sqlite" : std::filesystem::path();
  std::int64_t run_id = 0;

  for (const BackendStatus& backend : backend_statuses()) {
    for (const Policy policy : {Policy::float32, Policy::mixed_float16, Policy::mixed_bfloat16}) {
      Check check{backend.name + " " + std::string(to_string(policy)) + ", " +
                      std::to_string(kSteps) + " steps",
                  "skipped", backend.detail};
      if (!backend.available) {
        checks.push_back(std::move(check));
        continue;
      }
      try {
        if (backend.name == "cpu" && policy == Policy::float32 && scratch) {
          // This run also goes through the store, for the round trip below.
          store::StoreWriter writer(db);
          store::RunRecord record;
          record.model_name = spec.name;
          record.model_json = to_json(spec);
          record.config = config_for(policy);
          record.environment.mixlab_version = MIXLAB_VERSION;
          store::RunRecorder recorder(writer, record);
          run_id = recorder.run_id();
          recorded = short_run(backend.name, spec, record.config, data, &recorder, check);
          writer.flush();
        } else {
          short_run(backend.name, spec, config_for(policy), data, nullptr, check);
        }
      } catch (const std::exception& e) {
        check.result = "FAILED";
        check.detail = e.what();
      }
      checks.push_back(std::move(check));
    }
  }

  Check round_trip{"store round trip", "FAILED", ""};
  Check csv{"CSV export", "FAILED", ""};
  try {
    if (!scratch) throw Error(scratch_error);
    store::RunStore store = store::RunStore::open(db, store::StoreOptions{.read_only = true});
    const store::RunRecord r = store.run(run_id);
    const std::vector<StepMetrics> back = store.steps(run_id);
    bool same = back.size() == recorded.size() && !back.empty();
    for (std::size_t i = 0; same && i < back.size(); ++i)
      same = back[i].step == recorded[i].step && back[i].loss == recorded[i].loss;
    if (r.status == store::RecordStatus::finished && same) {
      round_trip.result = "ok";
      round_trip.detail = std::to_string(back.size()) + " steps written and read back in " +
                          db.filename().string() + ", identical";
    } else {
      round_trip.detail = "run " + std::to_string(run_id) + " came back " +
                          std::string(to_string(r.status)) + " with " +
                          std::to_string(back.size()) + " of " + std::to_string(recorded.size()) +
                          " steps" + (same ? "" : ", not the ones written");
    }
    std::ostringstream out;
    store::write_steps_csv(out, store, run_id);
    const std::string text = out.str();
    std::size_t lines = 0;
    for (const char ch : text) lines += ch == '\n';
    if (text.rfind("step,epoch,", 0) == 0 && lines == recorded.size() + 1) {
      csv.result = "ok";
      csv.detail = std::to_string(lines) + " lines (a header and one per step), " +
                   std::to_string(text.size()) + " bytes";
    } else {
      csv.detail =
          std::to_string(lines) + " lines, expected " + std::to_string(recorded.size() + 1);
    }
  } catch (const std::exception& e) {
    round_trip.detail = e.what();
    csv.detail = "not attempted: the store could not be read";
  }
  checks.push_back(std::move(round_trip));
  checks.push_back(std::move(csv));

  std::size_t width = 5;
  for (const Check& c : checks) width = std::max(width, c.name.size());
  bool ok = true;
  std::printf("%-*s  %-7s  %s\n", static_cast<int>(width), "check", "result", "detail");
  for (const Check& c : checks) {
    std::printf("%-*s  %-7s  %s\n", static_cast<int>(width), c.name.c_str(), c.result.c_str(),
                c.detail.c_str());
    ok = ok && c.result != "FAILED";
  }
  std::printf("self-test %s\n", ok ? "passed" : "FAILED");
  return ok ? kExitOk : kExitRunFailed;
}

}  // namespace mixlab::cli
