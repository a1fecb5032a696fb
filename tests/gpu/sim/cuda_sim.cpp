// cudasim's scheduler, memory and runtime calls (cuda_sim.h says what it emulates and reports).
//
// A launch runs its blocks one after another, in a shuffled order. A block's threads are fibers
// on this OS thread, switched by cudasim_switch below (x86-64 only). Warps advance independently
// (run_block): a warp's shuffle is released once every lane of its mask is in it, the block's
// __syncthreads once every thread is. Anything else is a mistake: a shuffle some of whose lanes
// wait elsewhere, have returned or do not exist, or a __syncthreads some threads return before.
// The order of the blocks, of the warps and of the lanes within a warp is drawn from a seeded
// generator (CUDASIM_SEED), so that a missing barrier shows, as it would on a GPU, as wrong
// values: a read before the write it needs (fresh shared memory is NaN), or a write over values
// another warp has yet to read.
#include "tests/gpu/sim/cuda_sim.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#if !defined(__x86_64__)
#error "cudasim switches fibers with x86-64 assembly"
#endif

extern "C" void cudasim_switch(void** save_sp, void* load_sp);
// Saves the callee-saved registers, MXCSR and the x87 control word on the current stack, stores
// the stack pointer in *save_sp, and resumes the fiber (or scheduler) whose pointer is load_sp.
asm(R"(
  .pushsection .text
  .globl cudasim_switch
  .type cudasim_switch, @function
cudasim_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cudasim_switch, .-cudasim_switch
  .popsection
)");

namespace cudasim {
namespace {

constexpr std::size_t kStackBytes = 256 * 1024;
constexpr std::size_t kMaxSharedBytes = 48 * 1024;
constexpr unsigned char kPoison = 0xFF;   // fresh device and shared memory: NaN as float
constexpr unsigned char kRedZone = 0xAB;  // an allocation's bytes up to its 256-byte rounding

std::size_t page_size() {
  static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

// ---- errors ----

cudaError_t g_last_error = cudaSuccess;
std::string g_last_message;

cudaError_t fail(cudaError_t err, const std::string& message) {
  std::fprintf(stderr, "cudasim: %s\n", message.c_str());
  if (g_last_error == cudaSuccess) {
    g_last_error = err;
    g_last_message = message;
  }
  return err;
}

// ---- device memory ----

struct Allocation {
  char* base;           // the mapping, guard pages included
  std::size_t mapped;   // its bytes
  char* data;           // what cudaMalloc returned
  std::size_t bytes;    // asked for
  std::size_t rounded;  // to 256
};
std::map<std::uintptr_t, Allocation> g_allocations;  // by data
bool g_device_open = false;

// The host may touch device memory only inside a CUDA call: between calls it is inaccessible, as
// a device pointer is on the host.
void set_access(bool open) {
  if (g_device_open == open) return;
  for (auto& [_, a] : g_allocations) {
    const std::size_t page = page_size();
    mprotect(a.base + page, a.mapped - 2 * page, open ? PROT_READ | PROT_WRITE : PROT_NONE);
  }
  g_device_open = open;
}
struct DeviceAccess {
  DeviceAccess() { set_access(true); }
  ~DeviceAccess() { set_access(false); }
};

const Allocation* find_allocation(const void* p) {
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  auto it = g_allocations.upper_bound(u);
  if (it == g_allocations.begin()) return nullptr;
  --it;
  const Allocation& a = it->second;
  // One past the end is a device pointer too (an empty range's end).
  return u <= it->first + a.bytes ? &a : nullptr;
}

bool red_zone_intact(const Allocation& a) {
  for (std::size_t i = a.bytes; i < a.rounded; ++i)
    if (static_cast<unsigned char>(a.data[i]) != kRedZone) return false;
  return true;
}

// ---- fibers ----

enum class State { ready, at_sync, at_shuffle, done };

struct Fiber {
  void* sp = nullptr;
  char* stack = nullptr;  // kStackBytes above a guard page
  uint3 idx{};
  unsigned linear = 0;
  State state = State::ready;
  int predicate = 0;
  unsigned mask = 0;  // of the shuffle it waits in
  const char* what = nullptr;
  std::uint64_t shuffle_count = 0;
};

struct Block {
  uint3 idx{};
  std::vector<Fiber>* fibers = nullptr;
  unsigned threads = 0;
  int or_result = 0;
  // Per warp: the values of its current shuffle, by parity of the shuffle's number (a lane that
  // runs ahead to the next shuffle writes the other half).
  std::vector<std::uint64_t> slots;
  std::map<const void*, std::size_t> shared_offsets;
  std::vector<std::max_align_t> shared;  // static __shared__ variables
  std::size_t shared_used = 0;
  std::vector<std::max_align_t> dynamic;
  bool failed = false;
};

const char* g_kernel = "";
dim3 g_grid, g_block_dim;
Block* g_current_block = nullptr;
Fiber* g_current = nullptr;
void* g_scheduler_sp = nullptr;
void (*g_body)(void*) = nullptr;
void* g_ctx = nullptr;
std::vector<char*> g_stacks;
std::mt19937_64 g_order_rng(20261206);

std::string where(const Fiber& f) {
  const Block& b = *g_current_block;
  return std::string(g_kernel) + ", block (" + std::to_string(b.idx.x) + "," +
         std::to_string(b.idx.y) + "," + std::to_string(b.idx.z) + ") thread (" +
         std::to_string(f.idx.x) + "," + std::to_string(f.idx.y) + "," + std::to_string(f.idx.z) +
         ")";
}

void block_failure(const std::string& message) {
  fail(cudaErrorLaunchFailure, message);
  g_current_block->failed = true;
}

void yield() {
  cudasim_switch(&g_current->sp, g_scheduler_sp);
}

[[noreturn]] void fiber_entry() {
  g_body(g_ctx);
  g_current->state = State::done;
  yield();
  std::abort();  // a finished fiber is never resumed
}

char* stack_of(std::size_t i) {
  while (g_stacks.size() <= i) {
    const std::size_t page = page_size();
    void* m = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      std::fprintf(stderr, "cudasim: cannot map a fiber stack\n");
      std::abort();
    }
    mprotect(m, page, PROT_NONE);  // an overflowing fiber faults here
    g_stacks.push_back(static_cast<char*>(m) + page);
  }
  return g_stacks[i];
}

void start_fiber(Fiber& f) {
  auto* top = reinterpret_cast<std::uint64_t*>(f.stack + kStackBytes);  // 16-byte aligned
  *--top = 0;                                                           // fiber_entry's return
  *--top = reinterpret_cast<std::uint64_t>(&fiber_entry);
  for (int r = 0; r < 6; ++r) *--top = 0;  // rbp rbx r12 r13 r14 r15
  *--top = 0x037F00001F80ull;              // MXCSR (low half), x87 control word (bytes 4-5)
  f.sp = top;
}

std::string hex(unsigned v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}

enum class Release { released, waiting, failed };

// Warp w's shuffle, once every lane of its mask is in it; a lane of the mask that has returned,
// waits in __syncthreads or does not exist is a mistake.
Release release_warp(Block& b, unsigned w) {
  std::vector<Fiber>& fibers = *b.fibers;
  unsigned waiting = 0, mask = 0;
  const char* what = nullptr;
  for (unsigned l = 0; l < 32 && w * 32 + l < b.threads; ++l) {
    const Fiber& f = fibers[w * 32 + l];
    if (f.state == State::at_shuffle) {
      waiting |= 1u << l;
      mask = f.mask;
      what = f.what;
    }
  }
  if (waiting == 0) return Release::waiting;
  for (unsigned l = 0; l < 32; ++l) {
    if ((mask >> l & 1u) == 0 || (waiting >> l & 1u) != 0) continue;
    const unsigned t = w * 32 + l;
    if (t < b.threads && fibers[t].state == State::ready) return Release::waiting;
    const std::string why =
        t >= b.threads ? "does not exist (the block has " + std::to_string(b.threads) + " threads)"
        : fibers[t].state == State::done ? "has returned"
                                         : "waits in __syncthreads";
    const Fiber& first = fibers[w * 32 + static_cast<unsigned>(__builtin_ctz(waiting))];
    block_failure(std::string(what) + " in " + where(first) + " names lane " + std::to_string(l) +
                  " of its warp (mask 0x" + hex(mask) + "), which " + why);
    return Release::failed;
  }
  for (unsigned l = 0; l < 32; ++l)
    if (waiting >> l & 1u) fibers[w * 32 + l].state = State::ready;
  return Release::released;
}

// The block's __syncthreads, once every thread that has not returned is in it (and none has
// returned: a barrier must be reached by the whole block).
Release release_block(Block& b) {
  std::vector<Fiber>& fibers = *b.fibers;
  int any = 0;
  const Fiber *waiter = nullptr, *returned = nullptr;
  for (const Fiber& f : fibers) {
    if (f.state == State::at_sync) {
      waiter = &f;
      any |= f.predicate;
    } else if (f.state == State::done) {
      if (returned == nullptr) returned = &f;
    } else {
      return Release::waiting;
    }
  }
  if (waiter == nullptr) return Release::waiting;
  if (returned != nullptr) {
    block_failure("__syncthreads in " + where(*waiter) + " is skipped by " + where(*returned) +
                  ", which has returned (a barrier must be reached by the whole block)");
    return Release::failed;
  }
  b.or_result = any;
  for (Fiber& f : fibers) f.state = State::ready;
  return Release::released;
}

// Warps run independently, as on a GPU: the scheduler picks a warp that has ready lanes (more
// often the one it ran last, so that a warp runs several steps ahead of the others), runs those
// lanes in a shuffled order until each waits or returns, and releases the warp's shuffle as soon
// as its lanes are all in it. The block's barrier is released when nothing else can run.
void run_block(Block& b) {
  std::vector<Fiber>& fibers = *b.fibers;
  for (Fiber& f : fibers) {
    f.state = State::ready;
    f.shuffle_count = 0;
    start_fiber(f);
  }
  const unsigned warps = (b.threads + 31) / 32;
  std::vector<unsigned> ready_warps;
  std::vector<unsigned> lanes;
  unsigned last = warps;
  for (;;) {
    ready_warps.clear();
    bool last_ready = false;
    for (unsigned w = 0; w < warps; ++w) {
      for (unsigned t = w * 32; t < std::min(b.threads, w * 32 + 32); ++t) {
        if (fibers[t].state == State::ready) {
          ready_warps.push_back(w);
          last_ready = last_ready || w == last;
          break;
        }
      }
    }
    if (ready_warps.empty()) {
      bool all_done = true;
      for (const Fiber& f : fibers) all_done = all_done && f.state == State::done;
      if (all_done) return;
      const Release r = release_block(b);
      if (r == Release::failed) return;
      if (r == Release::waiting) {
        // Nothing can run and no barrier can be released: a shuffle that some lanes never reach.
        for (unsigned w = 0; w < warps; ++w) {
          if (release_warp(b, w) == Release::failed) return;
        }
        block_failure("a deadlock in " + std::string(g_kernel) + ": no barrier can be released");
        return;
      }
      continue;
    }
    const unsigned w = last_ready && g_order_rng() % 4 != 0
                           ? last
                           : ready_warps[g_order_rng() % ready_warps.size()];
    last = w;
    lanes.clear();
    for (unsigned t = w * 32; t < std::min(b.threads, w * 32 + 32); ++t)
      if (fibers[t].state == State::ready) lanes.push_back(t);
    std::shuffle(lanes.begin(), lanes.end(), g_order_rng);
    for (const unsigned t : lanes) {
      Fiber& f = fibers[t];
      g_current = &f;
      cudasim_switch(&g_scheduler_sp, f.sp);
      g_current = nullptr;
      if (b.failed) return;
    }
    if (release_warp(b, w) == Release::failed) return;
  }
}

void on_fault(int sig, siginfo_t* info, void*) {
  char buf[512];
  const int n = std::snprintf(
      buf, sizeof buf,
      "cudasim: %s at %p in kernel %s (outside device memory, a stack overflow, or device memory "
      "touched by the host)\n",
      sig == SIGSEGV ? "segmentation fault" : "bus error", info->si_addr,
      g_current != nullptr ? g_kernel : "(none: host code)");
  if (n > 0) {
    const ssize_t written = write(2, buf, static_cast<std::size_t>(n));
    (void)written;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

struct FaultHandler {
  FaultHandler() {
    static std::vector<char> alt(1 << 16);
    stack_t ss{};
    ss.ss_sp = alt.data();
    ss.ss_size = alt.size();
    sigaltstack(&ss, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    if (const char* seed = std::getenv("CUDASIM_SEED"))
      g_order_rng.seed(std::strtoull(seed, nullptr, 10));
  }
};
const FaultHandler g_fault_handler;

bool launch_ok(const char* kernel, const LaunchConfig& c) {
  const unsigned long long threads =
      static_cast<unsigned long long>(c.block.x) * c.block.y * c.block.z;
  std::string why;
  if (c.grid.x == 0 || c.grid.y == 0 || c.grid.z == 0)
    why = "a grid dimension is 0";
  else if (c.grid.x > 2147483647u || c.grid.y > 65535 || c.grid.z > 65535)
    why = "the grid exceeds 2^31-1 x 65535 x 65535";
  else if (threads == 0)
    why = "a block dimension is 0";
  else if (c.block.x > 1024 || c.block.y > 1024 || c.block.z > 64 || threads > 1024)
    why = "a block exceeds 1024 threads";
  else if (c.shared_bytes > kMaxSharedBytes)
    why = "its dynamic shared memory exceeds 48 KiB";
  if (why.empty()) return true;
  fail(cudaErrorInvalidConfiguration,
       std::string("launch of ") + kernel + ": " + why + " (grid " + std::to_string(c.grid.x) +
           "x" + std::to_string(c.grid.y) + "x" + std::to_string(c.grid.z) + ", block " +
           std::to_string(c.block.x) + "x" + std::to_string(c.block.y) + "x" +
           std::to_string(c.block.z) + ", " + std::to_string(c.shared_bytes) + " bytes)");
  return false;
}

}  // namespace

const uint3& thread_idx() {
  return g_current->idx;
}
const uint3& block_idx() {
  return g_current_block->idx;
}
const dim3& block_dim() {
  return g_block_dim;
}
const dim3& grid_dim() {
  return g_grid;
}
unsigned lane() {
  return g_current->linear % 32;
}

void syncthreads() {
  g_current->state = State::at_sync;
  g_current->predicate = 0;
  yield();
}

int syncthreads_or(int predicate) {
  g_current->state = State::at_sync;
  g_current->predicate = predicate != 0;
  yield();
  return g_current_block->or_result;
}

std::uint64_t exchange(unsigned mask, std::uint64_t bits, unsigned src, const char* what) {
  Fiber& f = *g_current;
  Block& b = *g_current_block;
  const unsigned warp = f.linear / 32, l = f.linear % 32;
  const std::size_t parity = f.shuffle_count++ & 1u;
  std::uint64_t* slots = b.slots.data() + (warp * 2 + parity) * 32;
  slots[l] = bits;
  if ((mask >> l & 1u) == 0) {
    block_failure(std::string(what) + " in " + where(f) + ": the calling lane is not in its mask");
    yield();
  }
  if (src >= 32 || (mask >> src & 1u) == 0) {
    block_failure(std::string(what) + " in " + where(f) + " reads lane " + std::to_string(src) +
                  ", which is not in its mask");
    yield();
  }
  f.state = State::at_shuffle;
  f.mask = mask;
  f.what = what;
  yield();
  return slots[src];
}

void* block_shared(const void* key, std::size_t bytes, std::size_t align) {
  Block& b = *g_current_block;
  auto it = b.shared_offsets.find(key);
  if (it == b.shared_offsets.end()) {
    const std::size_t offset = (b.shared_used + align - 1) / align * align;
    if (offset + bytes + b.dynamic.size() * sizeof(std::max_align_t) > kMaxSharedBytes) {
      block_failure(std::string(g_kernel) + " uses more than 48 KiB of shared memory");
      yield();
    }
    b.shared_used = offset + bytes;
    it = b.shared_offsets.emplace(key, offset).first;
  }
  return reinterpret_cast<char*>(b.shared.data()) + it->second;
}

void* dynamic_shared() {
  return g_current_block->dynamic.data();
}

bool check_argument(const char* kernel, int index, const void* ptr) {
  if (ptr == nullptr || find_allocation(ptr) != nullptr) return true;
  fail(cudaErrorInvalidDevicePointer, std::string("launch of ") + kernel + ": argument " +
                                          std::to_string(index) +
                                          " is a pointer outside device memory");
  return false;
}

void run_grid(const char* kernel, const LaunchConfig& config, void (*body)(void*), void* ctx) {
  if (!launch_ok(kernel, config)) return;
  DeviceAccess access;
  g_kernel = kernel;
  g_grid = config.grid;
  g_block_dim = config.block;
  g_body = body;
  g_ctx = ctx;
  const unsigned threads = config.block.x * config.block.y * config.block.z;
  std::vector<Fiber> fibers(threads);
  for (unsigned t = 0; t < threads; ++t) {
    Fiber& f = fibers[t];
    f.linear = t;
    f.idx = {t % config.block.x, t / config.block.x % config.block.y,
             t / (config.block.x * config.block.y)};
    f.stack = stack_of(t);
  }
  const unsigned long long blocks =
      static_cast<unsigned long long>(config.grid.x) * config.grid.y * config.grid.z;
  std::vector<unsigned long long> block_order(blocks);
  for (unsigned long long i = 0; i < blocks; ++i) block_order[i] = i;
  std::shuffle(block_order.begin(), block_order.end(), g_order_rng);
  Block b;
  b.fibers = &fibers;
  b.threads = threads;
  b.slots.assign(((threads + 31) / 32) * 2 * 32, 0);
  b.shared.resize(kMaxSharedBytes / sizeof(std::max_align_t));
  b.dynamic.resize((config.shared_bytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  g_current_block = &b;
  for (const unsigned long long i : block_order) {
    b.idx = {static_cast<unsigned>(i % config.grid.x),
             static_cast<unsigned>(i / config.grid.x % config.grid.y),
             static_cast<unsigned>(
                 i / (static_cast<unsigned long long>(config.grid.x) * config.grid.y))};
    b.shared_offsets.clear();
    b.shared_used = 0;
    std::memset(b.shared.data(), kPoison, b.shared.size() * sizeof(std::max_align_t));
    std::memset(b.dynamic.data(), kPoison, b.dynamic.size() * sizeof(std::max_align_t));
    run_block(b);
    if (b.failed) break;
  }
  g_current_block = nullptr;
  for (const auto& [_, a] : g_allocations) {
    if (!red_zone_intact(a)) {
      fail(cudaErrorLaunchFailure, std::string(kernel) +
                                       " wrote past the end of an allocation of " +
                                       std::to_string(a.bytes) + " bytes");
      std::memset(a.data + a.bytes, kRedZone, a.rounded - a.bytes);
    }
  }
}

}  // namespace cudasim

using namespace cudasim;

// ---- the runtime API ----

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

const char* cudaGetErrorString(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return "no error";
    case cudaErrorInvalidValue:
      return "invalid argument";
    case cudaErrorMemoryAllocation:
      return "out of memory";
    case cudaErrorInvalidConfiguration:
      return "invalid configuration argument (cudasim: see stderr)";
    case cudaErrorInvalidDevicePointer:
      return "invalid device pointer (cudasim: see stderr)";
    case cudaErrorInvalidMemcpyDirection:
      return "invalid copy direction for memcpy (cudasim: see stderr)";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (cudasim: see stderr)";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  const cudaError_t err = g_last_error;
  g_last_error = cudaSuccess;
  g_last_message.clear();
  return err;
}
cudaError_t cudaDeviceSynchronize() {
  return g_last_error;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  const std::size_t page = page_size();
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  const std::size_t body = (rounded + page - 1) / page * page;
  const std::size_t mapped = body + 2 * page;
  void* m = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
  auto* base = static_cast<char*>(m);
  mprotect(base + page, body, PROT_READ | PROT_WRITE);
  // The allocation ends where the guard page after it starts; 256-byte aligned as CUDA's.
  char* data = base + page + body - rounded;
  std::memset(data, kPoison, bytes);
  std::memset(data + bytes, kRedZone, rounded - bytes);
  if (!g_device_open) mprotect(base + page, body, PROT_NONE);
  g_allocations[reinterpret_cast<std::uintptr_t>(data)] = {base, mapped, data, bytes, rounded};
  *ptr = data;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  if (ptr == nullptr) return cudaSuccess;
  auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == g_allocations.end())
    return fail(cudaErrorInvalidDevicePointer, "cudaFree of a pointer cudaMalloc did not return");
  munmap(it->second.base, it->second.mapped);
  g_allocations.erase(it);
  return cudaSuccess;
}

namespace {

// The copy's pointers must be where its kind says, and its ranges inside their allocations.
cudaError_t check_copy(const char* call, void* dst, const void* src, std::size_t dst_bytes,
                       std::size_t src_bytes, cudaMemcpyKind kind) {
  auto check = [&](const void* p, std::size_t bytes, bool device,
                   const char* which) -> cudaError_t {
    if (bytes == 0) return cudaSuccess;
    const Allocation* a = find_allocation(p);
    if (device && a == nullptr)
      return fail(cudaErrorInvalidValue,
                  std::string(call) + ": the " + which + " is not device memory");
    if (!device && a != nullptr)
      return fail(cudaErrorInvalidMemcpyDirection,
                  std::string(call) + ": the " + which +
                      " is device memory, which the copy's kind says is the host's");
    if (a != nullptr && static_cast<const char*>(p) + bytes > a->data + a->bytes)
      return fail(cudaErrorInvalidValue,
                  std::string(call) + ": the " + which + " range runs " +
                      std::to_string(static_cast<const char*>(p) + bytes - (a->data + a->bytes)) +
                      " bytes past its allocation of " + std::to_string(a->bytes));
    return cudaSuccess;
  };
  const bool dst_device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
  const bool src_device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  if (kind == cudaMemcpyDefault) {
    if (find_allocation(dst) && check(dst, dst_bytes, true, "destination")) return g_last_error;
    if (find_allocation(src) && check(src, src_bytes, true, "source")) return g_last_error;
    return cudaSuccess;
  }
  if (const cudaError_t e = check(dst, dst_bytes, dst_device, "destination")) return e;
  return check(src, src_bytes, src_device, "source");
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  if (const cudaError_t e = check_copy("cudaMemcpy", dst, src, bytes, bytes, kind)) return e;
  DeviceAccess access;
  if (bytes != 0) std::memmove(dst, src, bytes);
  return g_last_error;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                              std::size_t width, std::size_t height, cudaMemcpyKind kind,
                              cudaStream_t) {
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidValue, "cudaMemcpy2DAsync: the width exceeds a pitch");
  if (height == 0 || width == 0) return cudaSuccess;
  const std::size_t dst_bytes = dpitch * (height - 1) + width,
                    src_bytes = spitch * (height - 1) + width;
  if (const cudaError_t e = check_copy("cudaMemcpy2DAsync", dst, src, dst_bytes, src_bytes, kind))
    return e;
  DeviceAccess access;
  for (std::size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch,
                 width);
  return g_last_error;
}

cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  const Allocation* a = find_allocation(ptr);
  if (a == nullptr) return fail(cudaErrorInvalidValue, "cudaMemset: not device memory");
  if (static_cast<char*>(ptr) + bytes > a->data + a->bytes)
    return fail(cudaErrorInvalidValue, "cudaMemset: the range runs past its allocation of " +
                                           std::to_string(a->bytes) + " bytes");
  DeviceAccess access;
  std::memset(ptr, value, bytes);
  return g_last_error;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t) {
  return cudaMemset(ptr, value, bytes);
}

// ---- 16-bit conversions ----

float __half2float(__half h) {
  _Float16 v;
  std::memcpy(&v, &h.__x, 2);
  return static_cast<float>(v);
}
__half __float2half_rn(float f) {
  const auto v = static_cast<_Float16>(f);  // IEEE round to nearest even
  __half h;
  std::memcpy(&h.__x, &v, 2);
  return h;
}
float __bfloat162float(__nv_bfloat16 h) {
  const std::uint32_t u = static_cast<std::uint32_t>(h.__x) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
__nv_bfloat16 __float2bfloat16_rn(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  __nv_bfloat16 h;
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) {
    h.__x = 0x7FFF;  // NaN, as CUDA's
  } else {
    u += 0x7FFFu + ((u >> 16) & 1u);
    h.__x = static_cast<unsigned short>(u >> 16);
  }
  return h;
}
