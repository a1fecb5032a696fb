// The local executor: each member is `mixlab-cli train` in a child process (so that a member
// that crashes cannot take the sweep with it), one at a time on each device. A member's run
// gets a uid chosen here and written to the store before the child starts, so that a sweep
// killed mid-member finds that run when it resumes and never runs a finished member again.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <sstream>

#include "app/cli/common.h"
#include "app/cli/sweep_support.h"

namespace mixlab::cli::sweep {

std::atomic<bool> g_stop{false};

namespace {

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
}

}  // namespace

StopOnSignal::StopOnSignal() : previous_(new struct sigaction[2]) {
  g_stop.store(false);
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: waitpid and sleeps return EINTR
  sigaction(SIGINT, &action, &previous_[0]);
  sigaction(SIGTERM, &action, &previous_[1]);
}

StopOnSignal::~StopOnSignal() {
  sigaction(SIGINT, &previous_[0], nullptr);
  sigaction(SIGTERM, &previous_[1], nullptr);
  delete[] previous_;
}

void Reporter::line(const std::string& text) const {
  if (quiet) return;
  std::fprintf(stderr, "%s\n", text.c_str());
  std::fflush(stderr);
}

std::string self_program() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("mixlab-cli") : self.string();
}

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, STDIN_FILENO);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return result;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buffer[4096];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (open_fds > 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);  // a Slurm client that hangs on an unreachable controller
      result.timed_out = true;
      break;
    }
    if (::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left.count(), 1000))) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) {
        if (sinks[i]->size() < (1u << 20)) sinks[i]->append(buffer, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (const pollfd& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

namespace {

struct Child {
  pid_t pid = 0;
  int member = 0;
  std::string uid;
  std::string device;
  fs::path err_file;
  std::chrono::steady_clock::time_point started;
};

// The last non-empty line of a child's stderr: its error message.
std::string last_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty() && line.find_first_not_of(" \r") != std::string::npos) last = line;
  }
  if (last.rfind("mixlab-cli: ", 0) == 0) last = last.substr(12);
  return last;
}

pid_t start_child(const std::vector<std::string>& argv, const fs::path& err_file) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // The child stops its run (recorded `stopped`) when the sweep dies, even by SIGKILL.
  ::prctl(PR_SET_PDEATHSIG, SIGINT);
  if (::getppid() != parent) ::_exit(130);
  // Back to the default handlers: the sweep's would only set a flag in this copy.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  const int null = ::open("/dev/null", O_RDWR);
  if (null >= 0) {
    ::dup2(null, STDIN_FILENO);
    ::dup2(null, STDOUT_FILENO);
  }
  const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (err >= 0) ::dup2(err, STDERR_FILENO);
  ::execv(args[0], args.data());
  std::fprintf(stderr, "mixlab-cli: cannot run %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

std::string minutes_left(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "";
  if (seconds < 90) return " - about " + std::to_string(std::lround(seconds)) + " s left";
  return " - about " + std::to_string(std::lround(seconds / 60)) + " min left";
}

}  // namespace

store::SweepState run_local(store::RunStore& store, std::int64_t sweep_id,
                            const LocalOptions& options, const Reporter& reporter) {
  using store::MemberState;
  store::claim_sweep(store, sweep_id);
  store::SweepRecord sweep = *store::find_sweep(store, sweep_id);
  std::vector<std::string> axes;
  try {
    axes = store::parse_sweep_json(sweep.spec_json, "sweep").axes();
  } catch (const ConfigError&) {
  }
  const std::string tag = "sweep-" + std::to_string(sweep_id);

  store::settle_running_members(store, sweep_id);  // members a killed sweep left running
  sweep = *store::find_sweep(store, sweep_id);
  std::deque<const store::SweepMemberRecord*> queue;
  for (const store::SweepMemberRecord& m : sweep.members) {
    if (m.state == MemberState::planned) queue.push_back(&m);
  }
  const int total = static_cast<int>(sweep.members.size());
  int ended = total - static_cast<int>(queue.size());
  if (ended > 0 && !queue.empty()) {
    reporter.line("sweep " + std::to_string(sweep_id) + ": resuming; " + std::to_string(ended) +
                  " of " + std::to_string(total) + " members had ended");
  }

  const std::string program = self_program();
  const fs::path err_folder = fs::temp_directory_path();
  std::map<pid_t, Child> children;
  std::vector<std::string> free_devices = options.devices;
  double member_seconds = 0.0;
  int timed = 0;
  bool stop_forwarded = false;
  const StopOnSignal stop_on_signal;

  while (!queue.empty() || !children.empty()) {
    while (!g_stop.load() && !queue.empty() && !free_devices.empty()) {
      const store::SweepMemberRecord& m = *queue.front();
      queue.pop_front();
      store::SweepMember member = store::parse_sweep_member(m.settings_json);
      Child child;
      child.member = m.member;
      child.uid = store::new_uid();
      child.device = free_devices.back();
      free_devices.pop_back();
      child.err_file = err_folder / ("mixlab-sweep-" + child.uid + ".err");
      std::vector<std::string> argv = {program, "train"};
      for (std::string& a : member.train_args()) argv.push_back(std::move(a));
      for (const std::string& a : options.extra_train_args) argv.push_back(a);
      argv.insert(argv.end(), {"--device", child.device, "--db", options.db.string(), "--run-uid",
                               child.uid, "--quiet"});
      store::start_member(store, sweep_id, m.member, child.uid);
      child.started = std::chrono::steady_clock::now();
      child.pid = start_child(argv, child.err_file);
      if (child.pid < 0) {
        store::set_member(store, sweep_id, m.member, MemberState::failed, std::nullopt,
                          std::string("cannot start a process: ") + std::strerror(errno));
        free_devices.push_back(child.device);
        continue;
      }
      reporter.line("[" + std::to_string(ended + 1 + static_cast<int>(children.size())) + "/" +
                    std::to_string(total) + "] " + member.label(axes) + " on " + child.device);
      children.emplace(child.pid, std::move(child));
    }
    if (children.empty()) break;  // stopped with nothing running

    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR && g_stop.load() && !stop_forwarded) {
        // Ctrl+C in a terminal reaches the children too; a SIGTERM to the sweep alone does not.
        for (const auto& [child_pid, c] : children) ::kill(child_pid, SIGINT);
        stop_forwarded = true;
        reporter.line("stopping: the members running now stop and are run again on resume");
      }
      continue;
    }
    const auto it = children.find(pid);
    if (it == children.end()) continue;
    Child child = std::move(it->second);
    children.erase(it);
    free_devices.push_back(child.device);

    const auto run = store::find_run_by_uid(store, child.uid);
    store::MemberOutcome outcome = store::member_outcome(run, {});
    if (!run) {
      // What the process said (its error), or how it ended.
      outcome.message = last_line(child.err_file);
      if (outcome.message.empty()) {
        outcome.message =
            WIFSIGNALED(status)
                ? "the member's process was killed by signal " + std::to_string(WTERMSIG(status))
                : "the member's process ended with status " + std::to_string(WEXITSTATUS(status)) +
                      " without recording a run";
      }
      // Stopped before it recorded anything (a Ctrl+C while it started): it runs again.
      const bool interrupted =
          (WIFEXITED(status) && WEXITSTATUS(status) == kExitStopped) ||
          (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM));
      if (interrupted) outcome.state = MemberState::planned;
    }
    const MemberState state = outcome.state;
    const std::string& message = outcome.message;
    if (state == MemberState::planned && !g_stop.load()) {
      // A member stopped by a Ctrl+C that only it saw: the sweep stops too.
      g_stop.store(true);
    }
    std::error_code ignored;
    fs::remove(child.err_file, ignored);
    store::end_member(store, sweep_id, child.member, outcome);
    if (run) store.add_tags(run->id, {tag});

    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - child.started).count();
    std::string said;
    if (state == MemberState::done) {
      ++ended;
      member_seconds += seconds;
      ++timed;
      said = std::string(store::to_string(run->status)) + ", median " +
             format_fixed(run->summary.median_step_ms, 3) + " ms/step (run " +
             std::to_string(run->id) + ")";
    } else if (state == MemberState::failed) {
      ++ended;
      said = "failed: " + message;
    } else {
      said = "stopped; it runs again on resume";
    }
    const double each = timed > 0 ? member_seconds / timed : NAN;
    const double left = each * static_cast<double>(queue.size() + children.size()) /
                        static_cast<double>(options.devices.size());
    store::SweepMember member = store::parse_sweep_member(
        sweep.members[static_cast<std::size_t>(child.member)].settings_json);
    reporter.line("[" + std::to_string(ended) + "/" + std::to_string(total) + "] " +
                  member.label(axes) + ": " + said +
                  (queue.empty() || g_stop.load() ? "" : minutes_left(left)));
  }

  const bool stopped = g_stop.load() && !queue.empty();
  const store::SweepRecord final_sweep = *store::find_sweep(store, sweep_id);
  const bool unfinished =
      stopped || final_sweep.count(MemberState::planned) + final_sweep.count(MemberState::running) > 0;
  const store::SweepState state =
      unfinished ? store::SweepState::stopped : store::SweepState::finished;
  store::set_sweep_state(
      store, sweep_id, state,
      unfinished ? "stopped; mixlab-cli sweep resume " + std::to_string(sweep_id) + " continues it"
                 : "");
  return state;
}

}  // namespace mixlab::cli::sweep
