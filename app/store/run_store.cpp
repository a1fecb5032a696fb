#include "app/store/run_store.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <unordered_map>
#include <variant>

#include "app/store/run_owner.h"
#include "app/store/run_rows.h"
#include "app/store/safe_file.h"
#include "app/store/schema.h"
#include "engine/train/run_fields.h"
#include "engine/train/stats.h"

namespace mixlab::store {

namespace fs = std::filesystem;
using rows::bind_field;
using rows::bind_summary;
using rows::field_columns;
using rows::kRecordColumns;
using rows::kSummaryAssignments;
using rows::read_run;
using rows::read_step;

std::string default_run_name(const RunRecord& r) {
  return r.model_name + " " + std::string(to_string(r.config.precision)) + " b" +
         std::to_string(r.config.batch_size);
}

namespace {

// Why a file cannot be used, in words, from the error SQLite gave.
[[noreturn]] void rethrow_open_error(const fs::path& path, const StoreError& e) {
  switch (e.code()) {
    case SQLITE_NOTADB:
      throw StoreError(path.string() + " is not a MixLab run database (not an SQLite file); " +
                           "it was left as it was",
                       e.code());
    case SQLITE_CORRUPT:
      // A read that met the damage already says so in these words (throw_sqlite_error).
      if (std::string(e.what()).starts_with(path.string() + " is corrupt")) throw e;
      throw StoreError(path.string() + " is corrupt (" + e.what() +
                           "); it was left as it was. Restore it from a backup or move it away " +
                           "to start a new history",
                       e.code());
    case SQLITE_FULL:
      throw StoreError("the disk holding " + path.string() + " is full: " + e.what(), e.code());
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
      throw StoreError(path.string() + " cannot be written (read-only location?): " + e.what() +
                           " - record elsewhere with --db PATH or MIXLAB_DB",
                       e.code());
    default:
      throw e;
  }
}

// PRAGMA quick_check: throws SQLITE_CORRUPT naming the first problem it reports.
void check_integrity(Connection& db) {
  Statement st = db.prepare("PRAGMA quick_check(1)");
  std::string result = st.step() ? st.column_text(0) : "no answer";
  if (result == "ok") return;
  throw StoreError("PRAGMA quick_check: " + result, SQLITE_CORRUPT);  // rethrow_open_error says more
}

}  // namespace

fs::path default_store_path() {
  if (const char* db = std::getenv("MIXLAB_DB"); db != nullptr && *db != '\0') return db;
  if (const char* data = std::getenv("XDG_DATA_HOME"); data != nullptr && *data == '/')
    return fs::path(data) / "mixlab" / "runs.sqlite";
  const char* home = std::getenv("HOME");
  return fs::path(home != nullptr && *home != '\0' ? home : ".") / ".local" / "share" / "mixlab" /
         "runs.sqlite";
}

namespace {

// Settings every writing connection needs; max_page_count is per connection.
void set_up_for_writing(Connection& db, const StoreOptions& options) {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = NORMAL");
  if (options.max_page_count > 0)
    db.exec("PRAGMA max_page_count = " + std::to_string(options.max_page_count));
}

// Replaces a temporary file's name in SQLite's messages with the name the user gave.
StoreError renamed(const StoreError& e, const fs::path& temp, const fs::path& path) {
  std::string what = e.what();
  for (std::size_t at = what.find(temp.string()); at != std::string::npos;
       at = what.find(temp.string(), at + path.string().size())) {
    what.replace(at, temp.string().size(), path.string());
  }
  return StoreError(what, e.code());
}

void remove_database_files(const fs::path& file) {
  std::error_code ignored;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"})
    fs::remove(file.string() + suffix, ignored);
}

// Creates a complete, empty run database at `path` without ever showing another process a
// half-made one: the schema is written into a new file of a random name beside it, which is then
// linked to `path` only if nothing is there yet. When another process got there first, its
// database is kept and this one dropped. Only the file this call made is ever removed.
void create_store(const fs::path& path, const StoreOptions& options) {
  TempFile temp;
  try {
    temp = create_temp_beside(path);
  } catch (const Error& e) {
    throw StoreError(std::string(e.what()) + " - record elsewhere with --db PATH or MIXLAB_DB",
                     SQLITE_CANTOPEN);
  }
  ::close(temp.fd);
  try {
    Connection db(temp.path.string(), OpenMode::read_write);
    set_up_for_writing(db, options);
    migrate(db, schema_migrations(), kSchemaVersion);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } catch (const StoreError& e) {
    remove_database_files(temp.path);
    rethrow_open_error(path, renamed(e, temp.path, path));
  }
  // The connection is closed: the file holds everything, its -wal is gone.
  const bool linked = ::link(temp.path.c_str(), path.c_str()) == 0;
  const int err = errno;
  if (!linked && err != EEXIST) {
    // A file system without hard links: rename, but never over a file that appeared meanwhile.
    std::error_code ec;
    if (!fs::exists(path, ec)) fs::rename(temp.path, path, ec);
  }
  remove_database_files(temp.path);
}

// True when this process cannot write `path` or its folder (read-only media, permissions): then
// SQLite could not make the -shm a WAL database needs to be read, and must not try.
bool cannot_write_beside(const fs::path& path) {
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  return ::access(path.c_str(), W_OK) != 0 || ::access(folder.c_str(), W_OK) != 0;
}

}  // namespace

RunStore RunStore::open(const fs::path& path, const StoreOptions& options) {
  if (path.empty()) throw StoreError("the run database's path is empty", SQLITE_CANTOPEN);
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  if (!existed && options.read_only)
    throw StoreError("no run database at " + path.string(), SQLITE_CANTOPEN);
  if (existed && !options.read_only && ::access(path.c_str(), W_OK) != 0) {
    // Refused before SQLite opens it: a read-only open of a WAL file would leave -wal and -shm
    // beside it.
    throw StoreError(path.string() + " is read-only; it was left as it was - record " +
                         "elsewhere with --db PATH or MIXLAB_DB",
                     SQLITE_READONLY);
  }
  if (existed && !fs::is_regular_file(path, ec)) {
    throw StoreError(path.string() + " is not a MixLab run database (not a regular file); it " +
                         "was left as it was",
                     SQLITE_CANTOPEN);
  }
  if (!existed) {
    if (path.has_parent_path()) {
      fs::create_directories(path.parent_path(), ec);
      if (ec) {
        throw StoreError("cannot create the folder " + path.parent_path().string() +
                             " for the run database " + path.string() + ": " + ec.message(),
                         SQLITE_CANTOPEN);
      }
    }
    create_store(path, options);
  }
  const OpenMode mode = !options.read_only         ? OpenMode::read_write
                        : cannot_write_beside(path) ? OpenMode::immutable
                                                    : OpenMode::read_only;
  Connection db;
  try {
    db = Connection(path.string(), mode);
  } catch (const StoreError& e) {
    rethrow_open_error(path, e);
  }
  // Nothing is written before the file is known to be ours and sound.
  bool own_message = false;  // an error below already says what is wrong in words
  try {
    db.exec("PRAGMA busy_timeout = " + std::to_string(options.busy_timeout_ms));
    std::int64_t app_id = 0;
    std::int64_t version = 0;
    std::int64_t objects = 0;
    {
      // One snapshot: another process's migration is seen whole or not at all.
      db.exec("BEGIN");
      try {
        app_id = db.query_int("PRAGMA application_id");
        version = db.query_int("PRAGMA user_version");
        objects = db.query_int("SELECT count(*) FROM sqlite_master");
      } catch (...) {
        db.exec("ROLLBACK");
        throw;
      }
      db.exec("COMMIT");
    }
    if (app_id != kApplicationId && (app_id != 0 || version != 0 || objects != 0)) {
      throw StoreError(path.string() +
                       " is not a MixLab run database (an SQLite file of another program); it " +
                       "was left as it was");
    }
    if (version > kSchemaVersion) {
      throw StoreError(path.string() + " was written by a newer MixLab (schema version " +
                       std::to_string(version) + "; this MixLab reads up to version " +
                       std::to_string(kSchemaVersion) + "); it was left as it was");
    }
    if (!options.read_only && db.read_only()) {
      own_message = true;
      throw StoreError(path.string() + " is read-only; it was left as it was - record " +
                           "elsewhere with --db PATH or MIXLAB_DB",
                       SQLITE_READONLY);
    }
    if (options.read_only) {
      if (version < kSchemaVersion) {
        throw StoreError(path.string() + " has schema version " + std::to_string(version) +
                         " and needs upgrading; open it once for writing");
      }
    } else {
      // A damaged file is refused before anything is written to it (PRAGMA quick_check: every
      // page and record well formed; about 0.2 s for a 42 MB history on the 2-core VM).
      if (existed) check_integrity(db);
      set_up_for_writing(db, options);
      if (version < kSchemaVersion) migrate(db, schema_migrations(), kSchemaVersion);
    }
    db.exec("PRAGMA foreign_keys = ON");
    // Reads every table's first page: a damaged schema shows here, not mid-run.
    db.query_int(
        "SELECT (SELECT count(*) FROM (SELECT 1 FROM runs LIMIT 1)) + "
        "(SELECT count(*) FROM (SELECT 1 FROM steps LIMIT 1)) + "
        "(SELECT count(*) FROM (SELECT 1 FROM epochs LIMIT 1)) + "
        "(SELECT count(*) FROM (SELECT 1 FROM run_tags LIMIT 1))");
  } catch (const StoreError& e) {
    db = Connection();
    if (e.code() == 0 || own_message) throw;
    rethrow_open_error(path, e);
  }
  RunStore store(std::move(db));
  if (!options.read_only && options.mark_interrupted) store.mark_interrupted_runs();
  return store;
}

std::int64_t RunStore::insert_run(RunRecord r) {
  if (r.created_at_ms == 0) r.created_at_ms = now_utc_ms();
  if (r.name.empty()) r.name = default_run_name(r);
  const Owner owner = this_process();
  std::string placeholders;
  for (std::size_t i = 0; i < run_fields().size(); ++i) placeholders += ", ?";
  Statement st = db_.prepare(
      "INSERT INTO runs (name, status, message, created_at_ms, model_name, model_json, device, "
      "total_steps, note, " +
      std::string(rows::kOwnerColumns) + ", uid" + field_columns() +
      ") VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?" + placeholders + ")");
  int c = 1;
  st.bind(c++, r.name);
  st.bind(c++, r.message);
  st.bind(c++, r.created_at_ms);
  st.bind(c++, r.model_name);
  st.bind(c++, r.model_json);
  st.bind(c++, r.device.empty() ? std::string("cpu") : r.device);
  st.bind(c++, r.total_steps);
  st.bind(c++, r.note);
  st.bind(c++, owner.host);
  st.bind(c++, owner.boot_id);
  st.bind(c++, owner.pid);
  st.bind(c++, owner.start_ticks);
  st.bind(c++, now_utc_ms());  // the first heartbeat; the StoreWriter writes the next ones
  st.bind(c++, r.uid.empty() ? new_uid() : r.uid);
  for (const RunField& f : run_fields()) bind_field(st, c++, f.get(r.config));
  Transaction tx(db_);
  st.run();
  const std::int64_t id = db_.last_insert_id();
  if (!r.tags.empty()) {
    Statement tag = db_.prepare("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)");
    for (const std::string& t : r.tags) tag.bind(1, id).bind(2, t).run();
  }
  tx.commit();
  return id;
}

void RunStore::mark_started(std::int64_t run_id, std::int64_t started_at_ms, const Environment& env,
                            std::int64_t total_steps, std::int64_t peak_memory_bytes) {
  Statement st = db_.prepare(
      "UPDATE runs SET started_at_ms = ?, total_steps = ?, peak_memory_bytes = ?, "
      "env_device_kind = ?, env_device_name = ?, env_compute_capability = ?, "
      "env_driver_version = ?, env_cuda_version = ?, env_cudnn_version = ?, "
      "env_cublas_version = ?, env_onednn_version = ?, env_cpu_model = ?, env_threads = ?, "
      "env_mixlab_version = ?, env_hostname = ? WHERE id = ?");
  int c = 1;
  st.bind(c++, started_at_ms);
  st.bind(c++, total_steps);
  st.bind(c++, peak_memory_bytes);
  st.bind(c++, env.device_kind);
  st.bind(c++, env.device_name);
  st.bind(c++, env.compute_capability);
  st.bind(c++, env.driver_version);
  st.bind(c++, env.cuda_version);
  st.bind(c++, env.cudnn_version);
  st.bind(c++, env.cublas_version);
  st.bind(c++, env.onednn_version);
  st.bind(c++, env.cpu_model);
  st.bind(c++, env.threads);
  st.bind(c++, env.mixlab_version);
  st.bind(c++, env.hostname);
  st.bind(c++, run_id);
  st.run();
}

void RunStore::insert_steps(std::int64_t run_id, std::span<const StepMetrics> steps) {
  Statement st = db_.prepare(
      "INSERT INTO steps (run_id, step, epoch, wall_offset_s, step_ms, data_wait_ms, "
      "forward_ms, backward_ms, optimizer_ms, device_ms, loss, accuracy, loss_scale, skipped, "
      "samples) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  // One transaction for the lot: the caller's (the writer's batch), or one opened here.
  std::optional<Transaction> own;
  if (sqlite3_get_autocommit(db_.get()) != 0) own.emplace(db_);
  for (const StepMetrics& m : steps) {
    int c = 1;
    st.bind(c++, run_id);
    st.bind(c++, m.step);
    st.bind(c++, m.epoch);
    st.bind(c++, m.wall_offset_s);
    st.bind(c++, m.step_ms);
    st.bind(c++, m.data_wait_ms);
    st.bind(c++, m.forward_ms);
    st.bind(c++, m.backward_ms);
    st.bind(c++, m.optimizer_ms);
    st.bind(c++, m.device_ms);
    st.bind(c++, m.loss);
    st.bind(c++, m.accuracy);
    st.bind(c++, m.loss_scale);
    st.bind(c++, m.skipped);
    st.bind(c++, m.samples);
    st.run();
  }
  if (own) own->commit();
}

void RunStore::insert_epoch(std::int64_t run_id, const EpochMetrics& e) {
  Statement st = db_.prepare(
      "INSERT OR REPLACE INTO epochs (run_id, epoch, steps, train_loss, train_accuracy, "
      "test_loss, test_accuracy, time_s, samples_per_s) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)");
  st.bind(1, run_id).bind(2, e.epoch).bind(3, e.steps).bind(4, e.train_loss);
  st.bind(5, e.train_accuracy).bind(6, e.test_loss).bind(7, e.test_accuracy).bind(8, e.time_s);
  st.bind(9, e.samples_per_s);
  st.run();
}

void RunStore::finish_run(std::int64_t run_id, const RunSummary& s, std::int64_t finished_at_ms) {
  Statement st = db_.prepare("UPDATE runs SET status = ?, message = ?, finished_at_ms = ?, " +
                             std::string(kSummaryAssignments) +
                             ", peak_memory_bytes = max(peak_memory_bytes, ?) WHERE id = ?");
  st.bind(1, to_string(record_status(s.status)));
  st.bind(2, s.message);
  st.bind(3, finished_at_ms);
  int c = bind_summary(st, 4, s);
  st.bind(c++, s.peak_memory_bytes);
  st.bind(c++, run_id);
  st.run();
}

void RunStore::beat(std::span<const std::int64_t> run_ids, std::int64_t now_ms) {
  Statement st =
      db_.prepare("UPDATE runs SET heartbeat_at_ms = ? WHERE id = ? AND status = 'running'");
  for (const std::int64_t id : run_ids) st.bind(1, now_ms).bind(2, id).run();
}

int RunStore::mark_interrupted_runs() {
  struct Orphan {
    std::int64_t id;
    std::int64_t created_at_ms;
    std::int64_t started_at_ms;
    int warmup_steps;
    std::string why;  // owner_gone's words
  };
  std::vector<Orphan> orphans;
  {
    const std::int64_t now_ms = now_utc_ms();
    Statement st =
        db_.prepare("SELECT id, created_at_ms, started_at_ms, warmup_steps, " +
                    std::string(rows::kOwnerColumns) + " FROM runs WHERE status = 'running'");
    while (st.step()) {
      Orphan o{st.column_int(0), st.column_int(1), st.column_int(2),
               static_cast<int>(st.column_int(3)), owner_gone(rows::read_owner(st, 4), now_ms)};
      if (!o.why.empty()) orphans.push_back(std::move(o));
    }
  }
  for (const Orphan& o : orphans) {
    // The figures the lost process would have written, from the steps it did commit.
    RunSummary s;
    std::vector<double> step_ms;
    std::vector<int> samples;
    double last_offset_s = 0.0;
    for_each_step(o.id, [&](const StepMetrics& m) {
      step_ms.push_back(m.step_ms);
      samples.push_back(m.samples);
      s.skipped_steps += m.skipped ? 1 : 0;
      s.final_loss_scale = m.loss_scale;
      s.final_loss = m.loss;
      s.final_accuracy = m.accuracy;
      last_offset_s = m.wall_offset_s;
    });
    s.steps = static_cast<std::int64_t>(step_ms.size());
    summarize_step_times(step_ms, samples, o.warmup_steps, s);
    s.wall_s = last_offset_s;
    {
      Statement e = db_.prepare(
          "SELECT count(*), max(test_loss), max(test_accuracy) FROM epochs WHERE run_id = ? "
          "AND epoch = (SELECT max(epoch) FROM epochs WHERE run_id = ?)");
      e.bind(1, o.id).bind(2, o.id);
      if (e.step()) {
        s.test_loss = e.column_double(1);
        s.test_accuracy = e.column_double(2);
      }
    }
    s.epochs_completed = static_cast<int>(
        db_.query_int("SELECT count(*) FROM epochs WHERE run_id = " + std::to_string(o.id)));
    const std::int64_t start = o.started_at_ms != 0 ? o.started_at_ms : o.created_at_ms;
    const std::int64_t finished = start + std::llround(last_offset_s * 1000.0);
    const std::string message =
        "interrupted: " + o.why + "; " + std::to_string(s.steps) + " steps were kept";
    Statement st =
        db_.prepare("UPDATE runs SET status = 'interrupted', message = ?, finished_at_ms = ?, " +
                    std::string(kSummaryAssignments) + " WHERE id = ? AND status = 'running'");
    st.bind(1, message).bind(2, finished);
    const int c = bind_summary(st, 3, s);
    st.bind(c, o.id);
    st.run();
  }
  return static_cast<int>(orphans.size());
}

std::vector<RunRecord> RunStore::list_runs() {
  Statement st = db_.prepare("SELECT " + std::string(kRecordColumns) + field_columns() +
                             " FROM runs ORDER BY created_at_ms DESC, id DESC");
  std::vector<RunRecord> runs;
  while (st.step()) runs.push_back(read_run(st));
  Statement tags = db_.prepare("SELECT run_id, tag FROM run_tags ORDER BY run_id, tag");
  std::unordered_map<std::int64_t, std::vector<std::string>> by_run;
  while (tags.step()) by_run[tags.column_int(0)].push_back(tags.column_text(1));
  for (RunRecord& r : runs) {
    if (auto it = by_run.find(r.id); it != by_run.end()) r.tags = std::move(it->second);
  }
  return runs;
}

std::optional<RunRecord> RunStore::find_run(std::int64_t run_id) {
  Statement st = db_.prepare("SELECT " + std::string(kRecordColumns) + field_columns() +
                             " FROM runs WHERE id = ?");
  st.bind(1, run_id);
  if (!st.step()) return std::nullopt;
  RunRecord r = read_run(st);
  r.tags = tags_of(run_id);
  return r;
}

RunRecord RunStore::run(std::int64_t run_id) {
  auto r = find_run(run_id);
  if (!r) throw StoreError("no run " + std::to_string(run_id) + " in " + path());
  return std::move(*r);
}

void RunStore::for_each_step(std::int64_t run_id,
                             const std::function<void(const StepMetrics&)>& visit) {
  Statement st = db_.prepare(
      "SELECT step, epoch, wall_offset_s, step_ms, data_wait_ms, forward_ms, backward_ms, "
      "optimizer_ms, device_ms, loss, accuracy, loss_scale, skipped, samples FROM steps "
      "WHERE run_id = ? ORDER BY step");
  st.bind(1, run_id);
  while (st.step()) visit(read_step(st));
}

std::vector<StepMetrics> RunStore::steps(std::int64_t run_id) {
  std::vector<StepMetrics> steps;
  steps.reserve(static_cast<std::size_t>(step_count(run_id)));
  for_each_step(run_id, [&](const StepMetrics& m) { steps.push_back(m); });
  return steps;
}

std::vector<EpochMetrics> RunStore::epochs(std::int64_t run_id) {
  Statement st = db_.prepare(
      "SELECT epoch, steps, train_loss, train_accuracy, test_loss, test_accuracy, time_s, "
      "samples_per_s FROM epochs WHERE run_id = ? ORDER BY epoch");
  st.bind(1, run_id);
  std::vector<EpochMetrics> epochs;
  while (st.step()) {
    EpochMetrics e;
    e.epoch = static_cast<int>(st.column_int(0));
    e.steps = st.column_int(1);
    e.train_loss = st.column_double(2);
    e.train_accuracy = st.column_double(3);
    e.test_loss = st.column_double(4);
    e.test_accuracy = st.column_double(5);
    e.time_s = st.column_double(6);
    e.samples_per_s = st.column_double(7);
    epochs.push_back(e);
  }
  return epochs;
}

std::int64_t RunStore::step_count(std::int64_t run_id) {
  Statement st = db_.prepare("SELECT count(*) FROM steps WHERE run_id = ?");
  st.bind(1, run_id);
  st.step();
  return st.column_int(0);
}

}  // namespace mixlab::store
