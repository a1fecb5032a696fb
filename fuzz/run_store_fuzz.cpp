// Fuzzes opening a run database: the input is written as a file, opened read-only (its runs
// listed, and for the first few their steps, epochs, layer times and the CSV exports of them),
// then a copy of it opened for writing (which may migrate it and mark runs interrupted) and
// listed again. Every problem must be a StoreError; any other exception, a crash or a leak is a
// finding. Files go to a scratch folder on /dev/shm, so an iteration costs no disk I/O.
#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "app/store/csv_export.h"
#include "app/store/run_store.h"
#include "app/store/sqlite.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;
namespace store = mixlab::store;

const mixlab::fuzz::ScratchDir& scratch() {
  static const mixlab::fuzz::ScratchDir dir("run_store");
  return dir;
}

void remove_database(const fs::path& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    fs::remove(path.string() + suffix, ec);
}

// Reads what a history view and `runs show` / `runs export` read.
void read_runs(store::RunStore& db, bool exports) {
  const std::vector<store::RunRecord> runs = db.list_runs();
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < runs.size() && i < 4; ++i) {
    const std::int64_t id = runs[i].id;
    ids.push_back(id);
    (void)db.find_run(id);
    (void)db.steps(id);
    (void)db.epochs(id);
    (void)db.step_count(id);
    (void)db.layer_times(id);
  }
  (void)db.doctor_reports();
  if (!exports || ids.empty()) return;
  std::ostringstream out;
  store::write_summary_csv(out, db, ids);
  store::write_long_steps_csv(out, db, ids);
  store::write_layers_csv(out, db, ids);
  store::write_steps_csv(out, db, ids.front());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const fs::path input = scratch().path() / "input.sqlite";
  const fs::path copy = scratch().path() / "copy.sqlite";
  remove_database(input);
  remove_database(copy);
  mixlab::fuzz::write_file(input, data, size);

  store::StoreOptions read_only;
  read_only.read_only = true;
  read_only.busy_timeout_ms = 0;  // nobody else has the file; never wait
  try {
    store::RunStore db = store::RunStore::open(input, read_only);
    read_runs(db, true);
  } catch (const store::StoreError&) {
    // fine: named and caught
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception("RunStore::open(read_only) and reading", e);
  }

  // For writing on a fresh copy of the input (the read-only open must not have changed it, but
  // that is the fault tests' business).
  remove_database(input);
  mixlab::fuzz::write_file(copy, data, size);
  store::StoreOptions writable;
  writable.busy_timeout_ms = 0;
  try {
    store::RunStore db = store::RunStore::open(copy, writable);
    read_runs(db, false);
  } catch (const store::StoreError&) {
  } catch (const std::exception& e) {
    mixlab::fuzz::unexpected_exception("RunStore::open(read_write) and reading", e);
  }
  remove_database(copy);
  return 0;
}
