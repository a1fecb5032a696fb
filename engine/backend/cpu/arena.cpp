#include "engine/backend/cpu/arena.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "engine/core/error.h"
#include "engine/core/memory_budget.h"

namespace mixlab::cpu {


Arena::Id Arena::reserve(std::size_t bytes, Purpose purpose) {
  MIXLAB_ASSERT(!base_);
  return layout_.reserve(bytes, purpose);
}

void Arena::allocate() {
  const std::size_t bytes = layout_.size() == 0 ? layout_.alignment() : layout_.size();
  // Refuse what would only be granted by overcommit and then killed while being touched.
  const MemoryBudget budget = memory_budget();
  if (budget.refuses(bytes)) {
    throw AllocationError(layout_.describe_need() + " of memory; " + format_mib(budget.bytes) +
                              " are available (" + budget.source + ")",
                          bytes);
  }
  // Large arenas on 2 MiB pages where the kernel offers them (THP in madvise mode): streaming
  // tens of MB of weights through 4 KiB pages costs TLB misses in every op and in the update.
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  const bool huge = bytes >= kHugePage;
  const std::size_t rounded = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  auto* p = static_cast<std::byte*>(
      std::aligned_alloc(huge ? kHugePage : layout_.alignment(), rounded));
  if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure changes nothing
  if (!p) {
    throw AllocationError("cannot allocate memory: " + layout_.describe_need(), bytes);
  }
  std::memset(p, 0, bytes);
  base_.reset(p);
}

std::byte* Arena::ptr(Id id) const {
  MIXLAB_ASSERT(base_);
  return base_.get() + layout_.offset(id);
}

void Arena::FreeDeleter::operator()(std::byte* p) const {
  std::free(p);
}

}  // namespace mixlab::cpu
