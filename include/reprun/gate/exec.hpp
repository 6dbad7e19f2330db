// `reprun exec`: the audit for programs reprun did not train (PyTorch, TensorFlow, JAX, plain
// scripts). Runs PROGRAM N times in fresh processes with the determinism environment pinned, keeps
// each run's output, step log, exit status and artifacts in a run directory with the same manifest
// metadata as built-in runs, and diffs runs 2..N against run 1 exactly as `reprun diff` does.
#pragma once

#include "reprun/gate/gate.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace reprun {

class World;

struct ExecOptions {
  std::vector<std::string> argv;        // PROGRAM ARGS...
  std::string work_dir;                 // run-1..run-N go here
  int runs = 0;                         // 0: 2, or as many as --vary needs
  bool pin = true;                      // apply the default pins
  std::vector<std::string> pins;        // --pin NAME=VALUE
  std::vector<std::string> vary;        // --vary env:NAME=V1,V2, --vary resume=N1,N2
  std::vector<std::string> resume_args; // --resume-arg ARG: added to a resumed process's arguments
  std::vector<std::string> artifacts;   // --artifact PATH (relative to the current directory)
  std::string loss_regex;               // --loss-regex
  std::vector<std::string> env_allow;   // --env-allow
  std::vector<std::string> ignore_meta; // --ignore-meta KEY: manifest keys (and their sub-keys) not counted
  bool quiet = false;                   // do not show the program's output
  bool capture = true;                  // Python programs: reprun_capture on PYTHONPATH (--no-capture)
  bool localize = true;                 // replay differing runs with an op trace (--no-localize)
  long trace_steps = 0;                 // --trace-steps N: each run keeps the op trace of its first N optimizer
                                        // steps (ops.jsonl) and runs on untraced; reprun diff localizes with it
  bool record_inputs = true;            // record every file the program's processes open (--no-inputs)
  std::vector<std::string> data_dirs;   // --data-dir DIR: files under it are data, wherever it is
  std::vector<std::string> stat_only_dirs; // --stat-only DIR: its files' sizes and times only, no digest
  // --resume-deadline, seconds: --vary resume=N on a data-parallel program kills the job this long
  // after its first rank stopped after step N, even when other ranks have not stopped.
  double resume_deadline = 180;
  double time_limit = 0;                // --time-limit, seconds: a process of a run that runs longer is ended
                                        // with its whole process group (0: none)
  const World* world = nullptr;         // the outside world; nullptr = the real machine
  // Set by SIGINT or SIGTERM to reprun: the running program is ended with its whole process group,
  // its run recorded as interrupted, and run_exec throws Error with ExitCode::interrupted.
  const std::atomic<bool>* stop = nullptr;
  std::function<void(const std::string&)> on_note;
  // A run whose program failed or was killed: a header naming the run and its status, then the
  // last lines of its stderr (of its stdout when stderr is empty). Called even when quiet.
  std::function<void(const std::string&)> on_failure;
};

// The last `lines` lines of a text file (at most its last 64 KiB), without the final newline; ""
// when the file is empty or unreadable.
std::string tail_lines(const std::string& path, size_t lines);

// --time-limit, --resume-deadline: "90" or "90s" (seconds), "20m", "2h"; throws Error naming the
// option otherwise.
double parse_time_limit(const std::string& text, const std::string& option = "--time-limit");

// The default pins: name and value.
const std::vector<std::pair<std::string, std::string>>& default_pins();

// Runs the audit. Every process of the program runs in a process group of its own, ended whole
// when the program ends, is stopped or passes the time limit: none outlives the call. Throws Error
// (exit 2) when the program cannot be started or writes a malformed step log (the valid prefix is
// kept), and with ExitCode::interrupted when `stop` was set. A run whose program fails, is killed or
// passes the time limit ends the runs: the result then compares what ran up to the failure and
// carries it in `failure` (exit 2).
CheckResult run_exec(const ExecOptions& opt);

} // namespace reprun
