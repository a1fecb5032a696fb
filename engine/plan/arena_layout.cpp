#include "engine/plan/arena_layout.h"

#include <algorithm>
#include <cstdio>

#include "engine/core/error.h"

namespace mixlab {

ArenaLayout::Id ArenaLayout::reserve(std::size_t bytes, MemoryPurpose purpose) {
  const std::size_t aligned = (std::max<std::size_t>(bytes, 1) + alignment_ - 1) / alignment_ *
                              alignment_;
  offsets_.push_back(size_);
  size_ += aligned;
  plan_.add(purpose, static_cast<std::int64_t>(aligned));
  return offsets_.size() - 1;
}

std::size_t ArenaLayout::offset(Id id) const {
  MIXLAB_ASSERT(id < offsets_.size());
  return offsets_[id];
}

std::string format_mib(std::size_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

std::string ArenaLayout::describe_need() const {
  std::string parts;
  for (const MemoryPurpose p :
       {MemoryPurpose::parameters, MemoryPurpose::weight_copies, MemoryPurpose::gradients,
        MemoryPurpose::optimizer, MemoryPurpose::activations, MemoryPurpose::workspace}) {
    if (!parts.empty()) parts += ", ";
    parts += std::string(to_string(p)) + " " +
             format_mib(static_cast<std::size_t>(plan_.bytes(p)));
  }
  return "the model needs " + std::to_string(size_) + " bytes (" + format_mib(size_) + ": " +
         parts + ")";
}

}  // namespace mixlab
