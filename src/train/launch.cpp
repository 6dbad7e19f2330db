// launch_ranks: see include/reprun/train/launch.hpp. mpirun is Open MPI's launcher; reprun adds no
// transport of its own. Its stderr is kept (and shown) so that a rank's death can be named.
#include "reprun/train/launch.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <utility>
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

// What of mpirun's stderr reaches the user's terminal: everything but its own notices about how
// the job ended, which follow every stop and every failure of a rank and only repeat, in mpirun's
// words, what reprun says itself ("Forwarding signal 10 to job"; the boxed "Primary job terminated
// normally, but 1 process returned a non-zero exit code" and "mpirun detected that one or more
// processes exited with non-zero status"). Every other box, such as the one naming a rank killed
// by a signal, is shown whole. The log file keeps every line.
std::function<std::string(const std::string&)> mpirun_notice_filter() {
  struct State {
    std::string held; // a box being read, from its opening line of dashes
  };
  auto st = std::make_shared<State>();
  return [st](const std::string& line) -> std::string {
    static const std::regex k_rule(R"(^-{20,}\s*$)");
    if (line.empty()) { // the end: a box left open is shown as it is
      return std::exchange(st->held, "");
    }
    if (st->held.empty()) {
      if (line.rfind("mpirun: Forwarding signal ", 0) == 0) {
        return "";
      }
      if (std::regex_match(line, k_rule)) {
        st->held = line;
        return "";
      }
      return line;
    }
    st->held += line;
    if (!std::regex_match(line, k_rule) && st->held.size() < 16384) {
      return "";
    }
    std::string box = std::exchange(st->held, "");
    const bool notice = box.find("Primary job  terminated normally") != std::string::npos ||
                        box.find("Primary job terminated normally") != std::string::npos ||
                        box.find("exited with non-zero status, thus causing") != std::string::npos;
    return notice ? "" : box;
  };
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
  // The stop goes to mpirun as SIGUSR1, which it forwards to every rank at once and which a rank
  // takes as a stop request (as SIGTERM). mpirun takes a SIGTERM as "abort the job": the ranks get
  // it a second later and SIGKILL a second after that, so a rank whose step and checkpoint took
  // longer was killed mid-write, and a run shorter than that second finished instead of stopping.
  spec.stop_signal = SIGUSR1;
  spec.argv = {"mpirun", "-np", std::to_string(ranks), "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0) {
    spec.argv.push_back("--allow-run-as-root"); // containers and CI run as root
  }
  spec.argv.push_back(fs::read_symlink("/proc/self/exe").string());
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  // mpirun's stderr, read afterwards to name a rank that died: in $TMPDIR (else /tmp), removed below.
  std::error_code ec;
  const fs::path tmp_dir = fs::temp_directory_path(ec);
  std::string tmpl = ((ec ? fs::path("/tmp") : tmp_dir) / "reprun-mpirun-XXXXXX").string();
  const int fd = ::mkstemp(tmpl.data());
  if (fd < 0) {
    throw Error("mpirun", "cannot create a temporary file for its output in " + tmpl.substr(0, tmpl.rfind('/')) +
                              " (set TMPDIR to a writable folder)");
  }
  ::close(fd);
  const std::string log = tmpl;
  spec.stderr_path = log;
  spec.tee_fd = 2;
  spec.tee_stderr_filter = mpirun_notice_filter();
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
