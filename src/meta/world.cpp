// The real World: environment, /proc and /etc files, uname, clock, child commands.
#include "reprun/world.hpp"

#include "meta/cuda_query.hpp"
#include "reprun/record.hpp"

#include <array>
#include <cstdio>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <gnu/libc-version.h>
#include <sstream>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace reprun {

namespace {

class RealWorld : public World {
public:
  std::map<std::string, std::string> environment() const override {
    std::map<std::string, std::string> env;
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      auto eq = kv.find('=');
      if (eq != std::string::npos) {
        env[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
    }
    return env;
  }

  std::optional<std::string> read_system_file(const std::string& path) const override {
    std::ifstream in(path);
    if (!in) {
      return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::map<std::string, std::string> uname() const override {
    struct utsname u {};
    ::uname(&u);
    return {{"sysname", u.sysname}, {"release", u.release}, {"machine", u.machine}, {"nodename", u.nodename}};
  }

  std::string libc_version() const override { return std::string("glibc ") + gnu_get_libc_version(); }

  unsigned logical_cores() const override { return std::max(1u, std::thread::hardware_concurrency()); }

  std::string now_iso8601() const override { return reprun::now_iso8601(); }

  std::optional<std::string> run_command(const std::vector<std::string>& argv,
                                         const std::string& cwd) const override {
    int fds[2];
    if (argv.empty() || ::pipe2(fds, O_CLOEXEC) != 0) {
      return std::nullopt;
    }
    pid_t pid = ::fork();
    if (pid < 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return std::nullopt;
    }
    if (pid == 0) {
      ::dup2(fds[1], 1);
      int devnull = ::open("/dev/null", O_RDWR);
      if (devnull >= 0) {
        ::dup2(devnull, 0);
        ::dup2(devnull, 2);
      }
      if (!cwd.empty() && ::chdir(cwd.c_str()) != 0) {
        ::_exit(127);
      }
      std::vector<char*> args;
      for (const auto& a : argv) {
        args.push_back(const_cast<char*>(a.c_str()));
      }
      args.push_back(nullptr);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    std::string out;
    std::array<char, 4096> buf{};
    ssize_t n;
    while ((n = ::read(fds[0], buf.data(), buf.size())) > 0 || (n < 0 && errno == EINTR)) {
      if (n > 0) {
        out.append(buf.data(), static_cast<size_t>(n));
      }
    }
    ::close(fds[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return std::nullopt;
    }
    return out;
  }

  CudaFacts cuda() const override { return query_cuda(); }

  std::string current_directory() const override {
    std::error_code ec;
    return std::filesystem::current_path(ec).string();
  }
};

} // namespace

const World& real_world() {
  static const RealWorld k_world;
  return k_world;
}

} // namespace reprun
