// Child processes without a shell: argv as given, an explicit environment, stdin closed, stdout
// and stderr captured to files (and optionally copied to one of our descriptors as they arrive).
#pragma once

#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct ProcessSpec {
  std::vector<std::string> argv;                            // argv[0] is a path or a name looked up in PATH
  std::optional<std::map<std::string, std::string>> env;    // nullopt: inherit ours
  std::string stdout_path;                                  // "" = discard
  std::string stderr_path;                                  // "" = discard; may equal stdout_path
  int tee_fd = -1;                                          // also copy both streams here (e.g. 2)
  int tee_stdout_fd = -1;                                   // with tee_fd: stdout here instead (e.g. 1)
  bool append = false;                                      // append to the output files
  std::string* capture_stdout = nullptr;                    // also collect stdout here
  std::string cwd;                                          // "" = ours
  bool die_with_parent = false;                             // SIGKILL the child when we die (PR_SET_PDEATHSIG)
  bool own_process_group = false;                           // setpgid(0, 0): a terminal's Ctrl-C reaches us,
                                                            // not it (we pass the stop on, once)
  const std::atomic<bool>* stop = nullptr;                  // once set, the child gets stop_signal (our
                                                            // SIGTERM reaches our children this way)
  // With tee_fd: what of the child's stderr reaches the tee, line by line. Called with each line
  // (its '\n' included) and returns the text to write then (it may hold lines back and give them
  // later); called once more with "" at the end, to give back what it still holds. The stderr
  // file gets every byte regardless.
  std::function<std::string(const std::string& line)> tee_stderr_filter;
  int stop_signal = SIGTERM;                                // what `stop` sends (mpirun: SIGUSR1, which it
                                                            // forwards at once; its SIGTERM kills in 2 s)
};

struct ProcessResult {
  int exit_code = 0;    // exit status, or 128 + signal
  int signal = 0;       // the signal that ended it, 0 if it exited
  double wall_seconds = 0.0;
  std::string describe() const; // "exit status 3" / "killed by signal 9 (Killed)"
};

// Full path of an executable: argv0 itself when it contains '/', else looked up in PATH. Throws
// Error "PROGRAM: not found in PATH" or "...: not executable".
std::string resolve_executable(const std::string& argv0);

// Runs to completion. Throws Error when the program cannot be started (exec failed).
ProcessResult run_process(const ProcessSpec& spec);

} // namespace reprun
