// run_process: fork + execve with pipes for stdout and stderr, copied to files by the parent; an
// exec failure comes back through a close-on-exec pipe, so "not found" is an error, not exit 127.
#include "reprun/core/process.hpp"

#include "reprun/core/error.hpp"

#include <cerrno>
#include <chrono>
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

// Copies the child's stdout and stderr pipes to their files (and the tee, and the capture) until
// both close.
void pump_output(const ProcessSpec& spec, pid_t pid, int pipe_out, int pipe_err, int out_fd, int err_fd) {
  struct pollfd fds[2] = {{pipe_out, POLLIN, 0}, {pipe_err, POLLIN, 0}};
  int open_count = 2;
  char buf[65536];
  bool stop_sent = false;
  std::string err_line; // stderr not yet ended by a newline (tee_stderr_filter)
  while (open_count > 0) {
    if (spec.stop && !stop_sent && spec.stop->load()) {
      ::kill(pid, spec.stop_signal);
      stop_sent = true;
    }
    int r = ::poll(fds, 2, spec.stop && !stop_sent ? 200 : -1);
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
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    throw Error(std::string("cannot start a process: ") + std::strerror(errno));
  }
  if (pid == 0) {
    exec_child(spec, exe, args.data(), spec.env ? envp.data() : nullptr, p_out[1], p_err[1], p_exec[1], parent);
  }
  ::close(p_out[1]);
  ::close(p_err[1]);
  ::close(p_exec[1]);
  int exec_errno = 0;
  ssize_t got = ::read(p_exec[0], &exec_errno, sizeof(exec_errno));
  ::close(p_exec[0]);
  pump_output(spec, pid, p_out[0], p_err[0], out_fd, err_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
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
  ProcessResult r;
  r.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  } else {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

} // namespace reprun
