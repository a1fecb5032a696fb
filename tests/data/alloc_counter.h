// Counts allocations through the global operator new of a test program that links
// alloc_counter.cpp (which replaces operator new and delete for the whole program).
#pragma once

namespace mixlab::test {

long allocation_count();

}  // namespace mixlab::test
