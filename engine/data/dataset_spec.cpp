// The command-line form of a dataset choice, and load_dataset, which dispatches to the
// per-format loaders (engine/data/loaders.h).
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"

namespace mixlab {

namespace {

using Kind = DatasetSpec::Kind;

struct KindName {
  Kind kind;
  std::string_view name;
};
constexpr KindName kKindNames[] = {{Kind::fashion_mnist, "fashion-mnist"},
                                   {Kind::mnist, "mnist"},
                                   {Kind::cifar10, "cifar10"},
                                   {Kind::cifar100, "cifar100"},
                                   {Kind::synthetic, "synthetic"}};

constexpr std::string_view kForms =
    "fashion-mnist, fashion-mnist:DIR, mnist:DIR, cifar10:DIR, cifar100:DIR or "
    "synthetic:HxWxC:CLASSES[:N]";

std::string_view kind_name(Kind kind) {
  for (const KindName& entry : kKindNames) {
    if (entry.kind == kind) return entry.name;
  }
  return "unknown";
}

[[noreturn]] void bad_spec(std::string_view text, const std::string& what) {
  throw ConfigError("dataset " + quote(text) + ": " + what);
}

// The whole of `text` as a decimal number; nullopt-like false for anything else (sign, space,
// junk, overflow).
template <typename Int>
bool parse_number(std::string_view text, Int& value) {
  if (text.empty() || text.front() == '+') return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (;;) {
    const std::size_t at = text.find(separator);
    parts.push_back(text.substr(0, at));
    if (at == std::string_view::npos) return parts;
    text.remove_prefix(at + 1);
  }
}

DatasetSpec parse_synthetic(std::string_view text, std::string_view rest) {
  const std::vector<std::string_view> parts = split(rest, ':');
  if (rest.empty() || parts.size() < 2 || parts.size() > 4) {
    bad_spec(text, "expected synthetic:HxWxC:CLASSES[:N[:SEED]], e.g. synthetic:32x32x3:10:50000");
  }
  DatasetSpec spec;
  spec.kind = Kind::synthetic;
  const std::vector<std::string_view> sides = split(parts[0], 'x');
  for (const std::string_view side : sides) {
    std::int64_t value = 0;
    if (sides.size() > 3 || !parse_number(side, value) || value < 1) {
      bad_spec(text, "bad shape " + quote(parts[0]) +
                         "': expected HxWxC (or 1 or 2 sizes) with positive sizes, e.g. "
                         "32x32x3 or 784");
    }
    spec.shape.push_back(value);
  }
  std::int64_t classes = 0;
  if (!parse_number(parts[1], classes)) {
    bad_spec(text, "bad number of classes " + quote(parts[1]));
  }
  if (parts.size() >= 3 && !parse_number(parts[2], spec.train_size)) {
    bad_spec(text, "bad number of samples N " + quote(parts[2]));
  }
  if (parts.size() == 4 && !parse_number(parts[3], spec.seed)) {
    bad_spec(text, "bad seed " + quote(parts[3]));
  }
  if (const std::string problem = check_synthetic(spec.shape, classes, spec.train_size);
      !problem.empty()) {
    bad_spec(text, problem);
  }
  spec.classes = static_cast<int>(classes);
  return spec;
}

}  // namespace

DatasetSpec parse_dataset_spec(std::string_view text) {
  if (text.empty()) bad_spec(text, "empty; expected " + std::string(kForms));
  const std::size_t colon = text.find(':');
  const std::string_view name = text.substr(0, colon);
  const std::string_view rest =
      colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  const KindName* found = nullptr;
  for (const KindName& entry : kKindNames) {
    if (entry.name == name) found = &entry;
  }
  if (found == nullptr) {
    bad_spec(text, "unknown kind " + quote(name) + "; expected " + std::string(kForms));
  }
  if (found->kind == Kind::synthetic) return parse_synthetic(text, rest);

  DatasetSpec spec;
  spec.kind = found->kind;
  if (colon == std::string_view::npos && found->kind == Kind::fashion_mnist) return spec;
  if (rest.empty()) {
    bad_spec(text,
             "missing DIR; expected " + std::string(name) + ":DIR" +
                 (found->kind == Kind::fashion_mnist ? " or fashion-mnist (the packaged " +
                                                           std::string(kDebianFashionMnistDir) + ")"
                                                     : ""));
  }
  spec.dir = std::filesystem::path(std::string(rest));
  return spec;
}

std::string DatasetSpec::to_string() const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
  std::string text(kind_name(kind));
  if (kind == Kind::synthetic) {
    for (std::size_t i = 0; i < shape.size(); ++i) {
      text += i == 0 ? ':' : 'x';
      text += std::to_string(shape[i]);
    }
    text += ':';
    text += std::to_string(classes);
    text += ':';
    text += std::to_string(train_size);
    if (seed != DatasetSpec{}.seed) {
      text += ':';
      text += std::to_string(seed);
    }
    return text;
  }
  if (!dir.empty()) {
    text += ':';
    text += dir.string();
  }
  return text;
}

DatasetPair load_dataset(const DatasetSpec& spec) {
  switch (spec.kind) {
    case Kind::fashion_mnist:
      if (spec.dir.empty()) {
        const std::filesystem::path dir(kDebianFashionMnistDir);
        std::error_code ec;
        if (!std::filesystem::is_directory(dir, ec)) {
          throw DatasetError(dir.string() +
                             ": fashion-mnist directory not found; install Debian's "
                             "dataset-fashion-mnist package or give fashion-mnist:DIR");
        }
        return load_idx_dataset(dir, "fashion-mnist");
      }
      return load_idx_dataset(spec.dir, "fashion-mnist");
    case Kind::mnist:
      return load_idx_dataset(spec.dir, "mnist");
    case Kind::cifar10:
      return load_cifar10(spec.dir);
    case Kind::cifar100:
      return load_cifar100(spec.dir);
    case Kind::synthetic:
      return make_synthetic(spec.shape, spec.classes, spec.train_size, spec.seed);
  }
  throw ConfigError("dataset spec of unknown kind " + std::to_string(static_cast<int>(spec.kind)));
}

}  // namespace mixlab
