#include "app/store/run_record.h"

#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <random>
#include <string>

namespace mixlab::store {

namespace {

constexpr std::array<std::string_view, 6> kStatusNames = {"running",  "finished", "stopped",
                                                          "diverged", "failed",   "interrupted"};

std::string host_name() {
  std::array<char, 256> buffer{};
  if (gethostname(buffer.data(), buffer.size() - 1) != 0) return {};
  return buffer.data();
}

}  // namespace

std::string_view to_string(RecordStatus status) {
  return kStatusNames[static_cast<std::size_t>(status)];
}

std::optional<RecordStatus> parse_record_status(std::string_view text) {
  for (std::size_t i = 0; i < kStatusNames.size(); ++i) {
    if (kStatusNames[i] == text) return static_cast<RecordStatus>(i);
  }
  return std::nullopt;
}

std::string describe_damage(const RunRecord& record) {
  std::string text;
  for (const ColumnDamage& d : record.damage)
    text += (text.empty() ? "" : "; ") + d.column + ": " + d.problem;
  return text;
}

RecordStatus record_status(RunStatus status) {
  switch (status) {
    case RunStatus::running:
      return RecordStatus::running;
    case RunStatus::finished:
      return RecordStatus::finished;
    case RunStatus::stopped:
      return RecordStatus::stopped;
    case RunStatus::diverged:
      return RecordStatus::diverged;
    case RunStatus::failed:
      return RecordStatus::failed;
  }
  return RecordStatus::failed;
}

Environment describe_environment(const DeviceInfo& device, std::string_view mixlab_version) {
  Environment env;
  env.device_kind = device.kind;
  env.device_name = device.name;
  env.compute_capability = device.compute_capability;
  env.threads = device.threads;
  env.cpu_model = cpu_model_name();
  env.mixlab_version = std::string(mixlab_version);
  env.hostname = host_name();
  env.onednn_version = device.libraries.onednn;
  env.cuda_version = device.libraries.cuda_runtime;
  env.driver_version = device.libraries.driver;
  env.cublas_version = device.libraries.cublas;
  env.cudnn_version = device.libraries.cudnn;
  return env;
}

std::string format_utc(std::int64_t ms_since_epoch) {
  if (ms_since_epoch == 0) return {};
  const std::time_t seconds = static_cast<std::time_t>(ms_since_epoch / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  std::array<char, 64> buffer{};
  std::snprintf(buffer.data(), buffer.size(), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms_since_epoch % 1000));
  return buffer.data();
}

std::int64_t now_utc_ms() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

std::string new_uid() {
  // std::random_device reads the kernel's random source (getrandom) on Linux.
  std::random_device random;
  std::string uid;
  uid.reserve(32);
  for (int i = 0; i < 4; ++i) {
    std::array<char, 9> hex{};
    std::snprintf(hex.data(), hex.size(), "%08x", static_cast<unsigned>(random()));
    uid += hex.data();
  }
  return uid;
}

}  // namespace mixlab::store
