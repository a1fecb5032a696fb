// Token datasets (issue 29): a text file's bytes as a language model's data (text:PATH:SEQ_LEN)
// and seeded token sequences (tokens:synthetic:...): their splits, labels, errors and spec forms,
// and the batch loader handing out a label per step.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "engine/core/error.h"
#include "engine/data/batch_loader.h"
#include "engine/data/dataset.h"
#include "engine/data/loaders.h"
#include "tests/data/data_files.h"

namespace mixlab {
namespace {

using Kind = DatasetSpec::Kind;
using test::contains_all;
using test::error_message;

std::filesystem::path write_text(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("mixlab-tokens-" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::string counting_text(std::size_t n) {
  std::string text;
  for (std::size_t i = 0; i < n; ++i) text += static_cast<char>(i * 7 % 251);
  return text;
}

TEST(TextDataset, SequencesOfBytesWithTheNextByteAsEachStepsLabel) {
  const std::string text = counting_text(1000);
  const auto path = write_text("count.txt", text);
  const DatasetPair d = load_text_dataset(path, 8);
  // The last tenth (100 bytes) is held out: 900 bytes give (900 - 1) / 8 = 112 sequences.
  ASSERT_EQ(d.train.size(), 112);
  EXPECT_EQ(d.train.sample_shape, Shape{8});
  EXPECT_EQ(d.train.label_positions, 8);
  EXPECT_EQ(d.train.num_classes, 256);
  EXPECT_EQ(d.train.vocabulary, 256);
  for (std::size_t i = 0; i < d.train.images.size(); ++i) {
    const std::size_t at = i;  // sequences follow one another
    ASSERT_EQ(d.train.images[i], static_cast<std::uint8_t>(text[at]));
    ASSERT_EQ(d.train.labels[i], static_cast<std::uint8_t>(text[at + 1]));
  }
  // The test split starts where the training part ends: (100 - 1) / 8 = 12 sequences.
  ASSERT_EQ(d.test.size(), 12);
  EXPECT_EQ(d.test.images.front(), static_cast<std::uint8_t>(text[900]));
  EXPECT_EQ(d.test.labels.front(), static_cast<std::uint8_t>(text[901]));
  std::filesystem::remove(path);
}

TEST(TextDataset, ATextTooShortOrMissingIsANamedError) {
  const auto path = write_text("short.txt", counting_text(50));
  EXPECT_TRUE(contains_all(error_message<Error>([&] { load_text_dataset(path, 8); }),
                           {"short.txt", "50 bytes are too few for sequences of 8 tokens",
                            "90 in all", "shorter SEQ_LEN"}));
  std::filesystem::remove(path);
  EXPECT_TRUE(contains_all(error_message<Error>([&] { load_text_dataset(path, 8); }),
                           {"short.txt", "cannot open text dataset"}));
  EXPECT_TRUE(contains_all(error_message<Error>([] { load_text_dataset("/dev/null", 0); }),
                           {"SEQ_LEN 0 is out of range"}));
}

TEST(TokenDataset, SyntheticLanguageModelIsSeededAndLearnable) {
  const DatasetPair a = make_synthetic_tokens(16, 50, 0, 200, 3);
  const DatasetPair b = make_synthetic_tokens(16, 50, 0, 200, 3);
  const DatasetPair c = make_synthetic_tokens(16, 50, 0, 200, 4);
  EXPECT_EQ(a.train.images, b.train.images);
  EXPECT_EQ(a.train.labels, b.train.labels);
  EXPECT_NE(a.train.images, c.train.images);
  ASSERT_EQ(a.train.size(), 200);
  EXPECT_EQ(a.test.size(), 40);
  EXPECT_EQ(a.train.label_positions, 16);
  EXPECT_EQ(a.train.num_classes, 50);
  // Each step's label is the next step's id.
  for (std::int64_t s = 0; s < a.train.size(); ++s) {
    for (std::int64_t t = 0; t + 1 < 16; ++t) {
      ASSERT_EQ(a.train.labels[s * 16 + t], a.train.images[s * 16 + t + 1]);
    }
  }
  // A chain: most tokens are followed by one of a few successors.
  std::set<std::pair<int, int>> pairs;
  for (std::size_t i = 0; i < a.train.labels.size(); ++i) {
    pairs.emplace(a.train.images[i], a.train.labels[i]);
  }
  EXPECT_LT(pairs.size(), 50u * 50u / 4);
  for (const std::uint8_t id : a.train.images) ASSERT_LT(id, 50);
}

TEST(TokenDataset, SyntheticClassifierHasALabelPerSequence) {
  const DatasetPair d = make_synthetic_tokens(12, 256, 5, 100, 1);
  EXPECT_EQ(d.train.label_positions, 1);
  EXPECT_EQ(d.train.num_classes, 5);
  EXPECT_EQ(d.train.size(), 100);
  EXPECT_EQ(d.train.images.size(), 1200u);
  for (const std::int32_t label : d.train.labels) ASSERT_LT(label, 5);
}

TEST(TokenDataset, SpecFormsParseAndPrintBack) {
  const DatasetSpec text = parse_dataset_spec("text:/data/book.txt:64");
  EXPECT_EQ(text.kind, Kind::text);
  EXPECT_EQ(text.dir, "/data/book.txt");
  EXPECT_EQ(text.sequence_length, 64);
  EXPECT_EQ(text.to_string(), "text:/data/book.txt:64");
  // A path with colons; the default length.
  const DatasetSpec colons = parse_dataset_spec("text:C:/my:notes.txt");
  EXPECT_EQ(colons.dir, "C:/my:notes.txt");
  EXPECT_EQ(colons.sequence_length, 128);
  EXPECT_EQ(parse_dataset_spec(colons.to_string()).dir, colons.dir);

  const DatasetSpec lm = parse_dataset_spec("tokens:synthetic:128:256");
  EXPECT_EQ(lm.kind, Kind::tokens);
  EXPECT_EQ(lm.sequence_length, 128);
  EXPECT_EQ(lm.vocabulary, 256);
  EXPECT_EQ(lm.classes, 0);
  EXPECT_EQ(lm.to_string(), "tokens:synthetic:128:256");
  const DatasetSpec cls = parse_dataset_spec("tokens:synthetic:64:100:4");
  EXPECT_EQ(cls.classes, 4);
  EXPECT_EQ(cls.to_string(), "tokens:synthetic:64:100:4");
  const DatasetSpec sized = parse_dataset_spec("tokens:synthetic:32:256:0:500");
  EXPECT_EQ(sized.classes, 0);
  EXPECT_EQ(sized.train_size, 500);
  EXPECT_EQ(sized.to_string(), "tokens:synthetic:32:256:0:500");

  EXPECT_TRUE(
      contains_all(error_message<Error>([] { parse_dataset_spec("tokens:synthetic:64:300"); }),
                   {"VOCAB 300 is out of range [2, 256]", "kept as bytes"}));
  EXPECT_TRUE(
      contains_all(error_message<Error>([] { parse_dataset_spec("tokens:synthetic:64:100:1"); }),
                   {"CLASSES 1"}));
  EXPECT_TRUE(contains_all(error_message<Error>([] { parse_dataset_spec("tokens:64:100"); }),
                           {"expected tokens:synthetic:SEQ_LEN:VOCAB"}));
  EXPECT_TRUE(
      contains_all(error_message<Error>([] { parse_dataset_spec("text:"); }), {"missing PATH"}));
  EXPECT_TRUE(contains_all(error_message<Error>([] { parse_dataset_spec("text:a.txt:0"); }),
                           {"SEQ_LEN '0' is out of range"}));
}

TEST(TokenDataset, TheLoaderHandsOutEveryStepsLabelWithItsSample) {
  const DatasetPair d = make_synthetic_tokens(6, 30, 0, 20, 2);
  BatchLoaderOptions options;
  options.batch_size = 8;
  options.seed = 5;
  BatchLoader loader(d.train, options);
  Batch batch;
  int samples = 0;
  while (loader.next(batch)) {
    ASSERT_EQ(batch.labels.size(), static_cast<std::size_t>(batch.size) * 6);
    for (int i = 0; i < batch.size; ++i) {
      const auto sample = static_cast<std::size_t>(batch.indices[static_cast<std::size_t>(i)]);
      for (std::size_t t = 0; t < 6; ++t) {
        ASSERT_EQ(batch.labels[static_cast<std::size_t>(i) * 6 + t],
                  d.train.labels[sample * 6 + t]);
        ASSERT_EQ(batch.images[static_cast<std::size_t>(i) * 6 + t],
                  static_cast<float>(d.train.images[sample * 6 + t]));
      }
    }
    samples += batch.size;
  }
  EXPECT_EQ(samples, 20);
}

}  // namespace
}  // namespace mixlab
