#include "engine/backend/cpu/arena.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/error.h"

namespace mixlab::cpu {

namespace {

// MemAvailable from /proc/meminfo in bytes; 0 when unknown.
std::size_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace

Arena::Id Arena::reserve(std::size_t bytes, Purpose purpose) {
  MIXLAB_ASSERT(!base_);
  return layout_.reserve(bytes, purpose);
}

void Arena::allocate() {
  const std::size_t bytes = layout_.size() == 0 ? layout_.alignment() : layout_.size();
  // Refuse what would only be granted by overcommit and then killed while being touched.
  const std::size_t available = available_memory_bytes();
  if (available != 0 && bytes > available) {
    throw AllocationError(layout_.describe_need() + " of memory; " + format_mib(available) +
                              " are available",
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
