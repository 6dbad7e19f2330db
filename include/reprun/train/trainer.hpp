// `reprun train` as a library call: config -> data -> model -> training loop -> run record.
// The CLI only parses flags and prints; tests call run_training() directly.
#pragma once

#include "reprun/core/error.hpp"
#include "reprun/train/settings.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

class World;

struct Progress {
  long step = 0;
  long total = 0;
  long epoch = 0;
  double loss = 0.0;
  double elapsed_seconds = 0.0;
  double steps_per_second = 0.0;
  bool eval = false; // an evaluation just finished
  double val_loss = 0.0;
  double val_accuracy = 0.0;
};

struct TrainOptions {
  std::string config_path;             // the config file; may be empty with resume_dir
  std::vector<std::string> overrides;  // --set KEY=VALUE (with resume_dir: execution settings only)
  std::string out_dir;                 // -o; default runs/<config name>-<time>. With resume_dir: a
                                       // new run that starts as a copy of it (a fork)
  std::string resume_dir;              // --resume: continue this run (or, with out_dir, fork it)
  long from_step = -1;                 // --from-step: fork from this checkpoint (-1: the newest)
  int threads = 0;                     // --threads; 0: keep the config's
  int ranks = 0;                       // --ranks: run under `mpirun -np` on this machine; 0: keep
                                       // the config's. Under an MPI launcher its world size counts
  std::string device;                  // --device: cpu or cuda; "": keep the config's
  std::vector<std::string> command_line;
  long kill_after_step = 0;            // testing aid: SIGKILL ourselves after logging this step
  bool kill_after_save = false;        // testing aid: ... and after writing its checkpoint, when the
                                       // step has one (check --vary resume: the kill never lands
                                       // between a step's record and its checkpoint)
  int kill_rank = -1;                  // testing aid: ... only on this MPI rank (-1: every rank)
  std::vector<std::string> env_allow;  // --env-allow: more environment variables to record
  std::string search_trial;            // `reprun search` trains a trial: its facts (a JSON object) go to
                                       // the new run's manifest as "search"
  const World* world = nullptr;        // the outside world; nullptr = the real machine
  std::function<void(const Progress&)> on_progress;
  std::function<void(const std::string&)> on_note; // one-line notes (run directory, resume point)
  const std::atomic<bool>* stop = nullptr;           // set by SIGINT/SIGTERM
};

// The internal environment variable through which `reprun selftest` injects faults into the runs
// it trains (trainer.cpp reads it, in one place); not a documented option. A faulted run says so
// in its manifest ("selftest_faults").
inline constexpr const char* k_selftest_fault_variable = "REPRUN_SELFTEST_FAULT";

struct TrainResult {
  ExitCode code = ExitCode::ok;
  std::string status; // complete | interrupted | failed: <reason>
  std::string run_dir;
  long steps = 0;
  double train_loss = 0.0;
  bool has_train_loss = false; // a step's loss is known (none before the first step)
  double val_loss = 0.0;
  double val_accuracy = 0.0;
  bool has_val = false;
  double wall_seconds = 0.0;
  double steps_per_second = 0.0;
  // The loop's wall time in the matrix products, where the backend times them (the CPU backend).
  std::optional<double> gemm_seconds;
  bool already_complete = false; // --resume of a complete run: nothing trained, metrics from its summary
  bool launched = false;         // --ranks: the ranks under mpirun trained and printed; metrics from the summary
  bool other_rank = false;       // a rank other than 0 of a run over several: rank 0 reports, this one keeps quiet
};

// A run, top to bottom: prepare (config, data, model), resume-or-start (run directory, state),
// the step loop, finish (summary). Throws Error (exit 2) on bad input before anything is written.
TrainResult run_training(const TrainOptions& opt);

} // namespace reprun
