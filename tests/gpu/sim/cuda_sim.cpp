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
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
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

const uint3* current_thread_idx = nullptr;
const uint3* current_block_idx = nullptr;
dim3 g_grid, g_block_dim;

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
// Nested scopes (a queued launch inside a synchronisation) keep it open until the outermost ends.
int g_access_depth = 0;
struct DeviceAccess {
  DeviceAccess() {
    if (g_access_depth++ == 0) set_access(true);
  }
  ~DeviceAccess() {
    if (--g_access_depth == 0) set_access(false);
  }
  DeviceAccess(const DeviceAccess&) = delete;
  DeviceAccess& operator=(const DeviceAccess&) = delete;
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
      current_thread_idx = &f.idx;
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

}  // namespace

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
  current_block_idx = &b.idx;
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

// ---- streams, events, graphs ----

struct Op {
  const char* what = "";
  std::function<void()> run;
  std::function<bool()> ready;  // null: always
  std::shared_ptr<bool> done;   // set once it ran (null: nobody waits for it)
};

}  // namespace cudasim

struct CUgraph_st {
  std::vector<cudasim::Op> ops;
};
struct CUgraphExec_st {
  std::vector<cudasim::Op> ops;
};
struct CUstream_st {
  unsigned flags = 0;
  std::deque<cudasim::Op> ops;
  CUgraph_st* capture = nullptr;  // while captured
  bool capture_broken = false;
  std::thread::id capture_thread;
};
struct CUevent_st {
  unsigned flags = 0;
  std::uint64_t recorded = 0, done = 0;  // records queued, records run
  bool captured = false;                 // last recorded inside a capture
  double ms = 0;
};

namespace cudasim {
namespace {

std::set<CUstream_st*> g_streams;
std::set<CUevent_st*> g_events;
std::set<CUgraph_st*> g_graphs;
std::set<CUgraphExec_st*> g_execs;
std::map<std::uintptr_t, std::size_t> g_pinned;  // start -> bytes
// The streams' order: from CUDASIM_SEED too, so that another seed tries other interleavings.
std::uint64_t stream_seed() {
  const char* seed = std::getenv("CUDASIM_SEED");
  return seed != nullptr ? std::strtoull(seed, nullptr, 10) + 1 : 20261207;
}
std::mt19937_64 g_stream_rng(stream_seed());
int g_device = 0;

bool is_pinned(const void* p, std::size_t bytes) {
  const auto u = reinterpret_cast<std::uintptr_t>(p);
  auto it = g_pinned.upper_bound(u);
  if (it == g_pinned.begin()) return false;
  --it;
  return u + bytes <= it->first + it->second;
}

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Runs queued work until `done()` holds, picking among the streams whose next operation may run.
bool drain_until(const std::function<bool()>& done, const char* waiter) {
  DeviceAccess access;
  std::vector<CUstream_st*> ready;
  while (!done()) {
    ready.clear();
    for (CUstream_st* s : g_streams) {
      if (!s->ops.empty() && (!s->ops.front().ready || s->ops.front().ready())) ready.push_back(s);
    }
    if (ready.empty()) {
      fail(cudaErrorLaunchFailure,
           std::string(waiter) + " waits forever: every stream with work waits for an event");
      return false;
    }
    CUstream_st* s = ready[g_stream_rng() % ready.size()];
    Op op = std::move(s->ops.front());
    s->ops.pop_front();
    op.run();
    if (op.done) *op.done = true;
  }
  return true;
}

bool drain_all(const char* waiter) {
  return drain_until(
      [] {
        for (CUstream_st* s : g_streams)
          if (!s->ops.empty()) return false;
        return true;
      },
      waiter);
}

// A call that synchronises (or is otherwise illegal) while this thread captures a stream breaks
// the capture, as CUDA's thread-local and global modes do.
bool capture_violation(const char* call) {
  for (CUstream_st* s : g_streams) {
    if (s->capture != nullptr && s->capture_thread == std::this_thread::get_id()) {
      s->capture_broken = true;
      fail(cudaErrorStreamCaptureUnsupported,
           std::string(call) + " while this thread captures a stream into a CUDA graph");
      return true;
    }
  }
  return false;
}

bool valid_stream(cudaStream_t s) {
  return s == nullptr || g_streams.count(s) != 0;
}

void push(cudaStream_t stream, Op op) {
  if (stream == nullptr) {
    // The legacy default stream: at once (MixLab's streams are non-blocking ones).
    DeviceAccess access;
    op.run();
    if (op.done) *op.done = true;
  } else if (stream->capture != nullptr) {
    op.done = nullptr;
    stream->capture->ops.push_back(std::move(op));
  } else {
    stream->ops.push_back(std::move(op));
  }
}

}  // namespace

void enqueue(cudaStream_t stream, const char* what, std::function<void()> run) {
  if (!valid_stream(stream)) {
    fail(cudaErrorInvalidResourceHandle, std::string(what) + ": a destroyed or unknown stream");
    return;
  }
  Op op;
  op.what = what;
  op.run = std::move(run);
  push(stream, std::move(op));
}

bool is_device(const void* p, std::size_t bytes) {
  const Allocation* a = find_allocation(p);
  return a != nullptr && static_cast<const char*>(p) + bytes <= a->data + a->bytes;
}

cudaError_t report(cudaError_t err, const std::string& message) {
  return fail(err, message);
}

std::recursive_mutex& api_mutex() {
  static std::recursive_mutex mutex;
  return mutex;
}

}  // namespace cudasim

using namespace cudasim;

// ---- the runtime API ----

namespace {

struct Emulated {
  int major = 9, minor = 0;
  std::string name = "NVIDIA H100 80GB HBM3 (cudasim)";
  Emulated() {
    // CUDASIM_DEVICE=major.minor: another compute capability (8.0: an A100's rules, 7.5: ...).
    if (const char* d = std::getenv("CUDASIM_DEVICE"); d != nullptr && *d != '\0') {
      major = std::atoi(d);
      const char* dot = std::strchr(d, '.');
      minor = dot != nullptr ? std::atoi(dot + 1) : 0;
      name = std::string("NVIDIA GPU of compute capability ") + d + " (cudasim)";
    }
  }
};
const Emulated& emulated() {
  static const Emulated e;
  return e;
}
constexpr std::size_t kDeviceMemory = std::size_t{80} << 30;

}  // namespace

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int device) {
  CUDASIM_API;
  if (device != 0) return fail(cudaErrorInvalidDevice, "cudaSetDevice: cudasim has one GPU");
  g_device = device;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = g_device;
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties: no such GPU");
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", emulated().name.c_str());
  prop->totalGlobalMem = kDeviceMemory;
  prop->major = emulated().major;
  prop->minor = emulated().minor;
  prop->multiProcessorCount = 132;
  prop->warpSize = 32;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attr, int device) {
  if (device != 0) return fail(cudaErrorInvalidDevice, "cudaDeviceGetAttribute: no such GPU");
  switch (attr) {
    case cudaDevAttrComputeCapabilityMajor:
      *value = emulated().major;
      return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
      *value = emulated().minor;
      return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
      *value = 132;
      return cudaSuccess;
    case cudaDevAttrClockRate:
      *value = 1980000;
      return cudaSuccess;
    case cudaDevAttrMemoryClockRate:
      *value = 2619000;
      return cudaSuccess;
    case cudaDevAttrGlobalMemoryBusWidth:
      *value = 5120;
      return cudaSuccess;
    case cudaDevAttrL2CacheSize:
      *value = 50 << 20;
      return cudaSuccess;
  }
  return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: an attribute cudasim lacks");
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  *version = 13000;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(std::size_t* free, std::size_t* total) {
  CUDASIM_API;
  std::size_t used = 0;
  for (const auto& [_, a] : g_allocations) used += a.rounded;
  *total = kDeviceMemory;
  *free = kDeviceMemory - std::min(used, kDeviceMemory);
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
    case cudaErrorInvalidDevice:
      return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
      return "invalid resource handle (cudasim: see stderr)";
    case cudaErrorNotReady:
      return "device not ready";
    case cudaErrorLaunchFailure:
      return "unspecified launch failure (cudasim: see stderr)";
    case cudaErrorStreamCaptureUnsupported:
      return "operation not permitted when stream is capturing (cudasim: see stderr)";
    case cudaErrorStreamCaptureInvalidated:
      return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureIsolation:
      return "operation would make the legacy stream depend on a capturing blocking stream "
             "(cudasim: see stderr)";
  }
  return "unknown error";
}

cudaError_t cudaGetLastError() {
  CUDASIM_API;
  const cudaError_t err = g_last_error;
  g_last_error = cudaSuccess;
  g_last_message.clear();
  return err;
}

cudaError_t cudaDeviceSynchronize() {
  CUDASIM_API;
  if (capture_violation("cudaDeviceSynchronize")) return g_last_error;
  drain_all("cudaDeviceSynchronize");
  return g_last_error;
}

cudaError_t cudaMalloc(void** ptr, std::size_t bytes) {
  CUDASIM_API;
  std::size_t used = 0;
  for (const auto& [_, a] : g_allocations) used += a.rounded;
  // The emulated GPU's memory, not the host's: beyond it is out of memory, as on the GPU.
  if (bytes > kDeviceMemory - std::min(used, kDeviceMemory))
    return fail(cudaErrorMemoryAllocation, "cudaMalloc of " + std::to_string(bytes) +
                                               " bytes: more than the emulated GPU has free");
  const std::size_t page = page_size();
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  const std::size_t body = (rounded + page - 1) / page * page;
  const std::size_t mapped = body + 2 * page;
  void* m = mmap(nullptr, mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return cudaErrorMemoryAllocation;
  auto* base = static_cast<char*>(m);
  mprotect(base + page, body, PROT_READ | PROT_WRITE);
  char* data = base + page + body - rounded;
  std::memset(data, kPoison, bytes);
  std::memset(data + bytes, kRedZone, rounded - bytes);
  if (!g_device_open) mprotect(base + page, body, PROT_NONE);
  g_allocations[reinterpret_cast<std::uintptr_t>(data)] = {base, mapped, data, bytes, rounded};
  *ptr = data;
  return cudaSuccess;
}

cudaError_t cudaFree(void* ptr) {
  CUDASIM_API;
  if (ptr == nullptr) return cudaSuccess;
  auto it = g_allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == g_allocations.end())
    return fail(cudaErrorInvalidDevicePointer, "cudaFree of a pointer cudaMalloc did not return");
  // cudaFree waits for the device's work (which may still use the memory).
  drain_all("cudaFree");
  munmap(it->second.base, it->second.mapped);
  g_allocations.erase(it);
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void** ptr, std::size_t bytes) {
  return cudaHostAlloc(ptr, bytes, cudaHostAllocDefault);
}

cudaError_t cudaHostAlloc(void** ptr, std::size_t bytes, unsigned) {
  CUDASIM_API;
  void* p = std::aligned_alloc(4096, (std::max<std::size_t>(bytes, 1) + 4095) / 4096 * 4096);
  if (p == nullptr) return cudaErrorMemoryAllocation;
  std::memset(p, kPoison, bytes);  // as unset as cudaMallocHost's memory
  g_pinned[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  *ptr = p;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* ptr) {
  CUDASIM_API;
  if (ptr == nullptr) return cudaSuccess;
  auto it = g_pinned.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == g_pinned.end())
    return fail(cudaErrorInvalidValue, "cudaFreeHost of a pointer cudaMallocHost did not return");
  drain_all("cudaFreeHost");
  std::free(ptr);
  g_pinned.erase(it);
  return cudaSuccess;
}

namespace {

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

// An async copy of `rows` rows of `width` bytes. Host memory that is not pinned behaves as CUDA
// documents: a source is read at the call, and a copy into it returns once done.
cudaError_t copy_async(const char* call, void* dst, std::size_t dpitch, const void* src,
                       std::size_t spitch, std::size_t width, std::size_t rows, cudaMemcpyKind kind,
                       cudaStream_t stream) {
  if (rows == 0 || width == 0) return cudaSuccess;
  if (!valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, std::string(call) + ": an unknown stream");
  const std::size_t dst_bytes = dpitch * (rows - 1) + width,
                    src_bytes = spitch * (rows - 1) + width;
  if (const cudaError_t e = check_copy(call, dst, src, dst_bytes, src_bytes, kind)) return e;
  const bool src_host = find_allocation(src) == nullptr, dst_host = find_allocation(dst) == nullptr;
  const bool src_pageable = src_host && !is_pinned(src, src_bytes);
  const bool dst_pageable = dst_host && !is_pinned(dst, dst_bytes);
  if (stream != nullptr && stream->capture != nullptr && (src_pageable || dst_pageable)) {
    stream->capture_broken = true;
    return fail(cudaErrorStreamCaptureUnsupported,
                std::string(call) + " of pageable host memory into a CUDA graph");
  }
  std::shared_ptr<std::vector<char>> staged;
  if (src_pageable) {
    staged = std::make_shared<std::vector<char>>(src_bytes);
    DeviceAccess access;
    std::memcpy(staged->data(), src, src_bytes);
  }
  Op op;
  op.what = call;
  op.run = [=] {
    const char* from = staged ? staged->data() : static_cast<const char*>(src);
    for (std::size_t r = 0; r < rows; ++r)
      std::memmove(static_cast<char*>(dst) + r * dpitch, from + r * spitch, width);
  };
  std::shared_ptr<bool> done;
  if (dst_pageable && stream != nullptr) {
    done = std::make_shared<bool>(false);
    op.done = done;
  }
  push(stream, std::move(op));
  if (done) drain_until([&] { return *done; }, call);
  return g_last_error;
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind) {
  CUDASIM_API;
  if (capture_violation("cudaMemcpy")) return g_last_error;
  if (const cudaError_t e = check_copy("cudaMemcpy", dst, src, bytes, bytes, kind)) return e;
  DeviceAccess access;
  if (bytes != 0) std::memmove(dst, src, bytes);
  return g_last_error;
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream) {
  CUDASIM_API;
  return copy_async("cudaMemcpyAsync", dst, bytes, src, bytes, bytes, 1, kind, stream);
}

cudaError_t cudaMemcpy2DAsync(void* dst, std::size_t dpitch, const void* src, std::size_t spitch,
                              std::size_t width, std::size_t height, cudaMemcpyKind kind,
                              cudaStream_t stream) {
  CUDASIM_API;
  if (width > dpitch || width > spitch)
    return fail(cudaErrorInvalidValue, "cudaMemcpy2DAsync: the width exceeds a pitch");
  return copy_async("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, stream);
}

namespace {

cudaError_t check_memset(const char* call, void* ptr, std::size_t bytes) {
  const Allocation* a = find_allocation(ptr);
  if (a == nullptr) return fail(cudaErrorInvalidValue, std::string(call) + ": not device memory");
  if (static_cast<char*>(ptr) + bytes > a->data + a->bytes)
    return fail(cudaErrorInvalidValue, std::string(call) +
                                           ": the range runs past its allocation of " +
                                           std::to_string(a->bytes) + " bytes");
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaMemset(void* ptr, int value, std::size_t bytes) {
  CUDASIM_API;
  if (bytes == 0) return cudaSuccess;
  if (capture_violation("cudaMemset")) return g_last_error;
  if (const cudaError_t e = check_memset("cudaMemset", ptr, bytes)) return e;
  DeviceAccess access;
  std::memset(ptr, value, bytes);
  return g_last_error;
}

cudaError_t cudaMemsetAsync(void* ptr, int value, std::size_t bytes, cudaStream_t stream) {
  CUDASIM_API;
  if (bytes == 0) return cudaSuccess;
  if (const cudaError_t e = check_memset("cudaMemsetAsync", ptr, bytes)) return e;
  enqueue(stream, "cudaMemsetAsync", [=] { std::memset(ptr, value, bytes); });
  return g_last_error;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags) {
  CUDASIM_API;
  auto* s = new CUstream_st;
  s->flags = flags;
  g_streams.insert(s);
  *stream = s;
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  CUDASIM_API;
  if (stream == nullptr || g_streams.count(stream) == 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy of an unknown stream");
  if (stream->capture != nullptr)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamDestroy of a capturing stream");
  // Its queued work still runs (CUDA lets it finish).
  drain_until([&] { return stream->ops.empty(); }, "cudaStreamDestroy");
  g_streams.erase(stream);
  delete stream;
  return g_last_error;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  CUDASIM_API;
  if (!valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize of an unknown stream");
  if (stream != nullptr && stream->capture != nullptr) {
    stream->capture_broken = true;
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize of a capturing stream");
  }
  if (capture_violation("cudaStreamSynchronize")) return g_last_error;
  if (stream != nullptr) drain_until([&] { return stream->ops.empty(); }, "cudaStreamSynchronize");
  return g_last_error;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  return cudaEventCreateWithFlags(event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags) {
  CUDASIM_API;
  auto* e = new CUevent_st;
  e->flags = flags;
  g_events.insert(e);
  *event = e;
  return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  CUDASIM_API;
  if (g_events.erase(event) == 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy of an unknown event");
  // A record still queued writes into it: wait for the device, then free.
  drain_until([&] { return event->done == event->recorded; }, "cudaEventDestroy");
  delete event;
  return g_last_error;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  CUDASIM_API;
  if (g_events.count(event) == 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: an unknown event or stream");
  if (stream != nullptr && stream->capture != nullptr) {
    // Inside a capture a record only orders the graph's own nodes: launching the graph does not
    // record it, and the host cannot wait for it.
    event->captured = true;
    return cudaSuccess;
  }
  event->captured = false;
  const std::uint64_t generation = ++event->recorded;
  Op op;
  op.what = "cudaEventRecord";
  op.run = [event, generation] {
    event->done = std::max(event->done, generation);
    event->ms = now_ms();
  };
  push(stream, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  CUDASIM_API;
  if (g_events.count(event) == 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: an unknown event or stream");
  if (stream != nullptr && stream->capture != nullptr) {
    if (!event->captured && event->done != event->recorded) {
      stream->capture_broken = true;
      return fail(cudaErrorStreamCaptureIsolation,
                  "cudaStreamWaitEvent: a captured stream waits for work outside the capture");
    }
    return cudaSuccess;
  }
  const std::uint64_t target = event->recorded;
  if (target == 0) return cudaSuccess;  // never recorded: no wait
  if (stream == nullptr) {
    drain_until([&] { return event->done >= target; }, "cudaStreamWaitEvent");
    return g_last_error;
  }
  Op op;
  op.what = "cudaStreamWaitEvent";
  op.run = [] {};
  op.ready = [event, target] { return event->done >= target; };
  stream->ops.push_back(std::move(op));
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  CUDASIM_API;
  if (g_events.count(event) == 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize of an unknown event");
  if (capture_violation("cudaEventSynchronize")) return g_last_error;
  if (event->captured)
    return fail(cudaErrorStreamCaptureUnsupported,
                "cudaEventSynchronize of an event last recorded inside a graph capture");
  drain_until([&] { return event->done >= event->recorded; }, "cudaEventSynchronize");
  return g_last_error;
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  CUDASIM_API;
  if (g_events.count(start) == 0 || g_events.count(end) == 0)
    return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an unknown event");
  if ((start->flags & cudaEventDisableTiming) != 0 || (end->flags & cudaEventDisableTiming) != 0)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventElapsedTime of an event created with cudaEventDisableTiming");
  if (start->recorded == 0 || end->recorded == 0 || start->captured || end->captured)
    return fail(cudaErrorInvalidResourceHandle,
                "cudaEventElapsedTime of an event never recorded outside a graph capture");
  if (start->done != start->recorded || end->done != end->recorded) return cudaErrorNotReady;
  *ms = static_cast<float>(end->ms - start->ms);
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode) {
  CUDASIM_API;
  if (stream == nullptr || g_streams.count(stream) == 0)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaStreamBeginCapture of the legacy stream");
  if (stream->capture != nullptr)
    return fail(cudaErrorInvalidValue, "cudaStreamBeginCapture of a stream already captured");
  stream->capture = new CUgraph_st;
  stream->capture_broken = false;
  stream->capture_thread = std::this_thread::get_id();
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph) {
  CUDASIM_API;
  if (stream == nullptr || g_streams.count(stream) == 0 || stream->capture == nullptr)
    return fail(cudaErrorInvalidValue, "cudaStreamEndCapture of a stream not captured");
  CUgraph_st* g = stream->capture;
  stream->capture = nullptr;
  if (stream->capture_broken) {
    delete g;
    *graph = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  g_graphs.insert(g);
  *graph = g;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  CUDASIM_API;
  if (!valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaStreamIsCapturing of an unknown stream");
  *status = stream == nullptr || stream->capture == nullptr ? cudaStreamCaptureStatusNone
            : stream->capture_broken                        ? cudaStreamCaptureStatusInvalidated
                                                            : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  CUDASIM_API;
  if (g_graphs.count(graph) == 0)
    return fail(cudaErrorInvalidValue, "cudaGraphInstantiate of an unknown graph");
  auto* x = new CUgraphExec_st;
  x->ops = graph->ops;
  g_execs.insert(x);
  *exec = x;
  return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) {
  CUDASIM_API;
  if (g_execs.count(exec) == 0 || !valid_stream(stream))
    return fail(cudaErrorInvalidResourceHandle, "cudaGraphLaunch: an unknown graph or stream");
  if (stream != nullptr && stream->capture != nullptr)
    return fail(cudaErrorStreamCaptureUnsupported, "cudaGraphLaunch into a capturing stream");
  for (const Op& op : exec->ops) push(stream, op);
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  CUDASIM_API;
  if (g_graphs.erase(graph) == 0)
    return fail(cudaErrorInvalidValue, "cudaGraphDestroy of an unknown graph");
  delete graph;
  return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  CUDASIM_API;
  if (g_execs.erase(exec) == 0)
    return fail(cudaErrorInvalidValue, "cudaGraphExecDestroy of an unknown graph");
  // Launches still queued hold copies of its work: nothing to wait for.
  delete exec;
  return cudaSuccess;
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
