// The `search` section of a config (docs/config.md): the space of hyperparameters as dotted config
// keys, the method (random, grid, asha, tpe), the trial count and the metric; and the sampling of
// trial k, a pure function of (experiment seed, k) and, for tpe, of the results of trials
// 0..k-batch-1 only. Every draw comes from the Philox streams (rng.hpp) and every transcendental
// function from mathfn, so a trial's values are the same bits on every machine, whatever the
// number of parallel jobs. The orchestrator that trains the trials is gate/search.
#pragma once

#include "reprun/train/config.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct SearchParam {
  std::string key;                  // dotted config key: "optimizer.lr"
  std::string kind;                 // uniform | log_uniform | int_uniform | choice
  double lo = 0.0, hi = 0.0;        // the range (uniform, log_uniform, int_uniform)
  std::vector<std::string> choices; // choice: each value as JSON text
  long points = 0;                  // grid: points of a range (0: not given)
};

struct SearchSpec {
  std::string method = "random"; // random | grid | asha | tpe
  long trials = 0;               // resolved (grid: the grid's size unless given)
  std::string metric = "val_loss"; // val_loss | val_accuracy
  bool maximize = false;           // the direction: val_loss min, val_accuracy max unless given
  std::vector<SearchParam> space;  // in the file's order
  // asha: budgets in epochs; rung i trains to min_epochs * reduction^i, the last rung to max_epochs
  long min_epochs = 0, max_epochs = 0, reduction = 3;
  // tpe: trial k is sampled from the results of trials 0..k-batch-1 (so batch+1 trials can train at
  // once, whatever --jobs); until `startup` results exist, trials sample at random
  long batch = 4, startup = 10, candidates = 24;
};

// The rung budgets of an asha search, in epochs, ascending, the last one max_epochs.
std::vector<long> asha_rungs(const SearchSpec& s);

// A config file with a search section: the section resolved and checked, the base config (the file
// without the section, --set overrides applied) as JSON and resolved. Throws Error (exit 2) naming
// the file and the key: unknown keys, empty ranges, a space key that is not a config key, a value a
// trial could not train with.
struct SearchConfig {
  SearchSpec spec;
  std::string base_json; // the base document, compact JSON (what trials start from)
  Config base;           // the base resolved (seed drawn from the OS when absent)
  std::string source;
};
SearchConfig parse_search_config(const std::string& text, const std::string& source, const std::string& base_dir,
                                 const std::vector<std::string>& overrides);
SearchConfig load_search_config(const std::string& path, const std::vector<std::string>& overrides);
// True when the config file's top level has a non-null "search" key (false when unreadable).
bool config_has_search(const std::string& text);

// The resolved search section as JSON (every key, every default), in a stable order.
nlohmann::ordered_json search_spec_to_json(const SearchSpec& s);

// One trial's point in the space.
struct TrialPoint {
  long k = 0;
  uint64_t seed = 0;                // the trial seed: a pure function of (experiment seed, k)
  std::vector<std::string> values;  // per space key, the value as JSON text
  std::vector<double> coords;       // per space key, the value as a number (choice: its index)
  std::string sampler;              // "random", "grid", "tpe" or "tpe-startup" (random before enough results)
};

// A finished trial as tpe reads it: its point and its metric (nullopt: failed or non-finite).
struct TrialOutcome {
  TrialPoint point;
  std::optional<double> metric;
};

// The seed of trial k.
uint64_t trial_seed(uint64_t experiment_seed, long k);

// Trial k's point. `history` (tpe only) must be the outcomes of trials 0..k-batch-1, in order.
TrialPoint sample_trial(const SearchSpec& s, uint64_t experiment_seed, long k,
                        const std::vector<TrialOutcome>& history = {});

// The --set assignments that turn the base config into trial `p`'s (search=null, seed, data.seed,
// each space key; asha adds the budget).
std::vector<std::string> trial_overrides(const SearchSpec& s, uint64_t experiment_seed, const TrialPoint& p);

} // namespace reprun
