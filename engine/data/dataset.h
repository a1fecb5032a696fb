// Datasets: in-memory image sets with integer labels, loaded from the standard files (IDX for
// MNIST / Fashion-MNIST, the binary versions of CIFAR-10/100) or generated (synthetic); and token
// sequences (a text file's bytes, or seeded tokens), whose samples are (steps) token ids with a
// label per sample (a classifier) or per step (a language model's next token).
// Images are kept as raw pixel bytes (0..255) in HWC order, as Keras's load_data gives them; the
// loader hands them to the trainer as float32 without scaling (models scale with Rescaling).
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "engine/spec/shape_inference.h"

namespace mixlab {

struct Dataset {
  std::string name;    // "fashion-mnist/train", "cifar10/test", ...
  Shape sample_shape;  // [H, W, C]; token sequences: [steps]
  int num_classes = 0;
  std::vector<std::uint8_t> images;  // (size, H, W, C); token sequences: (size, steps) ids
  // (size, label_positions), each in [0, num_classes)
  std::vector<std::int32_t> labels;
  int label_positions = 1;  // labels per sample: 1, or a language model's steps
  int vocabulary = 0;       // token sequences: the ids are below it (0: not tokens)

  std::int64_t size() const {
    return static_cast<std::int64_t>(labels.size()) / std::max(1, label_positions);
  }
  std::int64_t sample_elements() const { return num_elements(sample_shape); }
};

struct DatasetPair {
  Dataset train;
  Dataset test;
};

// Which dataset a run uses, as given on the command line:
//   fashion-mnist              Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)
//   fashion-mnist:DIR, mnist:DIR   IDX files (plain or .gz) in DIR
//   cifar10:DIR, cifar100:DIR  the binary versions (DIR holds data_batch_1.bin... / train.bin)
//   synthetic:HxWxC:CLASSES[:N]    a seeded, learnable set of N training samples (default 10000);
//                                  the shape may have 1 or 2 sizes too (784: flat features)
//   synthetic:HxWxC:CLASSES:N:SEED the same with a seed other than the default 1
//   text:PATH[:SEQ_LEN]        the bytes of a text file as tokens (vocabulary 256), sequences of
//                              SEQ_LEN (default 128) with the next byte at every step as labels;
//                              the file's last tenth is the test split
//   tokens:synthetic:SEQ_LEN:VOCAB[:CLASSES[:N]]   seeded sequences of ids below VOCAB (at most
//                              256): with CLASSES, a label per sequence (a classifier); without
//                              or 0, the next token at every step (a language model); N
//                              training samples (default 10000)
struct DatasetSpec {
  enum class Kind : std::uint8_t {
    fashion_mnist,
    mnist,
    cifar10,
    cifar100,
    synthetic,
    text,
    tokens
  };
  Kind kind = Kind::fashion_mnist;
  std::filesystem::path dir;        // empty for synthetic and for the packaged Fashion-MNIST;
                                    // text: the file
  Shape shape;                      // synthetic only: [H, W, C]
  int classes = 0;                  // synthetic; tokens: 0 for a language model
  int sequence_length = 128;        // text, tokens
  int vocabulary = 256;             // tokens (text: 256, its bytes)
  std::int64_t train_size = 10000;  // synthetic only; the test split is a fifth of it (>= 1)
  std::uint64_t seed = 1;           // synthetic only

  // The command-line form, parse_dataset_spec's inverse. Synthetic specs always carry N, and
  // SEED when it is not 1: "synthetic:32x32x3:10:10000".
  std::string to_string() const;
};

inline constexpr std::string_view kDebianFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// A seeded synthetic set a model can train on (timing, the doctor, benches): token sequences
// for a model whose Embedding reads its (steps) input (a label per step when its output has
// them), else images of its input shape with its classes.
DatasetSpec synthetic_for_model(const ModelSpec& spec, const ShapeTable& table,
                                std::int64_t train_size);

// Parses the command-line form above; throws ConfigError naming the problem.
DatasetSpec parse_dataset_spec(std::string_view text);
// Loads both splits. Throws DatasetError naming the file and what was expected for a missing,
// truncated, corrupt or mismatched file.
DatasetPair load_dataset(const DatasetSpec& spec);

}  // namespace mixlab
