// The real World: environment, /proc and /etc files, uname, clock, child commands.
#include "reprun/meta/world.hpp"

#include "meta/cuda_query.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"
#include "reprun/core/time.hpp"

#include <filesystem>
#include <fstream>
#include <gnu/libc-version.h>
#include <sstream>
#include <sys/utsname.h>
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

  std::string now_iso8601() const override { return utc_now_iso8601(); }

  std::optional<std::string> run_command(const std::vector<std::string>& argv,
                                         const std::string& cwd) const override {
    ProcessSpec spec;
    spec.argv = argv;
    spec.cwd = cwd;
    std::string out;
    spec.capture_stdout = &out;
    try {
      if (run_process(spec).exit_code != 0) {
        return std::nullopt;
      }
    } catch (const Error&) { // not installed, or cannot start: an absent fact, not an error
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
