// Token datasets: a text file's bytes as tokens (a language model's data), and seeded token
// sequences for timing and for classifiers. Ids are kept as bytes (a vocabulary of at most 256),
// as images are, so that the loader, the trainer and the device's copy of a dataset serve both.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/text_file.h"
#include "engine/data/loaders.h"
#include "engine/data/rng.h"

namespace mixlab {

namespace {

// Sequences of `steps` from bytes [first, last) of `text`, one after another: a sample's ids are
// steps bytes, its labels the byte after each (the next token).
Dataset text_split(const std::string& text, std::size_t first, std::size_t last, int steps,
                   std::string name) {
  Dataset d;
  d.name = std::move(name);
  d.sample_shape = {steps};
  d.num_classes = 256;
  d.vocabulary = 256;
  d.label_positions = steps;
  const auto s = static_cast<std::size_t>(steps);
  for (std::size_t at = first; at + s + 1 <= last; at += s) {
    for (std::size_t i = 0; i < s; ++i) {
      d.images.push_back(static_cast<std::uint8_t>(text[at + i]));
      d.labels.push_back(static_cast<std::uint8_t>(text[at + i + 1]));
    }
  }
  return d;
}

}  // namespace

DatasetPair load_text_dataset(const std::filesystem::path& path, int steps) {
  if (steps < 1 || steps > kMaxTokenSteps) {
    throw ConfigError("text dataset " + path.string() + ": SEQ_LEN " + std::to_string(steps) +
                      " is out of range [1, " + std::to_string(kMaxTokenSteps) + "]");
  }
  const std::string text = read_text_file<DatasetError>(
      path, TextFileKind{"text dataset", kMaxTextDatasetBytes,
                         " (a text dataset is read whole into memory)"});
  // The last tenth is held out; each part needs one sequence and its next byte.
  const std::size_t s = static_cast<std::size_t>(steps);
  const std::size_t split = text.size() - text.size() / 10;
  if (text.size() / 10 < s + 1 || split < s + 1) {
    throw DatasetError(path.string() + ": " + std::to_string(text.size()) +
                       " bytes are too few for sequences of " + std::to_string(steps) +
                       " tokens: the training part and the held-out last tenth each need " +
                       std::to_string(steps + 1) + " bytes at least (" +
                       std::to_string(10 * (steps + 1)) +
                       " in all); give a shorter SEQ_LEN (text:PATH:SEQ_LEN) or a longer text");
  }
  const std::string stem = path.filename().string();
  DatasetPair pair;
  pair.train = text_split(text, 0, split, steps, "text " + stem + "/train");
  pair.test = text_split(text, split, text.size(), steps, "text " + stem + "/test");
  return pair;
}

std::string check_synthetic_tokens(int steps, int vocabulary, int classes) {
  if (steps < 1 || steps > kMaxTokenSteps) {
    return "SEQ_LEN " + std::to_string(steps) + " is out of range [1, " +
           std::to_string(kMaxTokenSteps) + "]";
  }
  if (vocabulary < 2 || vocabulary > 256) {
    return "VOCAB " + std::to_string(vocabulary) +
           " is out of range [2, 256] (token ids are kept as bytes)";
  }
  if (classes == 1 || classes < 0 || classes > kMaxSyntheticClasses) {  // 0: a language model
    return "CLASSES " + std::to_string(classes) + " is out of range [2, " +
           std::to_string(kMaxSyntheticClasses) + "] (leave it out for a language model)";
  }
  return {};
}

DatasetPair make_synthetic_tokens(int steps, int vocabulary, int classes, std::int64_t train_size,
                                  std::uint64_t seed) {
  if (const std::string problem = check_synthetic_tokens(steps, vocabulary, classes);
      !problem.empty()) {
    throw ConfigError("tokens:synthetic: " + problem);
  }
  const auto v = static_cast<std::uint64_t>(vocabulary);
  // A language model's tokens follow a seeded chain: after each token, one of its 4 successors
  // 9 times in 10, else any token (a bigram model's loss is about 1.9 against ln VOCAB at
  // first). A classifier's samples draw 3 tokens in 10 from their class's 8 favoured ones.
  constexpr int kSuccessors = 4;
  constexpr int kFavoured = 8;
  SplitMix64 table_rng(seed, 1);
  std::vector<std::uint8_t> successors(static_cast<std::size_t>(vocabulary * kSuccessors));
  for (auto& s : successors) s = static_cast<std::uint8_t>(table_rng.below(v));
  std::vector<std::uint8_t> favoured(static_cast<std::size_t>(std::max(classes, 1) * kFavoured));
  for (auto& f : favoured) f = static_cast<std::uint8_t>(table_rng.below(v));

  const auto split = [&](std::int64_t size, std::uint64_t streams, const char* which) {
    Dataset d;
    d.name = "tokens:synthetic/" + std::string(which);
    d.sample_shape = {steps};
    d.vocabulary = vocabulary;
    d.num_classes = classes > 0 ? classes : vocabulary;
    d.label_positions = classes > 0 ? 1 : steps;
    d.images.reserve(static_cast<std::size_t>(size * steps));
    for (std::int64_t i = 0; i < size; ++i) {
      SplitMix64 rng(seed, streams + static_cast<std::uint64_t>(i));
      if (classes > 0) {
        const auto label = static_cast<int>(rng.below(static_cast<std::uint64_t>(classes)));
        for (int t = 0; t < steps; ++t) {
          const bool favour = rng.below(10) < 3;
          d.images.push_back(
              favour ? favoured[static_cast<std::size_t>(label * kFavoured) + rng.below(kFavoured)]
                     : static_cast<std::uint8_t>(rng.below(v)));
        }
        d.labels.push_back(label);
        continue;
      }
      auto token = static_cast<std::uint8_t>(rng.below(v));
      for (int t = 0; t <= steps; ++t) {
        if (t < steps) d.images.push_back(token);
        if (t > 0) d.labels.push_back(token);
        token =
            rng.below(10) < 9
                ? successors[static_cast<std::size_t>(token) * kSuccessors + rng.below(kSuccessors)]
                : static_cast<std::uint8_t>(rng.below(v));
      }
    }
    return d;
  };
  DatasetPair pair;
  pair.train = split(train_size, std::uint64_t{1} << 40, "train");
  pair.test = split(std::max<std::int64_t>(1, train_size / 5), std::uint64_t{2} << 40, "test");
  return pair;
}

}  // namespace mixlab
