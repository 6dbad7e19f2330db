// `reprun selftest`: the gate proves it can fail. It trains a config (a small built-in one by
// default) in child processes of reprun, injects three faults the gate must catch (a bit flip in
// one weight at one step, a restore that drops the optimizer state, atomic reduction with two
// threads) and checks that the true runs pass. The faults reach the children through the
// trainer's internal selftest variable (train/trainer.hpp) and nothing else; it is not an option.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace reprun {

struct SelftestOptions {
  std::string config;   // empty: the built-in config (selftest_builtin_config)
  std::string work_dir; // an empty folder for the runs; the caller removes it
  std::string self_exe; // the reprun binary to run (default /proc/self/exe)
  std::function<void(const std::string&)> on_note;
};

struct SelftestControl {
  std::string name;          // "bit flip", "broken resume", "atomic reduction", "true runs"
  bool must_fail = true;     // a fault the gate must catch; false for the true runs, which must pass
  bool ok = false;           // caught (a fault) or passed (the true runs)
  std::string line;          // "caught  bit flip at step 7: diff names step 7, update, dense_2.weight"
};

struct SelftestResult {
  std::vector<SelftestControl> controls; // in the order run: bit flip, broken resume, atomic, true runs
  bool all_ok() const;
};

// The built-in config: synthetic data, an MLP with two hidden layers, SGD with momentum.
const char* selftest_builtin_config();

// Runs every control. Throws Error (exit 2) for bad input: an unreadable or invalid config, one
// the controls cannot use (no seed, an optimizer without state, batches too small for atomic
// mode to reorder), or a run that cannot be trained.
SelftestResult run_selftest(const SelftestOptions& opt);

} // namespace reprun
