// mixlab-cli doctor as a user runs it: the verdict first, the --json contract, profiles by the
// names people type, named errors for bad input, and measurement on this machine's CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/cli/cli_support.h"
#include "tests/test_paths.h"

namespace {

using namespace mixlab_cli_test;
using nlohmann::json;

json parse(const Result& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return json::parse(r.out);
}

TEST(Doctor, PredictsForAProfileWithTheVerdictFirst) {
  const Result r = run_cli("doctor cifar10-mlp --profile 'RTX 2060' --optimizer sgd");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("mixed_float16 is predicted ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("slower than float32 on an RTX 2060"), std::string::npos) << r.out;
  // Under the verdict, how far it can be trusted: no zoo has run on a GPU.
  EXPECT_NE(r.out.find("\nConfidence: unknown. No held-out zoo has run on a GPU yet"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("findings:"), std::string::npos);
  EXPECT_NE(r.out.find("weight-bound"), std::string::npos);
  EXPECT_NE(r.out.find("1 Dense 3000, relu"), std::string::npos);
  // One layer is "layer 1", and the layer table's rows start with the layer's own title.
  EXPECT_NE(r.out.find("memory-bound (layer 1): "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n1 Dense 3000, relu "), std::string::npos) << r.out;
}

TEST(Doctor, JsonHasTheContractFields) {
  const json j = parse(run_cli("doctor cifar10-mlp --profile rtx-2060 --optimizer sgd --json"));
  EXPECT_EQ(j["device"]["name"], "RTX 2060");
  EXPECT_EQ(j["batch_size"], 32);
  EXPECT_EQ(j["mixed_policy"], "mixed_float16");
  EXPECT_TRUE(j["verdict"].is_string());
  EXPECT_TRUE(j["predicted_step_ms"]["float32"].is_number());
  EXPECT_TRUE(j["predicted_step_ms"]["mixed_float16"].is_number());
  EXPECT_LT(j["predicted_speedup"].get<double>(), 1.0);
  ASSERT_FALSE(j["findings"].empty());
  for (const json& f : j["findings"]) {
    for (const char* key : {"id", "severity", "layers", "message", "suggestion",
                            "predicted_gain"}) {
      EXPECT_TRUE(f.contains(key)) << key;
    }
  }
  EXPECT_FALSE(j.contains("measured_step_ms"));
  EXPECT_EQ(j["confidence"]["known"], false);
  EXPECT_EQ(j["confidence"]["kind"], "cuda");
}

TEST(Doctor, PrecisionNamesTheMixedPolicy) {
  const json j =
      parse(run_cli("doctor cifar10-mlp --profile 'A100 80GB' --precision mixed_bfloat16 --json"));
  EXPECT_EQ(j["mixed_policy"], "mixed_bfloat16");
  EXPECT_TRUE(j["predicted_step_ms"].contains("mixed_bfloat16"));
  const Result f32 = run_cli("doctor cifar10-mlp --profile T4 --precision float32");
  EXPECT_EQ(f32.exit_code, 2);
  EXPECT_NE(f32.err.find("--precision"), std::string::npos) << f32.err;
  // bfloat16 on a T4 (Turing) cannot run: said first.
  const Result t4 = run_cli("doctor cifar10-mlp --profile T4 --precision mixed_bfloat16");
  EXPECT_EQ(t4.exit_code, 0) << t4.err;
  EXPECT_EQ(t4.out.rfind("mixed_bfloat16 cannot run on a T4", 0), 0u) << t4.out;
}

// mixed_float8 (issue 30): on an H100 predicted against mixed_bfloat16 too, a prediction MixLab
// says it cannot run yet; on this CPU measured, its saturating layer named.
TEST(Doctor, MixedFloat8IsSetAgainstBfloat16) {
  const json h100 = parse(
      run_cli("doctor cifar10-mlp --profile 'H100 SXM' --precision mixed_float8 --batch-size 4096 "
              "--data-on-device --json"));
  EXPECT_EQ(h100["mixed_policy"], "mixed_float8");
  EXPECT_EQ(h100["baseline"]["policy"], "mixed_bfloat16");
  EXPECT_EQ(h100["support"]["level"], "native");
  // Its Dense 3000 is off a multiple of 16: in bfloat16, and FP8 gains nothing until it is
  // 3008 units, which the verdict says first.
  EXPECT_LT(h100["baseline"]["predicted_speedup"].get<double>(), 1.0);
  const std::string verdict = h100["verdict"];
  EXPECT_NE(verdict.find("slower than mixed_bfloat16"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("units 3000 is not a multiple of 16"), std::string::npos) << verdict;
  EXPECT_NE(verdict.find("Make it 3008 units"), std::string::npos) << verdict;
  // An input rescaled past E4M3's 448: at the first step's scale of 1 most of it saturates.
  const std::string model = write_temp("hot.json", R"({"name": "hot", "input": {"shape": [16]},
      "layers": [{"type": "Rescaling", "scale": 4}, {"type": "Dense", "units": 16,
      "activation": "relu"}, {"type": "Dense", "units": 4},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("mixlab-doctor-fp8-" + std::to_string(getpid()));
  const Result r = run_cli("doctor " + model +
                               " --device cpu --threads 1 --precision mixed_float8 --measure "
                               "--no-store --steps 6 --warmup 1 --json",
                           "XDG_CACHE_HOME=" + cache.string());
  std::filesystem::remove_all(cache);
  std::filesystem::remove(model);
  const json cpu = parse(r);
  EXPECT_GT(cpu["baseline"]["measured_step_ms"].get<double>(), 0.0);
  const auto& findings = cpu["findings"];
  const auto saturation = std::find_if(findings.begin(), findings.end(),
                                       [](const json& f) { return f["id"] == "fp8-saturation"; });
  ASSERT_NE(saturation, findings.end()) << cpu["findings"].dump(1);
  EXPECT_EQ((*saturation)["layers"], json::array({1}));
  EXPECT_NE((*saturation)["message"].get<std::string>().find("of its input's values saturated"),
            std::string::npos)
      << (*saturation)["message"];
  EXPECT_EQ((*saturation)["change"]["field"], "layer_bfloat16");
}

TEST(Doctor, BadInputIsNamed) {
  const Result unknown = run_cli("doctor cifar10-mlp --profile 'RTX 9999'");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("unknown device profile 'RTX 9999'"), std::string::npos)
      << unknown.err;
  EXPECT_NE(unknown.err.find("RTX 2060 SUPER"), std::string::npos) << unknown.err;
  const Result zero = run_cli("doctor cifar10-mlp --profile T4 --batch-size 0");
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--batch-size"), std::string::npos) << zero.err;
  const Result measure = run_cli("doctor cifar10-mlp --profile T4 --measure");
  EXPECT_EQ(measure.exit_code, 2);
  EXPECT_NE(measure.err.find("--measure"), std::string::npos) << measure.err;
  const Result sweep = run_cli("doctor cifar10-mlp --profile T4 --sweep 32,64");
  EXPECT_EQ(sweep.exit_code, 2);
  EXPECT_NE(sweep.err.find("batch="), std::string::npos) << sweep.err;
  const std::string broken = write_temp("profiles.json", R"({"format": "mixlab-gpu-profiles-1",
      "documents": {}, "profiles": [{"name": "Mine", "compute_capability": "8.0"}]})");
  const Result file = run_cli("doctor cifar10-mlp --profiles " + broken + " --profile Mine");
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_NE(file.err.find("profile 'Mine': field 'tensor_cores': is missing"), std::string::npos)
      << file.err;
}

// Section 4 of issue 28: the alignment rule holds for the libraries named, MixLab's own unless
// --libraries gives the user's stack; the seed convnet at batch 1020 on an RTX 2060 SUPER.
// "What would fused attention gain on an RTX 4090 and an H100?" (issue 29): tiny-gpt's mixed
// step predicted as a run takes it (--attention auto: cuDNN's fused attention where it applies)
// against MixLab's unfused kernels (--attention unfused): faster on both, and the source says
// which; the option refuses fused on a CPU and an unknown word by name.
TEST(Doctor, AttentionKernelsPredictCudnnsFusedAttentionAgainstTheUnfused) {
  for (const char* profile : {"RTX 4090", "H100 SXM"}) {
    SCOPED_TRACE(profile);
    const std::string seed =
        std::string("doctor tiny-gpt --profile \"") + profile + "\" --batch-size 32 --json ";
    const json unfused = parse(run_cli(seed + "--attention unfused"));
    const json automatic = parse(run_cli(seed));
    const json fused = parse(run_cli(seed + "--attention fused"));
    EXPECT_GT(automatic["predicted_speedup"].get<double>(),
              unfused["predicted_speedup"].get<double>());
    EXPECT_DOUBLE_EQ(fused["predicted_speedup"].get<double>(),
                     automatic["predicted_speedup"].get<double>());
    EXPECT_EQ(unfused["device"]["sources"]["attention"], "--attention unfused");
    EXPECT_EQ(fused["device"]["sources"]["attention"], "--attention fused");
  }
  const Result cpu = run_cli("doctor tiny-gpt --attention fused");
  EXPECT_NE(cpu.exit_code, 0);
  EXPECT_NE(cpu.err.find("is a CPU (predict a GPU with --profile NAME)"), std::string::npos)
      << cpu.err;
  const Result bad = run_cli("doctor tiny-gpt --profile \"H100 SXM\" --attention flash");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("option '--attention': must be auto, fused or unfused, got 'flash'"),
            std::string::npos)
      << bad.err;
}

TEST(Doctor, LibrariesDecideWhetherMisalignedGemmsUseTensorCores) {
  const std::string seed = "doctor cifar100-convnet --profile rtx-2060-super --batch-size 1020 ";
  const json now = parse(run_cli(seed + "--json"));
  EXPECT_EQ(now["device"]["libraries"]["cublas"], "13.0");
  const json cuda11 = parse(run_cli(seed + "--libraries cublas=11.2,cudnn=8.1 --json"));
  EXPECT_EQ(cuda11["device"]["libraries"]["cublas"], "11.2");
  EXPECT_EQ(cuda11["device"]["sources"]["libraries"], "--libraries cublas=11.2,cudnn=8.1");
  const json cuda10 = parse(run_cli(seed + "--libraries cublas=10.1,cudnn=7.6 --json"));
  // From cuBLAS 11.0 the misaligned Dense GEMMs use tensor cores: mixed gains; before, it does
  // not.
  EXPECT_GT(now["predicted_speedup"].get<double>(), 1.3);
  EXPECT_DOUBLE_EQ(cuda11["predicted_speedup"].get<double>(),
                   now["predicted_speedup"].get<double>());
  EXPECT_LT(cuda10["predicted_speedup"].get<double>(), 1.05);
  const auto alignment = [](const json& j) {
    for (const json& f : j["findings"]) {
      if (f["id"] == "alignment" &&
          f["message"].get<std::string>().find("batch size 1020") != std::string::npos) {
        return f["message"].get<std::string>();
      }
    }
    return std::string();
  };
  EXPECT_NE(alignment(cuda11).find("cuBLAS 11.2 runs it on tensor cores (so from cuBLAS 11.0"),
            std::string::npos)
      << alignment(cuda11);
  EXPECT_NE(alignment(cuda11).find("an estimate"), std::string::npos) << alignment(cuda11);
  EXPECT_NE(alignment(cuda10).find("cuBLAS 10.1 runs it without tensor cores"), std::string::npos)
      << alignment(cuda10);
  const Result text = run_cli(seed + "--libraries cudnn=8.1");
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("libraries: cuBLAS 13.0, cuDNN 8.1 (--libraries cudnn=8.1)"),
            std::string::npos)
      << text.out;

  const Result bad = run_cli(seed + "--libraries cublas=eleven");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--libraries: 'cublas=eleven' is not a dotted version"), std::string::npos)
      << bad.err;
  const Result unknown = run_cli(seed + "--libraries nccl=2.18");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("'nccl' is not a library the doctor knows (cublas, cudnn)"),
            std::string::npos)
      << unknown.err;
  const Result cpu =
      run_cli("doctor fashion-mlp --device cpu --roofline-only --libraries cublas=11.2");
  EXPECT_EQ(cpu.exit_code, 2);
  EXPECT_NE(cpu.err.find("--libraries names a GPU's cuBLAS and cuDNN"), std::string::npos)
      << cpu.err;
}

// The layers timed on this CPU are kept (issue 28): the second diagnosis runs no step, --retime
// times them again, and the report says where the times came from.
TEST(Doctor, TimedLayersAreKeptAndReadBack) {
  const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                      ("mixlab-doctor-layer-cache-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache);
  const std::string env = "XDG_CACHE_HOME=" + cache.string();
  const std::string doctor = "doctor fashion-mlp --device cpu --threads 1 ";
  const Result first = run_cli(doctor, env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.err.find("read from"), std::string::npos) << first.err;
  const std::filesystem::path kept = cache / "mixlab" / "layer-times.json";
  EXPECT_TRUE(std::filesystem::exists(kept));
  const Result second = run_cli(doctor, env);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("the layer times of both policies read from " + kept.string() +
                            " (no step run"),
            std::string::npos)
      << second.err;
  EXPECT_NE(second.out.find("kept in " + kept.string()), std::string::npos) << second.out;
  const Result again = run_cli(doctor + "--retime", env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("read from"), std::string::npos) << again.err;
  std::filesystem::remove_all(cache);
}

// Section 2 of issue 28: --from times the layers on this machine's device and scales them to
// the --profile GPU where the kernels match; each layer says which figures it has.
TEST(Doctor, FromScalesTheLayersTimedHereToTheProfile) {
  const std::filesystem::path cache =
      std::filesystem::temp_directory_path() / ("mixlab-doctor-from-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache);
  // The CPU's kernels are not a GPU's: every layer modelled, saying why.
  const std::string env = "XDG_CACHE_HOME=" + cache.string();
  const json cpu =
      parse(run_cli("doctor fashion-mlp --profile T4 --from cpu --threads 1 --json", env));
  EXPECT_EQ(cpu["layers_source"].get<std::string>().rfind("each layer timed on ", 0), 0u)
      << cpu["layers_source"];
  const json& dense = cpu["layers"][2]["predicted"]["mixed_float16"];  // 2 Dense
  EXPECT_EQ(dense["source"], "modelled");
  EXPECT_NE(dense["modelled_why"].get<std::string>().find("CPU kernels"), std::string::npos)
      << dense;
  // A GPU of the profile's architecture (the test double: compute capability 8.0, as the
  // A100's): its layers scale.
  const std::string gpu_env = env + " MIXLAB_CUDA_BACKEND=" + mixlab::test::fake_plugin();
  const json gpu = parse(run_cli(
      "doctor fashion-mlp --profile 'A100 40GB' --from cuda:0 --precision mixed_bfloat16 --json",
      gpu_env));
  int scaled = 0;
  for (const json& layer : gpu["layers"]) {
    scaled += layer["predicted"]["mixed_bfloat16"]["source"] == "scaled";
  }
  EXPECT_GT(scaled, 0) << gpu["layers"];
  EXPECT_NE(gpu["layers_source"].get<std::string>().find("scaled to A100 40GB"), std::string::npos);

  const Result alone = run_cli("doctor fashion-mlp --from cpu");
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("give --profile NAME too"), std::string::npos) << alone.err;
  const Result roofline = run_cli("doctor fashion-mlp --profile T4 --from cpu --roofline-only");
  EXPECT_EQ(roofline.exit_code, 2);
  std::filesystem::remove_all(cache);
}

TEST(Doctor, ListsTheProfiles) {
  const Result r = run_cli("doctor --list-profiles");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"GTX 1660 Ti", "RTX 2060 SUPER", "A100 40GB", "H200"}) {
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  }
}

TEST(Doctor, SweepsBatchSizes) {
  const json j =
      parse(run_cli("doctor cifar10-mlp --profile 'RTX 2060' --optimizer sgd "
                    "--sweep batch=32,256,1024 --json"));
  ASSERT_EQ(j["sweep"].size(), 3u);
  EXPECT_EQ(j["sweep"][2]["batch_size"], 1024);
  // The weights' traffic is amortised over larger batches: mixed gains with the batch.
  EXPECT_GT(j["sweep"][2]["predicted_speedup"].get<double>(),
            j["sweep"][0]["predicted_speedup"].get<double>());
}

TEST(Doctor, WhatIfPredictsTheTopSuggestion) {
  const json j = parse(run_cli(
      "doctor cifar100-convnet --profile 'RTX 2060 SUPER' --batch-size 1020 --what-if --json"));
  ASSERT_TRUE(j["what_if"].is_object()) << j.dump(2);
  EXPECT_GT(j["what_if"]["predicted_gain"].get<double>(), 1.0);
  EXPECT_TRUE(j["what_if"]["measured_gain"].is_null());  // a profile: nothing to measure on
}

TEST(Doctor, MeasuresOnThisCpuBesideThePredictionAndKeepsTheReport) {
  const std::string cache = make_temp_dir("mixlab-doctor-cache").string();
  const std::string model = write_temp("doctor-model.json", R"({"name": "small",
      "input": {"shape": [8, 8, 1]}, "layers": [{"type": "Flatten"},
      {"type": "Dense", "units": 64, "activation": "relu"}, {"type": "Dense", "units": 4},
      {"type": "Activation", "activation": "softmax", "dtype": "float32"}]})");
  const std::string env = "XDG_CACHE_HOME=" + cache;
  const json j = parse(run_cli("doctor " + model +
                                   " --device cpu --threads 1 --measure --steps 6 --warmup 2 "
                                   "--what-if --json",
                               env));
  EXPECT_EQ(j["device"]["kind"], "cpu");
  EXPECT_TRUE(j["device"]["measured"].get<bool>());
  EXPECT_GT(j["measured_step_ms"]["float32"].get<double>(), 0.0);
  EXPECT_TRUE(j["measured_speedup"].is_number());
  EXPECT_TRUE(j["layers"][1]["measured"]["float32"]["forward_ms"].is_number());
  EXPECT_TRUE(std::filesystem::exists(cache + "/mixlab/cpu-profiles.json"));
  // The two runs and the report are kept in the run store, and the runs name the report.
  ASSERT_TRUE(j["report_id"].is_number()) << j.dump(2);
  ASSERT_EQ(j["run_ids"].size(), 2u);
  const json run = parse(run_cli("runs show " + std::to_string(j["run_ids"][1].get<int>()) +
                                 " --json"));
  EXPECT_EQ(run["config"]["precision"], j["mixed_policy"]);
  EXPECT_EQ(run["tags"], json::array({"doctor"}));
  ASSERT_EQ(run["doctor_reports"].size(), 1u);
  EXPECT_EQ(run["doctor_reports"][0]["id"], j["report_id"]);
  EXPECT_EQ(run["doctor_reports"][0]["verdict"], j["verdict"]);
  EXPECT_EQ(run["doctor_reports"][0]["report"]["batch_size"], 32);
  // The what-if's measured run (the change applied; its "before" is --measure's) is kept too.
  ASSERT_TRUE(j["what_if"].is_object()) << j.dump(2);
  ASSERT_EQ(j["what_if"]["run_ids"].size(), 1u) << j["what_if"].dump(2);
  const json after = parse(run_cli(
      "runs show " + std::to_string(j["what_if"]["run_ids"][0].get<int>()) + " --json"));
  EXPECT_EQ(after["tags"], json::array({"doctor", "what-if"}));
  EXPECT_EQ(after["note"].get<std::string>().rfind("doctor --what-if: after ", 0), 0u)
      << after["note"];
  EXPECT_TRUE(after["doctor_reports"].empty());
  // --no-store keeps nothing.
  const json unkept = parse(run_cli("doctor " + model +
                                        " --device cpu --threads 1 --measure --steps 4 "
                                        "--warmup 1 --no-store --json",
                                    env));
  EXPECT_FALSE(unkept.contains("report_id"));
  std::filesystem::remove_all(cache);
}

// A measured sweep keeps each batch size's two runs with a report of their own; a what-if
// without --measure keeps its two runs, before and after.
TEST(Doctor, MeasuredSweepsAndWhatIfsAreKept) {
  const std::string cache = make_temp_dir("mixlab-doctor-cache").string();
  const std::string db = (make_temp_dir("mixlab-doctor-db") / "runs.sqlite").string();
  const std::string model = write_temp("doctor-sweep-model.json", R"({"name": "small",
      "input": {"shape": [8, 8, 1]}, "layers": [{"type": "Flatten"},
      {"type": "Dense", "units": 60, "activation": "relu"}, {"type": "Dense", "units": 4}]})");
  const std::string env = "XDG_CACHE_HOME=" + cache;
  const std::string common = "doctor " + model + " --device cpu --threads 1 --steps 4 "
                             "--warmup 1 --db " + db + " --json";
  const json j = parse(run_cli(common + " --measure --sweep batch=16,32", env));
  ASSERT_EQ(j["sweep"].size(), 2u);
  std::vector<std::int64_t> reports = {j["report_id"].get<std::int64_t>()};
  for (const json& row : j["sweep"]) {
    ASSERT_TRUE(row["report_id"].is_number()) << row.dump(2);
    ASSERT_EQ(row["run_ids"].size(), 2u);
    reports.push_back(row["report_id"].get<std::int64_t>());
    const json run = parse(run_cli(
        "runs show " + std::to_string(row["run_ids"][0].get<int>()) + " --db " + db + " --json"));
    EXPECT_EQ(run["tags"], json::array({"doctor", "sweep"}));
    EXPECT_EQ(run["config"]["batch_size"], row["batch_size"]);
    ASSERT_EQ(run["doctor_reports"].size(), 1u);
    EXPECT_EQ(run["doctor_reports"][0]["id"], row["report_id"]);
  }
  std::sort(reports.begin(), reports.end());
  EXPECT_EQ(std::unique(reports.begin(), reports.end()), reports.end());  // one report each

  const json w = parse(run_cli(common + " --what-if", env));
  EXPECT_FALSE(w.contains("report_id"));  // nothing measured beside the prediction
  ASSERT_TRUE(w["what_if"].is_object()) << w.dump(2);
  ASSERT_EQ(w["what_if"]["run_ids"].size(), 2u) << w["what_if"].dump(2);
  const json before = parse(run_cli(
      "runs show " + std::to_string(w["what_if"]["run_ids"][0].get<int>()) + " --db " + db +
      " --json"));
  EXPECT_EQ(before["tags"], json::array({"doctor", "what-if"}));
  EXPECT_EQ(before["note"], "doctor --what-if: before, as the model is");
  std::filesystem::remove_all(cache);
  std::filesystem::remove_all(std::filesystem::path(db).parent_path());
}

TEST(Doctor, WritesAnHtmlReportAndCsvFiles) {
  const std::string html = write_temp("report.html", "");
  const std::string findings = write_temp("findings.csv", "");
  const std::string layers = write_temp("layers.csv", "");
  const Result r = run_cli("doctor cifar10-mlp --profile 'RTX 2060' --optimizer sgd --html " +
                           html + " --findings-csv " + findings + " --layers-csv " + layers);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto read = [](const std::string& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string page = read(html);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("mixed_float16 is predicted"), std::string::npos);
  EXPECT_NE(page.find("aria-label='roofline'"), std::string::npos);
  EXPECT_NE(page.find("aria-label='where the time goes'"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);  // self-contained, nothing to run
  const std::string f = read(findings);
  EXPECT_EQ(f.rfind("id,severity,layers,message,suggestion,predicted_gain,change\r\n", 0), 0u);
  EXPECT_NE(f.find("weight-bound,"), std::string::npos) << f;
  const std::string l = read(layers);
  EXPECT_EQ(l.rfind("layer,title,policy,phase,predicted_ms,measured_ms\r\n", 0), 0u);
  // 5 layers x 2 policies x 2 phases, and the header.
  EXPECT_EQ(std::count(l.begin(), l.end(), '\n'), 21);
  const Result bad = run_cli("doctor cifar10-mlp --profile T4 --html /nonexistent/dir/r.html");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("/nonexistent/dir/r.html"), std::string::npos) << bad.err;
}

// A present GPU's roofs are measured through the CUDA backend at first use and cached. The
// backend here is the test double (tests/backend/fake_cuda_plugin.cpp), whose calibration
// returns made-up figures: this checks the path from `--device cuda` to the profile, not a GPU.
TEST(Doctor, APresentGpuIsCalibratedOnceThenReadFromTheCache) {
  const std::filesystem::path cache = std::filesystem::temp_directory_path() /
                                      ("mixlab-doctor-gpu-cache-" + std::to_string(getpid()));
  std::filesystem::remove_all(cache);
  const std::string env = std::string("MIXLAB_CUDA_BACKEND=") + mixlab::test::fake_plugin() +
                          " XDG_CACHE_HOME=" + cache.string();
  const Result first = run_cli("doctor fashion-mlp --device cuda:0", env);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("measured this GPU's roofs (kept in " +
                           (cache / "mixlab" / "gpu-profiles.json").string() + ")"),
            std::string::npos)
      << first.err;
  EXPECT_NE(first.out.find("Fake GPU"), std::string::npos) << first.out;
  std::ifstream kept(cache / "mixlab" / "gpu-profiles.json");
  ASSERT_TRUE(kept);
  const json entries = json::parse(kept);
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0]["gpu"], "Fake GPU (the CPU backend, a test double)");
  EXPECT_EQ(entries[0]["f16_matmul_flops"], 250e12);

  const json j = parse(run_cli("doctor fashion-mlp --device cuda:0 --json", env));
  EXPECT_EQ(j["device"]["name"], "Fake GPU (the CPU backend, a test double)");
  EXPECT_EQ(j["device"]["measured"], true);
  EXPECT_EQ(j["device"]["sources"]["peak_tflops"].get<std::string>().rfind(
                "measured on this GPU through ", 0),
            0u);
  // The misaligned GEMMs' rate is the calibration's, and the libraries the present GPU's.
  EXPECT_EQ(j["device"]["misaligned_matmul_efficiency"], 0.4);
  EXPECT_EQ(j["device"]["sources"]["libraries"].get<std::string>().rfind("this machine's", 0), 0u)
      << j["device"]["sources"];
  const Result again = run_cli("doctor fashion-mlp --device cuda:0", env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(again.err.find("measured this GPU's roofs"), std::string::npos) << again.err;
  const Result fresh = run_cli("doctor fashion-mlp --device cuda:0 --recalibrate", env);
  EXPECT_NE(fresh.err.find("measured this GPU's roofs"), std::string::npos) << fresh.err;
  std::filesystem::remove_all(cache);
}

}  // namespace
