// One allocation per executor: buffers are reserved while the model is planned (each with the
// purpose it is counted under), then the arena is allocated once and every reservation becomes
// a pointer into it. Nothing is allocated in the step loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/plan/arena_layout.h"

namespace mixlab::cpu {

using Purpose = MemoryPurpose;

class Arena {
 public:
  using Id = ArenaLayout::Id;

  // Reserves `bytes` (rounded up to 64-byte alignment); returns the reservation's id.
  Id reserve(std::size_t bytes, Purpose purpose);
  Id reserve(const PlanBuffer& buffer) {
    return reserve(static_cast<std::size_t>(buffer.bytes()), buffer.purpose);
  }
  // Allocates and zero-fills the arena; throws AllocationError naming the bytes asked.
  void allocate();
  std::byte* ptr(Id id) const;
  template <class T>
  T* as(Id id) const {
    return reinterpret_cast<T*>(ptr(id));
  }
  const MemoryPlan& plan() const { return layout_.plan(); }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  ArenaLayout layout_{64};  // a cache line; AVX-512 loads
  std::unique_ptr<std::byte, FreeDeleter> base_;
};

}  // namespace mixlab::cpu
