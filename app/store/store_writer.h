// The one writer thread of a process: takes run rows from a queue and commits them to the run
// database in batches (a transaction at most every flush interval, or sooner when a batch
// fills), so the thread that trains never waits on the disk. Queueing a step is a short locked
// append to a vector that the writer swaps out; nothing is allocated once the vectors have grown.
//
// A process killed mid-run loses at most the rows of the last flush interval (250 ms by
// default); everything committed survives (WAL, synchronous=NORMAL).
//
// While a run it began is running, the writer also writes the run's heartbeat every heartbeat
// interval (run_owner.h), in the transaction of the rows it commits then, or alone when none
// wait: the writer wakes every flush interval whatever the trainer does, so a step or an
// evaluation that takes longer than the limit does not make the run look dead.
#pragma once

#include <chrono>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "app/store/run_owner.h"
#include "app/store/run_record.h"
#include "app/store/run_store.h"

namespace mixlab::store {

struct WriterOptions {
  StoreOptions store;
  std::chrono::milliseconds flush_interval{250};
  std::size_t batch_rows = 8192;  // commit early when this many rows wait
  std::chrono::milliseconds heartbeat_interval = kHeartbeatInterval;
};

class StoreWriter {
 public:
  // Opens its own connection to `path` (creating and migrating it) on the writer thread and
  // waits for that: throws the StoreError if it cannot.
  explicit StoreWriter(const std::filesystem::path& path, const WriterOptions& options = {});
  // Commits what is queued and stops the thread; logs (does not throw) a final failure.
  ~StoreWriter();
  StoreWriter(const StoreWriter&) = delete;
  StoreWriter& operator=(const StoreWriter&) = delete;

  const std::filesystem::path& path() const { return path_; }

  // Inserts a run and returns its id: waits for the writer (call it before training starts).
  std::int64_t begin_run(const RunRecord& record);

  // Queued; never wait for the disk.
  void started(std::int64_t run_id, std::int64_t started_at_ms, const Environment& env,
               std::int64_t total_steps, std::int64_t peak_memory_bytes);
  void step(std::int64_t run_id, const StepMetrics& step);
  void epoch(std::int64_t run_id, const EpochMetrics& epoch);
  void layer_times(std::int64_t run_id, std::int64_t step, const std::vector<LayerTiming>& layers);
  void layer_overflows(std::int64_t run_id, std::int64_t step,
                       const std::vector<LayerOverflow>& layers);
  void fp8_tensors(std::int64_t run_id, std::int64_t step,
                   const std::vector<Fp8TensorStep>& tensors);
  void finished(std::int64_t run_id, const RunSummary& summary, std::int64_t finished_at_ms);

  // Waits until everything queued before it is committed. Throws the StoreError of a batch that
  // could not be committed (disk full, I/O error); its rows stay queued and are retried at the
  // next flush.
  void flush();

  // Rows committed so far, and the first error the writer met (empty if none).
  std::int64_t rows_committed() const;
  std::string last_error() const;
  // Why the store cannot record now, when retrying will not help: the last commit failed with
  // anything but a busy database (a full disk, an I/O error, the run deleted under it), or kept
  // failing kStuckCommits times. Empty while commits succeed. Cheap: an atomic read first.
  std::string stuck_error() const;
  static constexpr int kStuckCommits = 3;

 private:
  struct StartRow {
    std::int64_t run_id;
    std::int64_t started_at_ms;
    Environment env;
    std::int64_t total_steps;
    std::int64_t peak_memory_bytes;
  };
  struct EpochRow {
    std::int64_t run_id;
    EpochMetrics epoch;
  };
  struct LayerRows {
    std::int64_t run_id;
    std::int64_t step;
    std::vector<LayerTiming> layers;
  };
  struct OverflowRows {
    std::int64_t run_id;
    std::int64_t step;
    std::vector<LayerOverflow> layers;
  };
  struct Fp8Rows {
    std::int64_t run_id;
    std::int64_t step;
    std::vector<Fp8TensorStep> tensors;
  };
  struct FinishRow {
    std::int64_t run_id;
    RunSummary summary;
    std::int64_t finished_at_ms;
  };
  using Message = std::variant<StartRow, EpochRow, LayerRows, OverflowRows, Fp8Rows, FinishRow>;
  // Steps keep their own vector (the hot path). A batch commits in one transaction, so the
  // order of steps and other rows inside it does not matter; batches commit in queue order.
  struct Batch {
    std::vector<std::pair<std::int64_t, StepMetrics>> steps;
    std::vector<Message> others;
    bool empty() const { return steps.empty() && others.empty(); }
    void append(Batch& from);  // moves `from`'s rows to the end, leaving it empty
  };

  void run(std::promise<void> opened);
  // Commits the batch, with the heartbeat of the runs in beating_ when `beat`.
  void commit(RunStore& store, const Batch& batch, bool beat);
  void push_other(Message message);

  std::filesystem::path path_;
  WriterOptions options_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;     // the writer: rows or a request are waiting
  std::condition_variable flushed_;  // flush(): a commit finished
  Batch queue_;                      // guarded by mutex_
  std::vector<std::function<void(RunStore&)>> requests_;  // synchronous calls, guarded
  std::uint64_t queued_seq_ = 0;                          // rows queued so far
  std::uint64_t committed_seq_ = 0;                       // rows committed so far
  std::uint64_t failures_ = 0;                            // batches that failed to commit
  int failing_in_a_row_ = 0;                              // guarded by mutex_
  std::atomic<bool> stuck_{false};                        // see stuck_error()
  bool flush_requested_ = false;
  bool stop_ = false;
  std::int64_t rows_committed_ = 0;  // step rows
  std::string last_error_;
  std::exception_ptr error_;  // the last failure, thrown by flush()
  // The writer thread's own: runs begun here whose end is not committed yet.
  std::vector<std::int64_t> beating_;
  std::thread thread_;
};

}  // namespace mixlab::store
