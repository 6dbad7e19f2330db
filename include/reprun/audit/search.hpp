// A search directory read back (record/search_dir.hpp): every trial's values, status and result,
// the ranking, and the comparison of two searches (`reprun diff SEARCH_A SEARCH_B`): the first
// trial whose values or results differ, then that trial's run diff.
#pragma once

#include "reprun/audit/diff.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace reprun {

class RunDir;

struct TrialEntry {
  long k = 0;
  std::string name;      // "trial-0007": its run directory inside the search directory
  bool exists = false;   // the run directory holds a manifest
  uint64_t seed = 0;
  std::string sampler;   // random | grid | tpe | tpe-startup
  std::vector<std::pair<std::string, std::string>> values; // space key, value as JSON text
  std::string status;    // the run's status (complete, failed: ...), or "not started"
  long epochs = 0;       // training.epochs of the run (0 when it is given in steps)
  long steps = 0;        // the last step reached
  int rung = -1;         // asha: the index of the last rung reached
  std::optional<double> metric; // the search's metric at the end; nullopt: none (failed, non-finite)
  std::optional<double> val_loss, val_accuracy, train_loss;
  std::string steps_xxh3; // the integrity digest of its steps.jsonl ("" when none recorded)
  std::vector<std::pair<long, double>> curve; // the best trials only: (step, metric) of each evaluation
};

struct SearchRecord {
  std::string dir;
  std::string method, metric;
  bool maximize = false;
  long trial_count = 0;           // search.trials
  uint64_t experiment_seed = 0;
  std::vector<long> rungs;         // asha
  std::vector<std::string> keys;   // the space keys, in order
  std::string spec_json;           // the resolved search section, compact JSON
  std::string base_json;           // the base config, compact JSON
  std::string config_path;         // the config file as given
  std::vector<TrialEntry> trials;  // by index
  std::vector<long> ranking;       // trial indices, best first
  bool complete = false;           // every trial reached its end (leaderboard written)
};

// How many of the best trials read_search gives a learning curve.
inline constexpr size_t k_curve_trials = 5;

// Reads a search directory. Throws Error (exit 2) naming the file when it is not one or is damaged.
SearchRecord read_search(const std::string& dir);

// The trial ranking: finite metric first (asha: the higher rung first), best by the direction,
// ties by the lower trial index; never by timing.
std::vector<long> rank_trials(const SearchRecord& s);

// The metric ("val_loss" or "val_accuracy") of a run's evaluation at `step` (evals.jsonl), nullopt
// when there is none or it is not finite.
std::optional<double> eval_metric_at(const RunDir& run, long step, const std::string& metric);
// True when evals.jsonl holds a complete record of `step`.
bool has_eval_at(const RunDir& run, long step);

struct SearchDiff {
  bool identical = false;
  std::string verdict;
  std::string a, b;                     // the directories as given
  std::vector<std::string> differences; // of the searches themselves: method, space, seed, config
  long trial = -1;                      // the first trial whose values or results differ
  std::vector<std::string> trial_differences; // "optimizer.lr: 0.01 vs 0.02", "val_loss: 0.51 vs 0.52"
  std::optional<DiffResult> run_diff;   // that trial's run diff
  long trials_compared = 0;
};

SearchDiff diff_searches(const std::string& a, const std::string& b, const DiffOptions& opt);

} // namespace reprun
