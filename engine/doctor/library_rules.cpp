#include "engine/doctor/library_rules.h"

#include <cctype>
#include <vector>

#include "engine/core/error.h"

namespace mixlab::doctor {

namespace {

// The numbers of a dotted version; empty when it is not one.
std::vector<long> parts(std::string_view version) {
  std::vector<long> out;
  long value = 0;
  bool digit = false;
  for (const char c : version) {
    if (std::isdigit(static_cast<unsigned char>(c)) != 0) {
      if (value > 100000) return {};
      value = value * 10 + (c - '0');
      digit = true;
    } else if (c == '.' && digit) {
      out.push_back(value);
      value = 0;
      digit = false;
    } else {
      return {};
    }
  }
  if (!digit) return {};
  out.push_back(value);
  return out;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

LibraryVersions builtin_library_versions() {
  LibraryVersions l;
  l.cuda_runtime = "13.0";
  l.cublas = "13.0";
  l.cudnn = std::string("9");
  return l;
}

bool version_at_least(std::string_view version, std::string_view since) {
  if (version.empty()) return true;
  std::vector<long> v = parts(version);
  std::vector<long> s = parts(since);
  if (v.empty() || s.empty()) return true;
  v.resize(std::max(v.size(), s.size()), 0);
  s.resize(v.size(), 0);
  return v >= s;
}

std::string version_of(const LibraryRule& rule, const LibraryVersions& libraries) {
  return std::string_view(rule.library) == "cuDNN" ? libraries.cudnn : libraries.cublas;
}

bool holds(const LibraryRule& rule, const LibraryVersions& libraries) {
  return version_at_least(version_of(rule, libraries), rule.since);
}

LibraryVersions parse_library_versions(std::string_view text, LibraryVersions base) {
  if (text.empty()) throw ConfigError("--libraries names no library (cublas=11.2,cudnn=8.1)");
  const auto fail = [](std::string_view part, const char* why) {
    std::string message("--libraries: '");
    message.append(part).append("' ").append(why);
    throw ConfigError(message);
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view part = text.substr(start, comma - start);
    const std::size_t eq = part.find('=');
    if (eq == std::string_view::npos) fail(part, "is not library=version (cublas=11.2,cudnn=8.1)");
    const std::string name = lower(part.substr(0, eq));
    const std::string_view version = part.substr(eq + 1);
    if (parts(version).empty()) fail(part, "is not a dotted version");
    if (name == "cublas") {
      base.cublas = std::string(version);
    } else if (name == "cudnn") {
      base.cudnn = std::string(version);
    } else {
      fail(part.substr(0, eq), "is not a library the doctor knows (cublas, cudnn)");
    }
    start = comma + 1;
  }
  return base;
}

std::string describe_gpu_libraries(const LibraryVersions& libraries) {
  std::string out;
  const auto add = [&out](const char* name, const std::string& version) {
    if (version.empty()) return;
    if (!out.empty()) out.append(", ");
    out.append(name).append(" ").append(version);
  };
  add("cuBLAS", libraries.cublas);
  add("cuDNN", libraries.cudnn);
  return out;
}

}  // namespace mixlab::doctor
