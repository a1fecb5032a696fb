// Replaces the global operator new/delete of the test program with counting ones. A file of its
// own, so that the compiler does not see these malloc/free bodies next to new-expressions (GCC
// would warn about a mismatch it cannot rule out).
#include "tests/data/alloc_counter.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> g_allocations{0};
}  // namespace

namespace mixlab::test {

long allocation_count() {
  return g_allocations.load(std::memory_order_relaxed);
}

}  // namespace mixlab::test

void* operator new(std::size_t bytes) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
