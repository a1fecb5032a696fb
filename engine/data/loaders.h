// The per-format dataset loaders behind load_dataset (engine/data/dataset.h). Engine-internal;
// tests call them directly to load files they wrote.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "engine/data/dataset.h"

namespace mixlab {

// IDX (MNIST, Fashion-MNIST): train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte in dir, each plain or with ".gz" appended.
// `kind` names the datasets ("mnist" gives "mnist/train" and "mnist/test").
DatasetPair load_idx_dataset(const std::filesystem::path& dir, std::string_view kind);
// One split from an image file and a label file (each plain or gzip). 10 classes.
Dataset load_idx_split(const std::filesystem::path& images, const std::filesystem::path& labels,
                       std::string name);

// CIFAR-10 binary version: dir or dir/cifar-10-batches-bin holds data_batch_1.bin ...
// data_batch_5.bin and test_batch.bin.
DatasetPair load_cifar10(const std::filesystem::path& dir);
// CIFAR-100 binary version: dir or dir/cifar-100-binary holds train.bin and test.bin; the fine
// labels (100 classes) are used.
DatasetPair load_cifar100(const std::filesystem::path& dir);

// Checks the parameters of a synthetic set (HxWxC, or 1 or 2 sizes, each 1..65536, classes 2..65536, N >= 1, at
// most kMaxSyntheticBytes in all); returns what is wrong, empty when nothing is.
inline constexpr std::int64_t kMaxSyntheticBytes = std::int64_t{16} << 30;
inline constexpr std::int64_t kMaxSyntheticClasses = 65536;
std::string check_synthetic(const Shape& shape, std::int64_t classes, std::int64_t train_size);

// A seeded, learnable synthetic set: one random prototype image per class, each sample the
// average of its class's prototype and uniform noise; balanced labels in random order.
// shape is [H, W, C]; the test split has max(1, train_size / 5) samples. Throws ConfigError for
// parameters check_synthetic rejects.
DatasetPair make_synthetic(const Shape& shape, int classes, std::int64_t train_size,
                           std::uint64_t seed);

// Token datasets (engine/data/tokens.cpp). A text file's bytes as tokens: sequences of `steps`
// ids, one after another, each labelled with the next byte at every step; the file's last tenth
// is the test split. At most kMaxTextDatasetBytes are read.
inline constexpr std::uintmax_t kMaxTextDatasetBytes = std::uintmax_t{1} << 30;
inline constexpr int kMaxTokenSteps = 65536;
DatasetPair load_text_dataset(const std::filesystem::path& path, int steps);
// Seeded token sequences of `steps` ids below `vocabulary` (2..256): with classes >= 2 a label
// per sequence, with classes 0 the next token at every step. check_synthetic_tokens says what is
// wrong with the parameters (empty when nothing is).
std::string check_synthetic_tokens(int steps, int vocabulary, int classes);
DatasetPair make_synthetic_tokens(int steps, int vocabulary, int classes, std::int64_t train_size,
                                  std::uint64_t seed);

}  // namespace mixlab
