#include "app/store/sweeps.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace mixlab::store {

namespace {

constexpr std::array<std::string_view, 5> kSweepStates = {"running", "stopped", "finished",
                                                          "cancelled", "failed"};
constexpr std::array<std::string_view, 4> kMemberStates = {"planned", "running", "done",
                                                           "failed"};

template <typename Enum, std::size_t N>
Enum parse_state(const std::array<std::string_view, N>& names, const std::string& text) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == text) return static_cast<Enum>(i);
  }
  return static_cast<Enum>(0);
}

constexpr std::string_view kSweepColumns =
    "id, uid, name, created_at_ms, executor, state, spec_json, message, slurm_job_id, "
    "shared_dir, owner_host, owner_boot_id, owner_pid, owner_start_ticks, slurm_options";

SweepRecord read_sweep(const Statement& st) {
  SweepRecord s;
  int c = 0;
  s.id = st.column_int(c++);
  s.uid = st.column_text(c++);
  s.name = st.column_text(c++);
  s.created_at_ms = st.column_int(c++);
  s.executor = st.column_text(c++);
  s.state = parse_state<SweepState>(kSweepStates, st.column_text(c++));
  s.spec_json = st.column_text(c++);
  s.message = st.column_text(c++);
  s.slurm_job_id = st.column_text(c++);
  s.shared_dir = st.column_text(c++);
  s.owner.host = st.column_text(c++);
  s.owner.boot_id = st.column_text(c++);
  s.owner.pid = st.column_int(c++);
  s.owner.start_ticks = st.column_int(c++);
  s.slurm_options = st.column_text(c++);
  return s;
}

void read_members(Connection& db, SweepRecord& s) {
  Statement st = db.prepare(
      "SELECT member, settings_json, state, run_id, message, run_uid FROM sweep_members WHERE sweep_id = ? "
      "ORDER BY member");
  st.bind(1, s.id);
  while (st.step()) {
    SweepMemberRecord m;
    m.member = static_cast<int>(st.column_int(0));
    m.settings_json = st.column_text(1);
    m.state = parse_state<MemberState>(kMemberStates, st.column_text(2));
    if (!st.column_is_null(3)) m.run_id = st.column_int(3);
    m.message = st.column_text(4);
    m.run_uid = st.column_text(5);
    s.members.push_back(std::move(m));
  }
}

void require_sweep(RunStore& store, std::int64_t sweep_id) {
  if (!find_sweep(store, sweep_id)) {
    throw StoreError("no sweep " + std::to_string(sweep_id) + " in " + store.path());
  }
}

}  // namespace

std::string_view to_string(SweepState state) {
  return kSweepStates[static_cast<std::size_t>(state)];
}
std::string_view to_string(MemberState state) {
  return kMemberStates[static_cast<std::size_t>(state)];
}

int SweepRecord::count(MemberState state) const {
  return static_cast<int>(std::count_if(members.begin(), members.end(),
                                        [&](const SweepMemberRecord& m) { return m.state == state; }));
}

bool SweepRecord::owner_is_alive() const {
  return owner.pid != 0 && owner_alive(owner);
}

MemberState member_state(const RunRecord& run) {
  switch (run.status) {
    case RecordStatus::finished:
    case RecordStatus::diverged:
      return MemberState::done;
    case RecordStatus::failed:
    case RecordStatus::interrupted:
      return MemberState::failed;
    case RecordStatus::stopped:
    case RecordStatus::running:
      break;
  }
  return MemberState::planned;
}

MemberOutcome member_outcome(const std::optional<RunRecord>& run, MemberOutcome without_run) {
  if (!run) return without_run;
  MemberOutcome outcome;
  outcome.state = member_state(*run);
  outcome.run_id = run->id;
  if (outcome.state == MemberState::failed) outcome.message = run->message;
  return outcome;
}

void end_member(RunStore& store, std::int64_t sweep_id, int member, const MemberOutcome& outcome) {
  set_member(store, sweep_id, member, outcome.state, outcome.run_id, outcome.message);
}

void settle_running_members(RunStore& store, std::int64_t sweep_id) {
  const std::optional<SweepRecord> sweep = find_sweep(store, sweep_id);
  if (!sweep) require_sweep(store, sweep_id);
  for (const SweepMemberRecord& m : sweep->members) {
    if (m.state != MemberState::running) continue;
    end_member(store, sweep_id, m.member,
               member_outcome(find_run_by_uid(store, m.run_uid), {MemberState::planned, {}, ""}));
  }
}

SweepRecord planned_sweep(const SweepSpec& spec, std::string executor) {
  SweepRecord s;
  s.name = spec.display_name();
  s.executor = std::move(executor);
  s.spec_json = to_json(spec).dump();
  for (const SweepMember& m : plan_sweep(spec)) {
    SweepMemberRecord planned;
    planned.member = m.index;
    planned.settings_json = to_json(m).dump();
    s.members.push_back(std::move(planned));
  }
  return s;
}

std::int64_t insert_sweep(RunStore& store, SweepRecord s) {
  Connection& db = store.connection();
  if (s.uid.empty()) s.uid = new_uid();
  if (s.created_at_ms == 0) s.created_at_ms = now_utc_ms();
  const Owner owner = this_process();
  Transaction tx(db);
  Statement st = db.prepare(
      "INSERT INTO sweeps (uid, name, created_at_ms, executor, state, spec_json, message, "
      "slurm_job_id, shared_dir, owner_host, owner_boot_id, owner_pid, owner_start_ticks, "
      "slurm_options) VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?, ?, ?, ?, ?, ?)");
  int c = 1;
  st.bind(c++, s.uid);
  st.bind(c++, s.name);
  st.bind(c++, s.created_at_ms);
  st.bind(c++, s.executor);
  st.bind(c++, s.spec_json);
  st.bind(c++, s.message);
  st.bind(c++, s.slurm_job_id);
  st.bind(c++, s.shared_dir);
  st.bind(c++, owner.host);
  st.bind(c++, owner.boot_id);
  st.bind(c++, owner.pid);
  st.bind(c++, owner.start_ticks);
  st.bind(c++, s.slurm_options);
  st.run();
  const std::int64_t id = db.last_insert_id();
  Statement member = db.prepare(
      "INSERT INTO sweep_members (sweep_id, member, settings_json, state) VALUES (?, ?, ?, "
      "'planned')");
  for (const SweepMemberRecord& m : s.members)
    member.bind(1, id).bind(2, m.member).bind(3, m.settings_json).run();
  tx.commit();
  return id;
}

std::vector<SweepRecord> list_sweeps(RunStore& store) {
  Connection& db = store.connection();
  std::vector<SweepRecord> out;
  {
    Statement st =
        db.prepare("SELECT " + std::string(kSweepColumns) + " FROM sweeps ORDER BY id DESC");
    while (st.step()) out.push_back(read_sweep(st));
  }
  for (SweepRecord& s : out) read_members(db, s);
  return out;
}

std::optional<SweepRecord> find_sweep(RunStore& store, std::int64_t id) {
  Connection& db = store.connection();
  Statement st = db.prepare("SELECT " + std::string(kSweepColumns) + " FROM sweeps WHERE id = ?");
  st.bind(1, id);
  if (!st.step()) return std::nullopt;
  SweepRecord s = read_sweep(st);
  read_members(db, s);
  return s;
}

SweepRecord sweep(RunStore& store, std::string_view id_or_uid) {
  const bool digits = !id_or_uid.empty() && id_or_uid.size() <= 12 &&
                      std::all_of(id_or_uid.begin(), id_or_uid.end(),
                                  [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  if (digits) {
    if (auto s = find_sweep(store, std::stoll(std::string(id_or_uid)))) return *s;
  }
  const bool hex = id_or_uid.size() >= 6 && id_or_uid.size() <= 32 &&
                   std::all_of(id_or_uid.begin(), id_or_uid.end(),
                               [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); });
  if (hex) {
    Statement st = store.connection().prepare("SELECT id FROM sweeps WHERE uid LIKE ? || '%'");
    std::string prefix(id_or_uid);
    std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    st.bind(1, prefix);
    std::vector<std::int64_t> ids;
    while (st.step()) ids.push_back(st.column_int(0));
    if (ids.size() > 1) {
      throw StoreError("the sweep id " + std::string(id_or_uid) + " matches " +
                       std::to_string(ids.size()) + " sweeps in " + store.path() +
                       "; give more of it");
    }
    if (ids.size() == 1) return *find_sweep(store, ids[0]);
  }
  throw StoreError("no sweep " + std::string(id_or_uid) + " in " + store.path());
}

void set_member(RunStore& store, std::int64_t sweep_id, int member, MemberState state,
                std::optional<std::int64_t> run_id, const std::string& message) {
  Statement st = store.connection().prepare(
      "UPDATE sweep_members SET state = ?, run_id = coalesce(?, run_id), message = ? "
      "WHERE sweep_id = ? AND member = ?");
  st.bind(1, to_string(state)).bind(2, run_id).bind(3, message).bind(4, sweep_id).bind(5, member);
  st.run();
  if (store.connection().changes() == 0) {
    throw StoreError("no member " + std::to_string(member) + " in sweep " +
                     std::to_string(sweep_id) + " in " + store.path());
  }
}

void start_member(RunStore& store, std::int64_t sweep_id, int member, const std::string& run_uid) {
  Statement st = store.connection().prepare(
      "UPDATE sweep_members SET state = 'running', run_uid = ?, message = '' "
      "WHERE sweep_id = ? AND member = ?");
  st.bind(1, run_uid).bind(2, sweep_id).bind(3, member).run();
  if (store.connection().changes() == 0) {
    throw StoreError("no member " + std::to_string(member) + " in sweep " +
                     std::to_string(sweep_id) + " in " + store.path());
  }
}

void set_sweep_state(RunStore& store, std::int64_t sweep_id, SweepState state,
                     const std::string& message) {
  Statement st =
      store.connection().prepare("UPDATE sweeps SET state = ?, message = ? WHERE id = ?");
  st.bind(1, to_string(state)).bind(2, message).bind(3, sweep_id).run();
  if (store.connection().changes() == 0) require_sweep(store, sweep_id);
}

void set_slurm_job(RunStore& store, std::int64_t sweep_id, const std::string& job_id,
                   const std::string& shared_dir) {
  Statement st = store.connection().prepare(
      "UPDATE sweeps SET slurm_job_id = ?, shared_dir = ? WHERE id = ?");
  st.bind(1, job_id).bind(2, shared_dir).bind(3, sweep_id).run();
  if (store.connection().changes() == 0) require_sweep(store, sweep_id);
}

void set_slurm_options(RunStore& store, std::int64_t sweep_id, const std::string& options_json) {
  Statement st = store.connection().prepare("UPDATE sweeps SET slurm_options = ? WHERE id = ?");
  st.bind(1, options_json).bind(2, sweep_id).run();
  if (store.connection().changes() == 0) require_sweep(store, sweep_id);
}

void claim_sweep(RunStore& store, std::int64_t sweep_id) {
  Connection& db = store.connection();
  Transaction tx(db);
  const auto s = find_sweep(store, sweep_id);
  if (!s) throw StoreError("no sweep " + std::to_string(sweep_id) + " in " + store.path());
  const Owner self = this_process();
  const bool is_self = s->owner.host == self.host && s->owner.pid == self.pid &&
                       s->owner.start_ticks == self.start_ticks;
  if (!is_self && s->state == SweepState::running && s->owner_is_alive()) {
    throw StoreError("sweep " + std::to_string(sweep_id) + " is being run by process " +
                     std::to_string(s->owner.pid) + " on " + s->owner.host +
                     "; stop it there first (or mixlab-cli sweep cancel " +
                     std::to_string(sweep_id) + ")");
  }
  Statement st = db.prepare(
      "UPDATE sweeps SET state = 'running', message = '', owner_host = ?, owner_boot_id = ?, "
      "owner_pid = ?, owner_start_ticks = ? WHERE id = ?");
  st.bind(1, self.host).bind(2, self.boot_id).bind(3, self.pid).bind(4, self.start_ticks);
  st.bind(5, sweep_id).run();
  tx.commit();
}

std::optional<RunRecord> find_run_by_uid(RunStore& store, const std::string& uid) {
  if (uid.empty()) return std::nullopt;
  Statement st = store.connection().prepare("SELECT id FROM runs WHERE uid = ?");
  st.bind(1, uid);
  if (!st.step()) return std::nullopt;
  return store.find_run(st.column_int(0));
}

std::vector<std::int64_t> sweep_run_ids(RunStore& store, std::int64_t sweep_id) {
  Statement st = store.connection().prepare(
      "SELECT run_id FROM sweep_members WHERE sweep_id = ? AND run_id IS NOT NULL ORDER BY member");
  st.bind(1, sweep_id);
  std::vector<std::int64_t> ids;
  while (st.step()) ids.push_back(st.column_int(0));
  return ids;
}

}  // namespace mixlab::store
