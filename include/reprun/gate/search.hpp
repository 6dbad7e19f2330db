// `reprun search`: a hyperparameter search (the config's "search" section, train/search_space.hpp),
// each trial an ordinary run directory trained by a child `reprun train`, at most --jobs at once.
// Nothing the search decides depends on timing: trial k's values and seed are pure functions of
// (experiment seed, k) (tpe: and of the results of trials 0..k-batch-1), asha promotes at rung
// barriers in trial order, so the trials, the promotions and the winner are the same for any
// number of jobs, and a killed search continued with --resume ends with the same leaderboard.
#pragma once

#include "reprun/audit/search.hpp"

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace reprun {

struct SearchProgress {
  long done = 0;      // trainings finished (asha: rung by rung)
  long total = 0;     // trainings planned so far
  long trial = 0;     // the trial that just finished
  std::string line;   // "trial 7: val_loss 0.412 (best 0.398, trial 3)"
};

struct SearchOptions {
  std::string config;             // the config file; may be empty with resume_dir
  std::vector<std::string> sets;  // --set, applied to the whole file (search keys too)
  std::string out_dir;            // -o
  std::string resume_dir;         // --resume: continue this search
  int jobs = 1;                   // trials trained at once
  std::string self_exe;           // the reprun binary (default /proc/self/exe)
  std::vector<std::string> command_line;
  std::function<void(const SearchProgress&)> on_progress;
  std::function<void(const std::string&)> on_note;
  const std::atomic<bool>* stop = nullptr; // SIGINT/SIGTERM: start no more trials
};

struct SearchOutcome {
  SearchRecord record;        // read back from the directory when done
  bool interrupted = false;   // stopped by a signal; --resume continues it
  double wall_seconds = 0.0;
};

// Runs (or continues) a search. Throws Error (exit 2) on bad input, and when a trial's training
// fails other than by a non-finite loss (the message names the trial and its log).
SearchOutcome run_search(const SearchOptions& opt);

} // namespace reprun
