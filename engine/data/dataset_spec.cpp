// The command-line form of a dataset choice, and load_dataset, which dispatches to the
// per-format loaders (engine/data/loaders.h).
#include <algorithm>
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
                                   {Kind::synthetic, "synthetic"},
                                   {Kind::text, "text"},
                                   {Kind::tokens, "tokens"}};

constexpr std::string_view kForms =
    "fashion-mnist, fashion-mnist:DIR, mnist:DIR, cifar10:DIR, cifar100:DIR, "
    "synthetic:HxWxC:CLASSES[:N], text:PATH[:SEQ_LEN] or tokens:synthetic:SEQ_LEN:VOCAB[:CLASSES]";

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

// text:PATH[:SEQ_LEN]: a last part of digits is the length (a path may hold colons).
DatasetSpec parse_text(std::string_view text, std::string_view rest) {
  DatasetSpec spec;
  spec.kind = Kind::text;
  std::string_view path = rest;
  const std::size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    const std::string_view tail = rest.substr(colon + 1);
    int steps = 0;
    if (!tail.empty() &&
        std::all_of(tail.begin(), tail.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      if (!parse_number(tail, steps) || steps < 1 || steps > kMaxTokenSteps) {
        bad_spec(text, "SEQ_LEN " + quote(tail) + " is out of range [1, " +
                           std::to_string(kMaxTokenSteps) + "]");
      }
      spec.sequence_length = steps;
      path = rest.substr(0, colon);
    }
  }
  if (path.empty())
    bad_spec(text, "missing PATH; expected text:PATH[:SEQ_LEN], e.g. text:book.txt:128");
  spec.dir = std::filesystem::path(std::string(path));
  spec.vocabulary = 256;
  spec.classes = 0;
  return spec;
}

// tokens:synthetic:SEQ_LEN:VOCAB[:CLASSES[:N]] (CLASSES 0: a language model)
DatasetSpec parse_tokens(std::string_view text, std::string_view rest) {
  const std::vector<std::string_view> parts = split(rest, ':');
  constexpr const char* kForm =
      "expected tokens:synthetic:SEQ_LEN:VOCAB[:CLASSES[:N]], e.g. tokens:synthetic:128:256 (a "
      "language model) or tokens:synthetic:64:256:4 (a classifier)";
  if (parts.size() < 3 || parts.size() > 5 || parts[0] != "synthetic") bad_spec(text, kForm);
  DatasetSpec spec;
  spec.kind = Kind::tokens;
  int steps = 0, vocabulary = 0, classes = 0;
  if (!parse_number(parts[1], steps)) bad_spec(text, "bad SEQ_LEN " + quote(parts[1]));
  if (!parse_number(parts[2], vocabulary)) bad_spec(text, "bad VOCAB " + quote(parts[2]));
  if (parts.size() >= 4 && !parse_number(parts[3], classes)) {
    bad_spec(text, "bad number of classes " + quote(parts[3]));
  }
  if (parts.size() == 5 && (!parse_number(parts[4], spec.train_size) || spec.train_size < 1)) {
    bad_spec(text, "bad number of samples N " + quote(parts[4]));
  }
  if (const std::string problem = check_synthetic_tokens(steps, vocabulary, classes);
      !problem.empty()) {
    bad_spec(text, problem);
  }
  spec.sequence_length = steps;
  spec.vocabulary = vocabulary;
  spec.classes = classes;
  return spec;
}

}  // namespace

DatasetSpec synthetic_for_model(const ModelSpec& spec, const ShapeTable& table,
                                std::int64_t train_size) {
  DatasetSpec ds;
  ds.train_size = train_size;
  const auto first = std::find_if(spec.layers.begin(), spec.layers.end(), [](const LayerSpec& l) {
    return l.type == LayerType::Embedding;
  });
  if (first == spec.layers.end() || table.input_shape.size() != 1) {
    ds.kind = Kind::synthetic;
    ds.shape = table.input_shape;
    ds.classes = static_cast<int>(std::max<std::int64_t>(2, table.classes()));
    return ds;
  }
  // Token ids below the Embedding's vocabulary (a byte at most); a language model's labels are
  // ids too, so its vocabulary is its classes'.
  ds.kind = Kind::tokens;
  ds.sequence_length = static_cast<int>(table.input_shape[0]);
  const bool per_step = table.label_positions() > 1;
  std::int64_t vocabulary = std::min<std::int64_t>(first->input_dim, 256);
  if (per_step) vocabulary = std::min(vocabulary, table.classes());
  ds.vocabulary = static_cast<int>(std::max<std::int64_t>(2, vocabulary));
  ds.classes = per_step ? 0 : static_cast<int>(std::max<std::int64_t>(2, table.classes()));
  return ds;
}

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
  if (found->kind == Kind::text) return parse_text(text, rest);
  if (found->kind == Kind::tokens) return parse_tokens(text, rest);

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
  if (kind == Kind::tokens) {
    text += ":synthetic:";
    text += std::to_string(sequence_length);
    text += ':';
    text += std::to_string(vocabulary);
    if (classes > 0 || train_size != DatasetSpec{}.train_size) {
      text += ':';
      text += std::to_string(classes);
    }
    if (train_size != DatasetSpec{}.train_size) {
      text += ':';
      text += std::to_string(train_size);
    }
    return text;
  }
  if (kind == Kind::text) {
    text += ':';
    text += dir.string();
    text += ':';
    text += std::to_string(sequence_length);
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
    case Kind::text:
      return load_text_dataset(spec.dir, spec.sequence_length);
    case Kind::tokens:
      return make_synthetic_tokens(spec.sequence_length, spec.vocabulary, spec.classes,
                                   spec.train_size, spec.seed);
  }
  throw ConfigError("dataset spec of unknown kind " + std::to_string(static_cast<int>(spec.kind)));
}

}  // namespace mixlab
