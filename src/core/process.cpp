// run_process: fork + execve with pipes for stdout and stderr, copied to files by the parent; an
// exec failure comes back through a close-on-exec pipe, so "not found" is an error, not exit 127.
#include "reprun/core/process.hpp"

#include "reprun/core/error.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace reprun {

std::string ProcessResult::describe() const {
  if (signal != 0) {
    return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  }
  return fmt::format("exit status {}", exit_code);
}

std::string resolve_executable(const std::string& argv0) {
  auto check = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (argv0.empty()) {
    throw Error("no program given");
  }
  if (argv0.find('/') != std::string::npos) {
    struct stat st {};
    if (::stat(argv0.c_str(), &st) != 0) {
      throw Error(argv0, "no such file");
    }
    if (!check(argv0)) {
      throw Error(argv0, "not executable (a regular file with execute permission is needed)");
    }
    return argv0;
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t start = 0;
  for (;;) {
    size_t colon = p.find(':', start);
    std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    std::string cand = (dir.empty() ? "." : dir) + "/" + argv0;
    if (check(cand)) {
      return cand;
    }
    if (colon == std::string::npos) {
      break;
    }
    start = colon + 1;
  }
  throw Error(argv0, "not found in PATH");
}

namespace {
int open_out(const std::string& path, bool append) {
  if (path.empty()) {
    return -1;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0666);
  if (fd < 0) {
    throw Error(path, std::string("cannot create: ") + std::strerror(errno));
  }
  return fd;
}

void write_all(int fd, const char* p, size_t n) {
  while (fd >= 0 && n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
}
// In the forked child: stdin from /dev/null, output into the pipes, default signals, then exec.
// Only async-signal-safe calls; an exec failure is reported to the parent through `exec_fd`.
[[noreturn]] void exec_child(const ProcessSpec& spec, const std::string& exe, char* const* args, char* const* envp,
                             int out_fd, int err_fd, int exec_fd, pid_t parent) {
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) {
    ::dup2(devnull, 0);
  }
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  ::signal(SIGINT, SIG_DFL);
  ::signal(SIGTERM, SIG_DFL);
  if (spec.own_process_group) {
    ::setpgid(0, 0);
  }
  if (spec.die_with_parent) {
    // Ends with the thread that forked us (run_process waits in it until we exit); a parent that
    // died before the call leaves us with another parent, and then we end at once.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) {
      ::_exit(137);
    }
  }
  if (spec.cwd.empty() || ::chdir(spec.cwd.c_str()) == 0) {
    ::execve(exe.c_str(), args, envp ? envp : environ);
  }
  int e = errno;
  ssize_t w = ::write(exec_fd, &e, sizeof(e));
  (void)w;
  ::_exit(127);
}

// The children run_process is running in a group of their own, for signal_process_groups (a
// signal handler): a slot holds the group's id, 0 when free.
constexpr int k_group_slots = 64;
std::atomic<int> g_groups[k_group_slots];

struct GroupSlot {
  int index = -1;
  explicit GroupSlot(int pgid) {
    for (int i = 0; i < k_group_slots; ++i) {
      int free = 0;
      if (g_groups[i].compare_exchange_strong(free, pgid)) {
        index = i;
        return;
      }
    }
  }
  ~GroupSlot() {
    if (index >= 0) {
      g_groups[index].store(0);
    }
  }
  GroupSlot(const GroupSlot&) = delete;
  GroupSlot& operator=(const GroupSlot&) = delete;
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// The child and, in a group of its own, the rest of its group: signals, reaping, and the ending of
// the group once the child is gone. Every process it started is reaped before it is destroyed.
class Child {
public:
  Child(pid_t pid, bool group) : m_pid(pid), m_group(group) {}
  ~Child() {
    // An exception on the way out (a write error in the tee): nothing of the child may outlive us.
    if (!m_reaped || (m_group && group_alive())) {
      signal(SIGKILL);
      while (!m_reaped && ::waitpid(m_pid, &m_status, 0) < 0 && errno == EINTR) {
      }
      m_reaped = true;
      reap_group();
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // To the child alone; never once we have reaped it (its pid may be reused).
  void signal_child(int sig) const {
    if (!m_reaped) {
      ::kill(m_pid, sig);
    }
  }
  // To the child's whole group (the child alone when it has none of its own).
  void signal(int sig) const {
    if (m_group) {
      ::kill(-m_pid, sig); // the group's id outlives its leader while a member lives, and is not reused
    } else {
      signal_child(sig);
    }
  }
  // The child's own exit, without waiting; true once it is reaped.
  bool poll_exit() {
    if (!m_reaped) {
      const pid_t p = ::waitpid(m_pid, &m_status, WNOHANG);
      if (p == m_pid || (p < 0 && errno == ECHILD)) { // ECHILD: reaped already, never to be seen again
        m_reaped = true;
        m_reaped_at = Clock::now();
      }
    }
    return m_reaped;
  }
  void wait_exit() {
    while (!m_reaped) {
      if (::waitpid(m_pid, &m_status, 0) == m_pid) {
        m_reaped = true;
        m_reaped_at = Clock::now();
      } else if (errno != EINTR) {
        m_reaped = true;
      }
    }
  }
  // A member of the group is still there (the group is empty once every member is reaped).
  bool group_alive() const { return m_group && ::kill(-m_pid, 0) == 0; }
  // Reaps the members of the group that became our children (we are their subreaper). The child
  // leads the group: when it is among them, its status is kept (poll_exit would never see it again).
  void reap_group() {
    if (!m_group) {
      return;
    }
    int st = 0;
    for (pid_t p; (p = ::waitpid(-m_pid, &st, WNOHANG)) > 0;) {
      if (p == m_pid && !m_reaped) {
        m_status = st;
        m_reaped = true;
        m_reaped_at = Clock::now();
      }
    }
  }
  bool reaped() const { return m_reaped; }
  int pid() const { return m_pid; }
  Clock::time_point reaped_at() const { return m_reaped_at; }
  int status() const { return m_status; }

private:
  pid_t m_pid;
  bool m_group;
  bool m_reaped = false;
  int m_status = 0;
  Clock::time_point m_reaped_at;
};

// Copies the child's stdout and stderr pipes to their files (and the tee, and the capture) until
// both close and the child (in a group of its own: the whole group) is gone, sending the signals
// that `stop`, `kill` and the time limit ask for on the way.
void pump_output(const ProcessSpec& spec, Child& child, int pipe_out, int pipe_err, int out_fd, int err_fd,
                 ProcessResult& result) {
  constexpr double k_end_grace = 3.0; // SIGTERM to SIGKILL, for the time limit and a group's leftovers
  struct pollfd fds[2] = {{pipe_out, POLLIN, 0}, {pipe_err, POLLIN, 0}};
  int open_count = 2;
  char buf[65536];
  bool stop_sent = false, kill_sent = false, killed = false;
  std::optional<Clock::time_point> ending;   // when SIGTERM went to end the child or its group
  double grace = k_end_grace;                // how long after `ending` SIGKILL follows
  std::optional<Clock::time_point> all_gone; // the child and its group are gone (pipes may still be open)
  const auto start = Clock::now();
  std::string err_line; // stderr not yet ended by a newline (tee_stderr_filter)
  const bool timers = spec.stop || spec.kill || spec.time_limit_seconds > 0 || spec.own_process_group;
  for (;;) {
    if (spec.stop && !stop_sent && spec.stop->load()) {
      // To the child alone, which may pass it on as it knows best (mpirun forwards SIGUSR1 to its
      // ranks once; torchrun's agent stops its workers); what is left of its group once it has gone
      // is ended at once, and after the grace all of it is killed.
      child.signal_child(spec.stop_signal);
      stop_sent = true;
      result.stopped = true;
      if (spec.grace_seconds >= 0 && !ending) {
        ending = Clock::now();
        grace = spec.grace_seconds;
      }
    }
    if (spec.kill && !kill_sent && spec.kill->load()) {
      child.signal(SIGKILL);
      kill_sent = true;
    }
    if (spec.time_limit_seconds > 0 && !result.timed_out && !child.reaped() &&
        seconds_since(start) >= spec.time_limit_seconds) {
      result.timed_out = true;
      if (spec.on_time_limit) {
        spec.on_time_limit();
      }
      child.signal(SIGTERM);
      ending = Clock::now();
      grace = k_end_grace;
    }
    const bool was_reaped = child.reaped();
    if (child.poll_exit() && !was_reaped && spec.own_process_group && child.group_alive()) {
      // The child is gone but not all of its group: counted now, ended after the linger (at once
      // when the child was ended by a stop or the time limit).
      result.left_over = static_cast<int>(process_group_members(child.pid()).size());
    }
    child.reap_group();
    if (child.reaped() && spec.own_process_group && !ending && child.group_alive() &&
        (stop_sent || result.timed_out || seconds_since(child.reaped_at()) >= spec.linger_seconds)) {
      child.signal(SIGTERM);
      ending = Clock::now();
      grace = k_end_grace;
    }
    if (ending && !killed && seconds_since(*ending) >= grace) {
      child.signal(SIGKILL);
      killed = true;
    }
    const bool gone = child.reaped() && !child.group_alive();
    if (gone && !all_gone) {
      all_gone = Clock::now();
    }
    if (gone && open_count == 0) {
      break;
    }
    // In a group of its own, a process outside the group (one that left it with setsid) may hold
    // the pipes open: once the group is gone, its output is read for a second more, not waited for.
    if (gone && spec.own_process_group && seconds_since(*all_gone) >= 1.0) {
      break;
    }
    const int timeout = open_count == 0 || timers ? 100 : -1;
    if (open_count == 0) {
      if (!timers) {
        child.wait_exit(); // as before: the pipes closed, the child is exiting
        continue;
      }
      ::poll(nullptr, 0, timeout);
      continue;
    }
    int r = ::poll(fds, 2, timeout);
    if (r < 0) {
      if (errno == EINTR) {
        continue;
      }
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
        continue;
      }
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n > 0) {
        write_all(i == 0 ? out_fd : err_fd, buf, static_cast<size_t>(n));
        if (i == 0 && spec.capture_stdout) {
          spec.capture_stdout->append(buf, static_cast<size_t>(n));
        }
        if (i == 1 && spec.tee_stderr_filter) {
          err_line.append(buf, static_cast<size_t>(n));
          for (size_t nl; (nl = err_line.find('\n')) != std::string::npos;) {
            const std::string kept = spec.tee_stderr_filter(err_line.substr(0, nl + 1));
            write_all(spec.tee_fd, kept.data(), kept.size());
            err_line.erase(0, nl + 1);
          }
        } else {
          write_all(i == 0 && spec.tee_stdout_fd >= 0 ? spec.tee_stdout_fd : spec.tee_fd, buf,
                    static_cast<size_t>(n));
        }
      } else if (n == 0 || (n < 0 && errno != EINTR)) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) {
      ::close(f.fd);
    }
  }
  child.wait_exit();
  if (spec.tee_stderr_filter) {
    std::string rest = err_line.empty() ? "" : spec.tee_stderr_filter(err_line);
    rest += spec.tee_stderr_filter("");
    write_all(spec.tee_fd, rest.data(), rest.size());
  }
}

} // namespace

ProcessResult run_process(const ProcessSpec& spec) {
  const std::string exe = resolve_executable(spec.argv.at(0));
  int out_fd = open_out(spec.stdout_path, spec.append);
  int err_fd = spec.stderr_path == spec.stdout_path ? out_fd : open_out(spec.stderr_path, spec.append);
  int p_out[2], p_err[2], p_exec[2];
  if (::pipe2(p_out, O_CLOEXEC) != 0 || ::pipe2(p_err, O_CLOEXEC) != 0 || ::pipe2(p_exec, O_CLOEXEC) != 0) {
    throw Error(std::string("cannot create pipes: ") + std::strerror(errno));
  }
  std::vector<std::string> env_strings;
  std::vector<char*> envp;
  if (spec.env) {
    for (const auto& [k, v] : *spec.env) {
      env_strings.push_back(k + "=" + v);
    }
    for (auto& s : env_strings) {
      envp.push_back(s.data());
    }
    envp.push_back(nullptr);
  }
  std::vector<char*> args;
  for (const auto& a : spec.argv) {
    args.push_back(const_cast<char*>(a.c_str()));
  }
  args.push_back(nullptr);
  if (spec.own_process_group) {
    // The group's processes whose parent dies (a launcher killed first) become our children, not
    // init's: we reap them, and the group's id stays valid until the last of them is reaped.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(std::string("cannot start a process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    exec_child(spec, exe, args.data(), spec.env ? envp.data() : nullptr, p_out[1], p_err[1], p_exec[1], parent);
  }
  if (spec.own_process_group) {
    ::setpgid(pid, pid); // the child does the same: whichever runs first, a signal finds the group
  }
  std::optional<GroupSlot> slot;
  if (spec.own_process_group) {
    slot.emplace(pid);
  }
  if (spec.on_start) {
    spec.on_start(pid);
  }
  ::close(p_out[1]);
  ::close(p_err[1]);
  ::close(p_exec[1]);
  int exec_errno = 0;
  ssize_t got = ::read(p_exec[0], &exec_errno, sizeof(exec_errno));
  ::close(p_exec[0]);
  ProcessResult r;
  {
    Child child(pid, spec.own_process_group);
    pump_output(spec, child, p_out[0], p_err[0], out_fd, err_fd, r);
    const int status = child.status();
    if (WIFSIGNALED(status)) {
      r.signal = WTERMSIG(status);
      r.exit_code = 128 + r.signal;
    } else {
      r.exit_code = WEXITSTATUS(status);
    }
  }
  if (out_fd >= 0) {
    ::close(out_fd);
  }
  if (err_fd >= 0 && err_fd != out_fd) {
    ::close(err_fd);
  }
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    throw Error(spec.argv[0], std::string("cannot execute: ") + std::strerror(exec_errno));
  }
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::vector<int> process_group_members(int pgid) {
  std::vector<int> out;
  DIR* d = ::opendir("/proc");
  if (!d) {
    return out;
  }
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') {
      continue;
    }
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so from the last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) {
      continue;
    }
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &pgrp) == 3 && pgrp == pgid &&
        state != 'Z') {
      out.push_back(static_cast<int>(pid));
    }
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> open_files(int pid) {
  std::vector<std::string> out;
  std::error_code ec;
  for (std::filesystem::directory_iterator it(fmt::format("/proc/{}/fd", pid), ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto target = std::filesystem::read_symlink(it->path(), ec);
    if (!ec) {
      out.push_back(target.string());
    }
    ec.clear();
  }
  return out;
}

void signal_process_groups(int sig) noexcept {
  for (auto& g : g_groups) {
    const int pgid = g.load();
    if (pgid > 0) {
      ::kill(-pgid, sig);
    }
  }
}

} // namespace reprun
