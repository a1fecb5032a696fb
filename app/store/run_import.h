// Bringing runs from another run database into this one (`mixlab-cli runs import`, and the
// Slurm executor's per-task files): every run with its steps, epochs, tags and layer times,
// matched by its globally unique id, so that importing the same file twice adds nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "app/store/run_store.h"

namespace mixlab::store {

struct ImportedRun {
  std::string uid;
  std::int64_t source_id = 0;  // its number in the file
  std::int64_t id = 0;         // its number here (the run already here, when it was)
  std::string status;          // as recorded here
};

struct ImportResult {
  std::vector<ImportedRun> added;
  std::vector<ImportedRun> already_here;
  std::vector<ImportedRun> still_running;  // left out: their process is still recording them
};

struct ImportOptions {
  // A run the file says is running is taken as interrupted (its process is known to have
  // ended: a finished Slurm task), with this message; empty: such runs are left out while their
  // process may be alive, as the file's own store would treat them.
  std::string running_means_interrupted;
};

// Imports every run of `file` into `into`, in one transaction: all or nothing. The file is
// only read (through a snapshot copy in the temporary folder); neither it nor its folder is ever
// changed (no -wal or -shm made beside it). Throws StoreError naming the file when it is
// missing, not a MixLab run database, from a newer MixLab, damaged, holding a run with a setting
// the field table cannot read (naming the run, the column and the value), or the store itself.
ImportResult import_runs(RunStore& into, const std::filesystem::path& file,
                         const ImportOptions& options = {});

}  // namespace mixlab::store
