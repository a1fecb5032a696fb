// The bookkeeping of one allocation, shared by the CPU arena and the CUDA device arena:
// reservations are made while a model is planned, each aligned and counted under its purpose,
// then the backend allocates size() bytes once and every reservation is an offset into it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/plan/execution_plan.h"

namespace mixlab {

class ArenaLayout {
 public:
  using Id = std::size_t;

  // `alignment`: of every reservation (a power of two).
  explicit ArenaLayout(std::size_t alignment) : alignment_(alignment) {}

  // Reserves `bytes` (at least one alignment unit); returns the reservation's id.
  Id reserve(std::size_t bytes, MemoryPurpose purpose);
  // Reserves a plan buffer.
  Id reserve(const PlanBuffer& buffer) {
    return reserve(static_cast<std::size_t>(buffer.bytes()), buffer.purpose);
  }
  std::size_t offset(Id id) const;
  std::size_t size() const { return size_; }
  std::size_t alignment() const { return alignment_; }
  const MemoryPlan& plan() const { return plan_; }

  // "the model needs N bytes (X MiB: parameters ..., workspaces ...)", for allocation errors.
  std::string describe_need() const;

 private:
  std::size_t alignment_;
  std::vector<std::size_t> offsets_;
  std::size_t size_ = 0;
  MemoryPlan plan_;
};

// "12.3 MiB".
std::string format_mib(std::size_t bytes);

}  // namespace mixlab
