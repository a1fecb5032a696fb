#include "engine/backend/cpu/arena.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "engine/core/error.h"

namespace mixlab::cpu {

namespace {
constexpr std::size_t kAlign = 64;

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

std::string mib(std::size_t bytes) {
  return std::to_string((bytes + (1u << 19)) >> 20) + " MiB";
}
}  // namespace

Arena::Id Arena::reserve(std::size_t bytes, Purpose purpose) {
  MIXLAB_ASSERT(!base_);
  const std::size_t rounded = (bytes + kAlign - 1) / kAlign * kAlign;
  offsets_.push_back(size_);
  size_ += rounded;
  const auto b = static_cast<std::int64_t>(rounded);
  plan_.add(purpose, b);
  return offsets_.size() - 1;
}

void Arena::allocate() {
  const std::size_t bytes = size_ == 0 ? kAlign : size_;
  // Refuse what would only be granted by overcommit and then killed while being touched.
  const std::size_t available = available_memory_bytes();
  if (available != 0 && bytes > available) {
    throw AllocationError("the model needs " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                              ") of memory; " + mib(available) + " are available",
                          bytes);
  }
  // Large arenas on 2 MiB pages where the kernel offers them (THP in madvise mode): streaming
  // tens of MB of weights through 4 KiB pages costs TLB misses in every op and in the update.
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  const bool huge = bytes >= kHugePage;
  const std::size_t rounded = huge ? (bytes + kHugePage - 1) / kHugePage * kHugePage : bytes;
  auto* p = static_cast<std::byte*>(std::aligned_alloc(huge ? kHugePage : kAlign, rounded));
  if (p && huge) madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure changes nothing
  if (!p) {
    throw AllocationError("cannot allocate " + std::to_string(bytes) + " bytes (" + mib(bytes) +
                              ") for the model's memory",
                          bytes);
  }
  std::memset(p, 0, bytes);
  base_.reset(p);
}

std::byte* Arena::ptr(Id id) const {
  MIXLAB_ASSERT(base_ && id < offsets_.size());
  return base_.get() + offsets_[id];
}

void Arena::FreeDeleter::operator()(std::byte* p) const {
  std::free(p);
}

}  // namespace mixlab::cpu
