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
  // A process group of its own (setpgid): a terminal's Ctrl-C reaches us, not it (we pass the stop
  // on, once, to the child), `kill`, the time limit and the SIGKILL after the grace go to the whole
  // group, and what is left of the group when the child ends (a launcher's workers, torch's
  // resource tracker) is ended too: SIGTERM after `linger_seconds` (at once after a stop or the
  // time limit), SIGKILL 3 s later. So no process of the group outlives the call (reprun becomes the
  // subreaper of its orphans, and reaps them).
  bool own_process_group = false;
  const std::atomic<bool>* stop = nullptr;                  // once set, the child (not its group) gets
                                                            // stop_signal (our SIGTERM reaches our
                                                            // children this way)
  int stop_signal = SIGTERM;                                // what `stop` sends (mpirun: SIGUSR1, which it
                                                            // forwards at once; its SIGTERM kills in 2 s)
  const std::atomic<bool>* kill = nullptr;                  // once set, the child (its group) gets SIGKILL
  double time_limit_seconds = 0;                            // > 0: past it, the child (its group) is ended:
                                                            // SIGTERM, SIGKILL 3 s later
  std::function<void()> on_time_limit;                      // called once when the limit passes, while the
                                                            // child still runs (to say what it was doing)
  std::function<void(int pid)> on_start;                    // called with the child's pid (its group's id
                                                            // in a group of its own) once it started
  double grace_seconds = -1;                                // after `stop`: SIGKILL (to the group) when the
                                                            // child still runs this long after stop_signal
                                                            // (< 0: never, it stops itself); the time limit
                                                            // and leftovers of a group always get 3 s
  double linger_seconds = 5;                                // own_process_group: how long the group may
                                                            // outlive the child before it is ended
  // With tee_fd: what of the child's stderr reaches the tee, line by line. Called with each line
  // (its '\n' included) and returns the text to write then (it may hold lines back and give them
  // later); called once more with "" at the end, to give back what it still holds. The stderr
  // file gets every byte regardless.
  std::function<std::string(const std::string& line)> tee_stderr_filter;
};

struct ProcessResult {
  int exit_code = 0;    // exit status, or 128 + signal
  int signal = 0;       // the signal that ended it, 0 if it exited
  double wall_seconds = 0.0;
  bool stopped = false;   // `stop` was set while it ran, and stop_signal sent
  bool timed_out = false; // it ran past time_limit_seconds and was ended
  int left_over = 0;      // own_process_group: processes of its group still running when it ended
                          // (ended by us after linger_seconds, or at once after a stop or the limit)
  std::string describe() const; // "exit status 3" / "killed by signal 9 (Killed)"
};

// Full path of an executable: argv0 itself when it contains '/', else looked up in PATH. Throws
// Error "PROGRAM: not found in PATH" or "...: not executable".
std::string resolve_executable(const std::string& argv0);

// Runs to completion. Throws Error when the program cannot be started (exec failed).
ProcessResult run_process(const ProcessSpec& spec);

// The processes of process group `pgid` (from /proc), and the files process `pid` has open (the
// targets of /proc/PID/fd/*); empty when they cannot be read.
std::vector<int> process_group_members(int pgid);
std::vector<std::string> open_files(int pid);

// Sends `sig` to the group of every child run_process is running in a group of its own. Only
// async-signal-safe calls: for a signal handler, so that a second Ctrl-C, which ends reprun at
// once, ends those groups first.
void signal_process_groups(int sig) noexcept;

} // namespace reprun
