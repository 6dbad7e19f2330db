// launch_ranks: see include/reprun/train/launch.hpp. mpirun is Open MPI's launcher; reprun adds no
// transport of its own. Its stderr is kept (and shown) so that a rank's death can be named.
#include "reprun/train/launch.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;

namespace {

// mpirun's report of a rank that ended: "mpirun noticed that process rank 1 with PID 4242 on node
// h exited on signal 9 (Killed)." or "... exited with status 3" style lines.
std::string dead_rank_in(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  static const std::regex k_signal(R"(process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+) \(([^)]*)\))");
  static const std::regex k_rank(R"(process rank (\d+))");
  std::string found;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, k_signal)) {
      return "rank " + m[1].str() + " (killed by signal " + m[2].str() + " (" + m[3].str() + "))";
    }
    if (found.empty() && std::regex_search(line, m, k_rank)) {
      found = "rank " + m[1].str();
    }
  }
  return found;
}

} // namespace

RankLaunch launch_ranks(int ranks, const std::vector<std::string>& args, const std::atomic<bool>* stop) {
  ProcessSpec spec;
  spec.stop = stop;
  spec.die_with_parent = true;
  // Out of the terminal's process group: Ctrl-C reaches this process, which passes one SIGTERM on
  // (`stop`). mpirun given the terminal's SIGINT as well takes the second signal as "abort now" and
  // kills the ranks mid-step: no checkpoint, the status left "running", exit 1.
  spec.own_process_group = true;
  spec.argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0) {
    spec.argv.push_back("--allow-run-as-root"); // containers and CI run as root
  }
  spec.argv.push_back(fs::read_symlink("/proc/self/exe").string());
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  char tmpl[] = "/tmp/reprun-mpirun-XXXXXX";
  const int fd = ::mkstemp(tmpl);
  if (fd < 0) {
    throw Error("mpirun", "cannot create a temporary file for its output");
  }
  ::close(fd);
  const std::string log = tmpl;
  spec.stderr_path = log;
  spec.tee_fd = 2;
  spec.tee_stdout_fd = 1;
  RankLaunch r;
  try {
    r.exit_code = run_process(spec).exit_code;
  } catch (const Error& e) {
    std::remove(log.c_str());
    throw Error("--ranks", std::string(e.what()) + " (install Open MPI: apt-get install openmpi-bin)");
  }
  if (r.exit_code != 0) {
    r.dead_rank = dead_rank_in(log);
  }
  std::remove(log.c_str());
  return r;
}

} // namespace reprun
