// `reprun check`: the CI gate. Trains the same config N times, each in a fresh child process of
// reprun itself (optionally varying threads, accumulation split, or killing and resuming a run),
// diffs every run against run 1, and when runs diverge, replays the pair from the last common
// checkpoint with trace "full" to name the phase, layer and tensor where the difference starts.
#pragma once

#include "reprun/gate/gate.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace reprun {

struct CheckOptions {
  std::string config;
  std::string work_dir;               // empty: a temporary folder (kept only when the check fails)
  int runs = 0;                       // 0: 2, or as many as the --vary lists need
  std::vector<std::string> vary;      // "threads=1,2,4", "accumulation=1,4", "eval_batch_size=1,7", "resume=20"
  std::vector<std::string> sets;      // --set passed to every run
  std::string self_exe;               // the reprun binary to run (default /proc/self/exe)
  std::function<void(const std::string&)> on_note;
  // Set by SIGINT or SIGTERM to check: the training running then is stopped (one SIGTERM to its
  // process group: train checkpoints, records "interrupted" and exits), and run_check throws Error
  // with ExitCode::interrupted.
  const std::atomic<bool>* stop = nullptr;
};

// Runs the check. Throws Error (exit 2) when a run cannot be trained (bad config, crash).
CheckResult run_check(const CheckOptions& opt);

} // namespace reprun
