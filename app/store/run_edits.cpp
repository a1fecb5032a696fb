// Editing the run history: names, tags, notes, deletion (each throws StoreError naming the run
// when it is not there).
#include "app/store/run_store.h"

#include "app/store/run_owner.h"
#include "app/store/run_rows.h"

namespace mixlab::store {

void RunStore::require_run(std::int64_t run_id) {
  Statement st = db_.prepare("SELECT 1 FROM runs WHERE id = ?");
  st.bind(1, run_id);
  if (!st.step()) throw StoreError("no run " + std::to_string(run_id) + " in " + path());
}

std::vector<std::string> RunStore::tags_of(std::int64_t run_id) {
  Statement st = db_.prepare("SELECT tag FROM run_tags WHERE run_id = ? ORDER BY tag");
  st.bind(1, run_id);
  std::vector<std::string> tags;
  while (st.step()) tags.push_back(st.column_text(0));
  return tags;
}

void RunStore::rename(std::int64_t run_id, const std::string& name) {
  require_run(run_id);
  if (name.empty()) throw StoreError("a run's name cannot be empty");
  db_.prepare("UPDATE runs SET name = ? WHERE id = ?").bind(1, name).bind(2, run_id).run();
}

void RunStore::add_tags(std::int64_t run_id, const std::vector<std::string>& tags) {
  require_run(run_id);
  Transaction tx(db_);
  Statement st = db_.prepare("INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)");
  for (const std::string& t : tags) {
    if (t.empty()) throw StoreError("a tag cannot be empty");
    st.bind(1, run_id).bind(2, t).run();
  }
  tx.commit();
}

void RunStore::remove_tags(std::int64_t run_id, const std::vector<std::string>& tags) {
  require_run(run_id);
  Transaction tx(db_);
  Statement st = db_.prepare("DELETE FROM run_tags WHERE run_id = ? AND tag = ?");
  for (const std::string& t : tags) st.bind(1, run_id).bind(2, t).run();
  tx.commit();
}

void RunStore::set_note(std::int64_t run_id, const std::string& note) {
  require_run(run_id);
  db_.prepare("UPDATE runs SET note = ? WHERE id = ?").bind(1, note).bind(2, run_id).run();
}

void RunStore::delete_run(std::int64_t run_id) {
  require_run(run_id);
  // A run still recording on this machine would lose its rows under it (it used to end with a
  // raw FOREIGN KEY error while saying "finished"): refused while its process lives. A run
  // recorded on another host cannot be checked; deleting it ends that run `failed` there, its
  // writer saying why (StoreWriter::stuck_error).
  Statement st = db_.prepare("SELECT " + std::string(rows::kOwnerColumns) +
                             " FROM runs WHERE id = ? AND status = ?");
  st.bind(1, run_id);
  st.bind(2, std::string(to_string(RecordStatus::running)));
  if (st.step()) {
    const Owner owner = rows::read_owner(st, 0);
    if (owner.host == this_process().host && owner_alive(owner)) {
      throw StoreError("run " + std::to_string(run_id) + " is still running (process " +
                       std::to_string(owner.pid) + " on " + owner.host +
                       "): stop it before deleting it");
    }
  }
  db_.prepare("DELETE FROM runs WHERE id = ?").bind(1, run_id).run();
}

}  // namespace mixlab::store
