// The layers timed on this machine's device (bench_layers), kept in
// ${XDG_CACHE_HOME:-~/.cache}/mixlab/layer-times.json so that diagnosing the same model again
// (the GUI's Doctor tab at every change of tab, a second `doctor` call) takes no training steps.
// An entry is one policy's timing, keyed by everything the times depend on: the model's layers
// and shapes, the batch and the other run settings that reach the step (optimizer, threads, GPU
// options), the policy with its loss scaling, the device (CPU model and thread count, or GPU
// name, compute capability and memory) and its library versions (oneDNN and its ISA, CUDA,
// cuBLAS, cuDNN). Not the learning rate or the seed, which the step's time does not see.
// The cache follows the calibration caches' rules (calibration_cache.h): read through the
// bounded reader (a FIFO, a directory, a huge file are ignored and left alone), an entry whose
// times no real run gives (negative, not finite, over an hour, layers missing) is not used, the
// file is replaced atomically, and only the newest kLayerCacheEntries are kept.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/backend/backend.h"
#include "engine/doctor/diagnosis.h"

namespace mixlab::doctor {

inline constexpr int kLayerCacheEntries = 200;

// ${XDG_CACHE_HOME:-~/.cache}/mixlab/layer-times.json
std::filesystem::path default_layer_cache();

// The key of one policy's timing of `input` on `device`: 16 hex digits of a 64-bit FNV-1a hash
// of the text that names all it depends on (above).
std::string layer_times_key(const DiagnosisInput& input, Policy policy, const DeviceInfo& device);

// An entry of the cache, and back. from_json returns why an entry cannot be used ("layer 3's
// forward time is -1 ms") in `problem`, for an entry of `layers` layers.
nlohmann::json to_json(const MeasuredRun& run, const std::string& key, const std::string& model,
                       const std::string& device, const std::string& timed_at);
MeasuredRun measured_run_from_json(const nlohmann::json& entry, std::size_t layers,
                                   std::string& problem);

struct LayerCacheUse {
  int cached = 0;    // policies read from the cache (0, 1 or 2; 3 with mixed_float8's baseline)
  int timed = 0;     // policies timed now
  std::string note;  // why the cache was ignored or not written; empty when all went well
};

// bench_layers through the cache at `cache_file`: each policy read from it when its entry is
// there and sane (and `retime` is false), else timed now and kept. A cached policy's
// MeasuredRun::cached says when it was timed.
Measurement cached_bench_layers(const DiagnosisInput& input, Backend& backend,
                                const std::filesystem::path& cache_file, bool retime,
                                const std::atomic<bool>& cancel, LayerCacheUse* use = nullptr);

}  // namespace mixlab::doctor
