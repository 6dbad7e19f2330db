// `reprun exec`: the audit for programs reprun did not train (PyTorch, TensorFlow, JAX, plain
// scripts). Runs PROGRAM N times in fresh processes with the determinism environment pinned, keeps
// each run's output, step log, exit status and artifacts in a run directory with the same manifest
// metadata as built-in runs, and diffs runs 2..N against run 1 exactly as `reprun diff` does.
#pragma once

#include "reprun/gate/gate.hpp"

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
  bool record_inputs = true;            // record every file the program's processes open (--no-inputs)
  std::vector<std::string> data_dirs;   // --data-dir DIR: files under it are data, wherever it is
  std::vector<std::string> stat_only_dirs; // --stat-only DIR: its files' sizes and times only, no digest
  const World* world = nullptr;         // the outside world; nullptr = the real machine
  std::function<void(const std::string&)> on_note;
  // A run whose program failed or was killed: a header naming the run and its status, then the
  // last lines of its stderr (of its stdout when stderr is empty). Called even when quiet.
  std::function<void(const std::string&)> on_failure;
};

// The last `lines` lines of a text file (at most its last 64 KiB), without the final newline; ""
// when the file is empty or unreadable.
std::string tail_lines(const std::string& path, size_t lines);

// The default pins: name and value.
const std::vector<std::pair<std::string, std::string>>& default_pins();

// Runs the audit. Throws Error (exit 2) when the program cannot be started, fails or is killed,
// or writes a malformed step log (the valid prefix is kept).
CheckResult run_exec(const ExecOptions& opt);

} // namespace reprun
