#include "app/store/run_import.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <system_error>

#include "app/store/run_owner.h"
#include "app/store/run_rows.h"
#include "app/store/safe_file.h"
#include "app/store/schema.h"

namespace mixlab::store {

namespace fs = std::filesystem;

namespace {

// The tables that hang off a run, copied with it.
constexpr const char* kRunTables[] = {"steps",       "epochs",          "run_tags",
                                      "layer_times", "layer_overflows", "fp8_tensors"};

// A private folder in the temporary folder, removed with everything in it when this goes: the
// snapshot, and a copy of a source that must be copied to be read (open_source).
class Scratch {
 public:
  Scratch() {
    std::error_code ec;
    fs::path folder = fs::temp_directory_path(ec);
    if (ec) folder = "/tmp";
    std::string name = (folder / "mixlab-import-XXXXXX").string();
    if (::mkdtemp(name.data()) == nullptr)
      throw StoreError("cannot make a temporary folder in " + folder.string());
    path_ = name;
  }
  ~Scratch() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  fs::path operator/(const char* name) const { return path_ / name; }

 private:
  fs::path path_;
};

// Detaches the snapshot from the store's connection when the import ends, however it ends.
class Attached {
 public:
  Attached(Connection& db, const fs::path& file) : db_(db) {
    db_.prepare("ATTACH DATABASE ? AS src").bind(1, file.string()).run();
  }
  ~Attached() {
    try {
      db_.exec("DETACH DATABASE src");
    } catch (...) {
    }
  }
  Attached(const Attached&) = delete;
  Attached& operator=(const Attached&) = delete;

 private:
  Connection& db_;
};

// "a, b, c" of a table's columns, less `skip`.
std::string columns_of(Connection& db, const std::string& table, const std::string& skip) {
  Statement st = db.prepare("SELECT name FROM pragma_table_info(?) ORDER BY cid");
  st.bind(1, table);
  std::string out;
  while (st.step()) {
    const std::string name = st.column_text(0);
    if (name == skip) continue;
    out += (out.empty() ? "" : ", ") + name;
  }
  return out;
}

bool has_data(const fs::path& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  return !ec && size > 0;
}

// Opens an import source for reading without ever writing beside it: no -wal, -shm or journal is
// made next to another history, and the source's own bytes never change.
//  - Nothing in a -wal or -journal beside it (a closed MixLab store): read-only and immutable,
//    SQLite takes no lock and makes no file.
//  - A -wal with a -shm this process may write (another process has the store open, or died
//    with it open): read-only through them, as any reader of a live store; they were there
//    already.
//  - Otherwise (a -wal without its -shm, a copied or crashed file, read-only media, a hot
//    -journal): no process can be writing it, so the file and its side file are copied into
//    `scratch` and the copy is opened, where SQLite may fold the -wal in or roll the journal
//    back.
Connection open_source(const fs::path& file, const Scratch& scratch) {
  const std::string path = file.string();
  const bool wal = has_data(path + "-wal");
  if (!wal && !has_data(path + "-journal")) return Connection(path, OpenMode::immutable);
  if (wal && ::access((path + "-shm").c_str(), W_OK) == 0)
    return Connection(path, OpenMode::read_only);
  const fs::path copy = scratch / "source.sqlite";
  std::error_code ec;
  fs::copy_file(file, copy, ec);
  for (const char* side : {"-wal", "-journal"}) {
    if (!ec && has_data(path + side))
      fs::copy_file(path + side, copy.string() + side, ec);
  }
  if (ec) throw StoreError("cannot read the run database " + path + ": " + ec.message());
  return Connection(copy.string(), OpenMode::read_write);
}

// A consistent copy of `file` at `snapshot` (in `scratch`), at this MixLab's schema version.
// Checks that `file` is a MixLab run database this MixLab can read, every run of it whole.
void take_snapshot(const fs::path& file, const Scratch& scratch, const fs::path& snapshot) {
  const std::string left = "; it was left as it was";
  std::error_code ec;
  if (!fs::exists(file, ec)) throw StoreError("no run database at " + file.string());
  if (!fs::is_regular_file(file, ec))
    throw StoreError(file.string() + " is not a MixLab run database (not a regular file)" + left);
  std::int64_t version = 0;
  {
    Connection src = open_source(file, scratch);
    src.exec("PRAGMA busy_timeout = 10000");
    std::int64_t app_id = 0;
    try {
      app_id = src.query_int("PRAGMA application_id");
      version = src.query_int("PRAGMA user_version");
    } catch (const StoreError& e) {
      throw StoreError(file.string() + " is not a MixLab run database (" + e.what() + ")" + left);
    }
    if (app_id != kApplicationId) {
      throw StoreError(file.string() +
                       " is not a MixLab run database (an SQLite file of another program, or "
                       "empty)" + left);
    }
    if (version > kSchemaVersion) {
      throw StoreError(file.string() + " was written by a newer MixLab (schema version " +
                       std::to_string(version) + "; this MixLab reads up to version " +
                       std::to_string(kSchemaVersion) + ")" + left);
    }
    try {
      src.prepare("VACUUM INTO ?").bind(1, snapshot.string()).run();
    } catch (const StoreError& e) {
      throw StoreError("cannot read the run database " + file.string() + ": " + e.what(),
                       e.code());
    }
  }
  Connection copy(snapshot.string(), OpenMode::read_write);
  if (version < kSchemaVersion) migrate(copy, schema_migrations(), kSchemaVersion);
  const std::string check = [&] {
    Statement st = copy.prepare("PRAGMA quick_check(1)");
    return st.step() ? st.column_text(0) : std::string("no answer");
  }();
  if (check != "ok") {
    throw StoreError(file.string() + " is damaged (PRAGMA quick_check: " + check + ")" + left);
  }
  // Every run must read whole, as the store reads it (the field table's parsers): a run with a
  // setting MixLab does not know would be a damaged run here. The file is refused, not half
  // imported.
  Statement runs = copy.prepare("SELECT " + std::string(rows::kRecordColumns) +
                                rows::field_columns() + " FROM runs ORDER BY id");
  while (runs.step()) {
    const RunRecord run = rows::read_run(runs);
    if (run.damage.empty()) continue;
    throw StoreError(file.string() + ": run " + std::to_string(run.id) + " cannot be imported: " +
                     describe_damage(run) + "; nothing was imported from the file" + left);
  }
}

}  // namespace

ImportResult import_runs(RunStore& into, const fs::path& file, const ImportOptions& options) {
  if (same_file(file, into.path())) {
    throw StoreError(file.string() + " is the run database being imported into");
  }
  const Scratch scratch;
  const fs::path snapshot = scratch / "snapshot.sqlite";
  take_snapshot(file, scratch, snapshot);

  Connection& db = into.connection();
  ImportResult result;
  {
    Attached attached(db, snapshot);
    const std::string run_columns = columns_of(db, "runs", "id");
    Transaction tx(db);
    struct Source {
      std::int64_t id;
      std::string uid, status;
      Owner owner;
    };
    std::vector<Source> sources;
    {
      Statement st = db.prepare("SELECT id, uid, status, " + std::string(rows::kOwnerColumns) +
                                " FROM src.runs ORDER BY id");
      while (st.step()) {
        sources.push_back(
            {st.column_int(0), st.column_text(1), st.column_text(2), rows::read_owner(st, 3)});
      }
    }
    Statement find = db.prepare("SELECT id, status FROM main.runs WHERE uid = ?");
    Statement copy_run = db.prepare("INSERT INTO main.runs (" + run_columns + ") SELECT " +
                                    run_columns + " FROM src.runs WHERE id = ?");
    std::vector<Statement> copy_rows;
    for (const char* table : kRunTables) {
      const std::string columns = columns_of(db, table, "run_id");
      copy_rows.push_back(db.prepare("INSERT INTO main." + std::string(table) + " (run_id, " +
                                     columns + ") SELECT ?, " + columns + " FROM src." + table +
                                     " WHERE run_id = ?"));
    }
    const Owner self = this_process();
    for (const Source& s : sources) {
      find.reset();
      find.bind(1, s.uid);
      if (find.step()) {
        result.already_here.push_back({s.uid, s.id, find.column_int(0), find.column_text(1)});
        continue;
      }
      const bool running = s.status == "running";
      const bool alive = running && owner_alive(s.owner);
      if (alive && options.running_means_interrupted.empty()) {
        result.still_running.push_back({s.uid, s.id, 0, s.status});
        continue;
      }
      copy_run.reset();
      copy_run.bind(1, s.id).run();
      const std::int64_t id = db.last_insert_id();
      for (Statement& rows : copy_rows) {
        rows.reset();
        rows.bind(1, id).bind(2, s.id).run();
      }
      if (alive) {
        // Its process has ended, the caller says: the store's own rule marks it interrupted,
        // with its figures from the steps it kept, once it looks like a run of a process of
        // this host's previous boot. (An owner the rule already finds gone is kept, and the
        // rule says why: its pid, or its heartbeat.)
        db.prepare("UPDATE main.runs SET owner_host = ?, owner_boot_id = '', owner_pid = 0 "
                   "WHERE id = ?")
            .bind(1, self.host)
            .bind(2, id)
            .run();
      }
      result.added.push_back({s.uid, s.id, id, s.status});
    }
    tx.commit();
  }
  if (std::any_of(result.added.begin(), result.added.end(),
                  [](const ImportedRun& r) { return r.status == "running"; })) {
    into.mark_interrupted_runs();
    for (ImportedRun& r : result.added) {
      if (r.status != "running") continue;
      r.status = "interrupted";
      if (!options.running_means_interrupted.empty())
        into.connection()
            .prepare("UPDATE runs SET message = ? WHERE id = ?")
            .bind(1, options.running_means_interrupted)
            .bind(2, r.id)
            .run();
    }
  }
  return result;
}

}  // namespace mixlab::store
