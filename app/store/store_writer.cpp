#include "app/store/store_writer.h"

#include <sqlite3.h>

#include <cstdio>

namespace mixlab::store {

void StoreWriter::Batch::append(Batch& from) {
  if (steps.empty()) {
    steps.swap(from.steps);
  } else {
    steps.insert(steps.end(), from.steps.begin(), from.steps.end());
    from.steps.clear();
  }
  for (Message& m : from.others) others.push_back(std::move(m));
  from.others.clear();
}

StoreWriter::StoreWriter(const std::filesystem::path& path, const WriterOptions& options)
    : path_(path), options_(options) {
  std::promise<void> opened;
  std::future<void> ready = opened.get_future();
  thread_ = std::thread(&StoreWriter::run, this, std::move(opened));
  try {
    ready.get();
  } catch (...) {
    thread_.join();
    throw;
  }
}

StoreWriter::~StoreWriter() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  std::lock_guard lock(mutex_);
  if (!queue_.empty() || committed_seq_ != queued_seq_) {
    std::fprintf(stderr, "mixlab: %llu run rows could not be written to %s: %s\n",
                 static_cast<unsigned long long>(queued_seq_ - committed_seq_),
                 path_.string().c_str(), last_error_.c_str());
  }
}

std::int64_t StoreWriter::begin_run(const RunRecord& record) {
  std::promise<std::int64_t> result;
  std::future<std::int64_t> id = result.get_future();
  {
    std::lock_guard lock(mutex_);
    requests_.emplace_back([&](RunStore& store) {
      try {
        const std::int64_t id = store.insert_run(record);
        beating_.push_back(id);
        result.set_value(id);
      } catch (...) {
        result.set_exception(std::current_exception());
      }
    });
  }
  wake_.notify_one();
  return id.get();
}

void StoreWriter::push_other(Message message) {
  std::lock_guard lock(mutex_);
  queue_.others.push_back(std::move(message));
  ++queued_seq_;
}

void StoreWriter::started(std::int64_t run_id, std::int64_t started_at_ms, const Environment& env,
                          std::int64_t total_steps, std::int64_t peak_memory_bytes) {
  push_other(StartRow{run_id, started_at_ms, env, total_steps, peak_memory_bytes});
}

void StoreWriter::step(std::int64_t run_id, const StepMetrics& step) {
  bool full = false;
  {
    std::lock_guard lock(mutex_);
    queue_.steps.emplace_back(run_id, step);
    ++queued_seq_;
    full = queue_.steps.size() == options_.batch_rows;
  }
  if (full) wake_.notify_one();
}

void StoreWriter::epoch(std::int64_t run_id, const EpochMetrics& epoch) {
  push_other(EpochRow{run_id, epoch});
}

void StoreWriter::layer_times(std::int64_t run_id, std::int64_t step,
                              const std::vector<LayerTiming>& layers) {
  push_other(LayerRows{run_id, step, layers});
}

void StoreWriter::layer_overflows(std::int64_t run_id, std::int64_t step,
                                  const std::vector<LayerOverflow>& layers) {
  push_other(OverflowRows{run_id, step, layers});
}

void StoreWriter::fp8_tensors(std::int64_t run_id, std::int64_t step,
                              const std::vector<Fp8TensorStep>& tensors) {
  push_other(Fp8Rows{run_id, step, tensors});
}

void StoreWriter::finished(std::int64_t run_id, const RunSummary& summary,
                           std::int64_t finished_at_ms) {
  push_other(FinishRow{run_id, summary, finished_at_ms});
  wake_.notify_one();  // a finished run is committed now, not at the next interval
}

void StoreWriter::flush() {
  std::unique_lock lock(mutex_);
  const std::uint64_t target = queued_seq_;
  const std::uint64_t failures = failures_;
  flush_requested_ = true;
  wake_.notify_one();
  flushed_.wait(lock, [&] { return committed_seq_ >= target || failures_ != failures; });
  if (committed_seq_ < target && error_) std::rethrow_exception(error_);
}

std::int64_t StoreWriter::rows_committed() const {
  std::lock_guard lock(mutex_);
  return rows_committed_;
}

std::string StoreWriter::stuck_error() const {
  if (!stuck_.load(std::memory_order_relaxed)) return {};
  std::lock_guard lock(mutex_);
  return stuck_.load() ? last_error_ : std::string();
}

std::string StoreWriter::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

void StoreWriter::commit(RunStore& store, const Batch& batch, bool beat) {
  Transaction tx(store.connection());
  if (beat) store.beat(beating_, now_utc_ms());
  // Consecutive steps of one run go in as one span.
  std::vector<StepMetrics> run_steps;
  for (std::size_t i = 0; i < batch.steps.size();) {
    const std::int64_t run_id = batch.steps[i].first;
    run_steps.clear();
    for (; i < batch.steps.size() && batch.steps[i].first == run_id; ++i)
      run_steps.push_back(batch.steps[i].second);
    store.insert_steps(run_id, run_steps);
  }
  for (const Message& m : batch.others) {
    if (const auto* s = std::get_if<StartRow>(&m)) {
      store.mark_started(s->run_id, s->started_at_ms, s->env, s->total_steps, s->peak_memory_bytes);
    } else if (const auto* e = std::get_if<EpochRow>(&m)) {
      store.insert_epoch(e->run_id, e->epoch);
    } else if (const auto* l = std::get_if<LayerRows>(&m)) {
      store.insert_layer_times(l->run_id, l->step, l->layers);
    } else if (const auto* o = std::get_if<OverflowRows>(&m)) {
      store.insert_layer_overflows(o->run_id, o->step, o->layers);
    } else if (const auto* f8 = std::get_if<Fp8Rows>(&m)) {
      store.insert_fp8_tensors(f8->run_id, f8->step, f8->tensors);
    } else if (const auto* f = std::get_if<FinishRow>(&m)) {
      store.finish_run(f->run_id, f->summary, f->finished_at_ms);
    }
  }
  tx.commit();
  for (const Message& m : batch.others) {
    if (const auto* f = std::get_if<FinishRow>(&m)) std::erase(beating_, f->run_id);
  }
}

void StoreWriter::run(std::promise<void> opened) {
  std::optional<RunStore> store;
  try {
    store.emplace(RunStore::open(path_, options_.store));
    opened.set_value();
  } catch (...) {
    opened.set_exception(std::current_exception());
    return;
  }
  Batch work;  // rows taken from the queue, kept until they are committed
  std::vector<std::function<void(RunStore&)>> requests;
  std::uint64_t taken_seq = 0;
  auto last_beat = std::chrono::steady_clock::now();  // begin_run wrote the first
  for (;;) {
    bool stopping = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait_for(lock, options_.flush_interval, [&] {
        return stop_ || flush_requested_ || !requests_.empty() ||
               queue_.steps.size() >= options_.batch_rows || !queue_.others.empty();
      });
      work.append(queue_);
      requests.swap(requests_);
      taken_seq = queued_seq_;
      flush_requested_ = false;
      stopping = stop_;
    }
    for (auto& request : requests) request(*store);
    requests.clear();

    std::exception_ptr failure;
    const auto step_rows = static_cast<std::int64_t>(work.steps.size());
    const auto now = std::chrono::steady_clock::now();
    const bool beat = !beating_.empty() && now - last_beat >= options_.heartbeat_interval;
    if (!work.empty() || beat) {
      try {
        commit(*store, work, beat);
        if (beat) last_beat = now;
        work.steps.clear();
        work.others.clear();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    {
      std::lock_guard lock(mutex_);
      if (failure) {
        ++failures_;
        ++failing_in_a_row_;
        error_ = failure;
        bool busy = false;
        try {
          std::rethrow_exception(failure);
        } catch (const StoreError& e) {
          last_error_ = e.what();
          busy = e.code() == SQLITE_BUSY || e.code() == SQLITE_LOCKED;
        } catch (const std::exception& e) {
          last_error_ = e.what();
        }
        if (!busy || failing_in_a_row_ >= kStuckCommits) stuck_.store(true);
      } else {
        committed_seq_ = taken_seq;
        rows_committed_ += step_rows;
        failing_in_a_row_ = 0;
        stuck_.store(false);
      }
    }
    flushed_.notify_all();
    if (stopping) return;
    // After a failure the rows wait for the next interval; retrying at once would spin.
    if (failure) std::this_thread::sleep_for(options_.flush_interval);
  }
}

}  // namespace mixlab::store
