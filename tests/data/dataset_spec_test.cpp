// The command-line dataset form: parsing, errors, and to_string as its inverse.
#include <string>

#include <gtest/gtest.h>

#include "engine/core/error.h"
#include "engine/data/dataset.h"
#include "tests/data/data_files.h"

namespace mixlab {
namespace {

using Kind = DatasetSpec::Kind;
using test::contains_all;
using test::error_message;

TEST(DatasetSpec, PackagedFashionMnistIsTheDefault) {
  const DatasetSpec spec = parse_dataset_spec("fashion-mnist");
  EXPECT_EQ(spec.kind, Kind::fashion_mnist);
  EXPECT_TRUE(spec.dir.empty());
  EXPECT_EQ(DatasetSpec{}.to_string(), "fashion-mnist");
}

TEST(DatasetSpec, DirectoryKinds) {
  EXPECT_EQ(parse_dataset_spec("fashion-mnist:/data/fm").dir, "/data/fm");
  const DatasetSpec mnist = parse_dataset_spec("mnist:rel/dir");
  EXPECT_EQ(mnist.kind, Kind::mnist);
  EXPECT_EQ(mnist.dir, "rel/dir");
  EXPECT_EQ(parse_dataset_spec("cifar10:/c10").kind, Kind::cifar10);
  EXPECT_EQ(parse_dataset_spec("cifar100:/c100").kind, Kind::cifar100);
  // Everything after the first colon is the directory, colons included.
  EXPECT_EQ(parse_dataset_spec("cifar10:C:\\data:x").dir, "C:\\data:x");
}

TEST(DatasetSpec, Synthetic) {
  const DatasetSpec spec = parse_dataset_spec("synthetic:32x32x3:10");
  EXPECT_EQ(spec.kind, Kind::synthetic);
  EXPECT_EQ(spec.shape, (Shape{32, 32, 3}));
  EXPECT_EQ(spec.classes, 10);
  EXPECT_EQ(spec.train_size, 10000);
  EXPECT_EQ(spec.seed, 1u);
  const DatasetSpec sized = parse_dataset_spec("synthetic:28x20x1:100:50000");
  EXPECT_EQ(sized.shape, (Shape{28, 20, 1}));
  EXPECT_EQ(sized.classes, 100);
  EXPECT_EQ(sized.train_size, 50000);
  EXPECT_EQ(parse_dataset_spec("synthetic:4x4x1:2:1:77").seed, 77u);
}

TEST(DatasetSpec, RoundTrip) {
  for (const std::string text :
       {"fashion-mnist", "fashion-mnist:/usr/share/datasets/fashion-mnist", "mnist:/data/mnist",
        "cifar10:/data/cifar-10-batches-bin", "cifar100:relative/dir", "synthetic:32x32x3:10:10000",
        "synthetic:1x1x1:2:1", "synthetic:8x8x3:5:100:42", "synthetic:784:10:100",
        "synthetic:28x28:10:100"}) {
    const DatasetSpec spec = parse_dataset_spec(text);
    EXPECT_EQ(spec.to_string(), text);
    const DatasetSpec again = parse_dataset_spec(spec.to_string());
    EXPECT_EQ(again.kind, spec.kind);
    EXPECT_EQ(again.dir, spec.dir);
    EXPECT_EQ(again.shape, spec.shape);
    EXPECT_EQ(again.classes, spec.classes);
    EXPECT_EQ(again.train_size, spec.train_size);
    EXPECT_EQ(again.seed, spec.seed);
  }
  // The short synthetic form comes back with its N spelled out.
  EXPECT_EQ(parse_dataset_spec("synthetic:32x32x3:10").to_string(), "synthetic:32x32x3:10:10000");
}

std::string spec_error(const std::string& text) {
  return error_message<ConfigError>([&] { parse_dataset_spec(text); });
}

TEST(DatasetSpec, Errors) {
  EXPECT_TRUE(contains_all(spec_error(""), {"empty", "synthetic:HxWxC:CLASSES"}));
  EXPECT_TRUE(contains_all(spec_error("imagenet:/x"),
                           {"'imagenet:/x'", "unknown kind 'imagenet'", "cifar10:DIR"}));
  EXPECT_TRUE(contains_all(spec_error("Fashion-MNIST"), {"unknown kind"}));
  EXPECT_TRUE(contains_all(spec_error("mnist"), {"missing DIR", "mnist:DIR"}));
  EXPECT_TRUE(contains_all(spec_error("cifar10:"), {"missing DIR"}));
  EXPECT_TRUE(contains_all(spec_error("fashion-mnist:"), {"missing DIR"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic"), {"expected synthetic:HxWxC:CLASSES"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3"), {"expected synthetic:HxWxC"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3x1:10"), {"bad shape"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x0x3:10"), {"bad shape '32x0x3'"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x-2x3:10"), {"bad shape"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32xax3:10"), {"bad shape"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:1"), {"classes must be 2..", "found 1"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:ten"), {"bad number of classes 'ten'"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:0"), {"N", "at least 1", "found 0"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:-5"), {"at least 1", "found -5"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:+5"), {"bad number of samples"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:5 "), {"bad number of samples"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:99999999999999999999"),
                           {"bad number of samples"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:100:x"), {"bad seed 'x'"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:32x32x3:10:100:1:2"), {"expected synthetic"}));
  EXPECT_TRUE(contains_all(spec_error("synthetic:1024x1024x3:10:100000"), {"limit", "GiB"}));
}

}  // namespace
}  // namespace mixlab
