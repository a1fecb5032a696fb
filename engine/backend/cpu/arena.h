// One allocation per executor: buffers are reserved while the model is planned (each with the
// purpose it is counted under), then the arena is allocated once and every reservation becomes
// a pointer into it. Nothing is allocated in the step loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/backend/backend.h"

namespace mixlab::cpu {

using Purpose = MemoryPurpose;

class Arena {
 public:
  using Id = std::size_t;

  // Reserves `bytes` (rounded up to 64-byte alignment); returns the reservation's id.
  Id reserve(std::size_t bytes, Purpose purpose);
  // Allocates and zero-fills the arena; throws AllocationError naming the bytes asked.
  void allocate();
  std::byte* ptr(Id id) const;
  template <class T>
  T* as(Id id) const {
    return reinterpret_cast<T*>(ptr(id));
  }
  const MemoryPlan& plan() const { return plan_; }

 private:
  struct FreeDeleter {
    void operator()(std::byte* p) const;
  };
  std::vector<std::size_t> offsets_;
  std::size_t size_ = 0;
  MemoryPlan plan_;
  std::unique_ptr<std::byte, FreeDeleter> base_;
};

}  // namespace mixlab::cpu
