// What the run panel's two files share (internal to ui/run): the dataset combo's entries, in
// its order, and the loss-scaling combo's modes.
#pragma once

#include <span>

namespace mixlab::ui::run_panel {

// An entry of the dataset combo: what the engine's dataset spec starts with.
struct DatasetKind {
  const char* label;
  const char* prefix;  // "fashion-mnist", "mnist:" (a folder follows), "synthetic"
  bool folder;
};
std::span<const DatasetKind> dataset_kinds();
inline constexpr int kSyntheticKind = 5;  // its entry: the model's input shape and outputs
inline constexpr int kTextKind = 6;       // a text file's bytes as tokens (a file, not a folder)
inline constexpr int kTokensKind = 7;     // seeded tokens: the model's steps, vocabulary, labels

enum LossScaleMode { kAuto, kNone, kStatic, kDynamic };  // the loss-scaling combo's entries

}  // namespace mixlab::ui::run_panel
