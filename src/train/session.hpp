// What one process of a training run holds, built phase by phase (trainer.cpp), and the first
// phase: the config, and for a resume the run it continues (resolve_config.cpp). Private to
// src/train/.
#pragma once

#include "run_record.hpp"

#include "reprun/core/threadpool.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/data.hpp"
#include "reprun/train/exchange.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/optimizer.hpp"
#include "reprun/train/ranks.hpp"
#include "reprun/train/trainer.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>

namespace reprun::train_detail {

// What one process of a run holds, built phase by phase.
struct Session {
  const TrainOptions& opt;
  bool resuming = false;          // --resume: continue (or, with -o, fork) an existing run
  bool forking = false;
  std::optional<RunDir> source;   // the run being resumed or forked
  Config cfg;
  nlohmann::ordered_json manifest;                 // resumes and forks: the source's, updated
  std::string config_text_digest; // new runs: sha256 of the config file
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Backend> backend; // computes on the pool's threads
  Dataset data;
  bool data_loaded = false;       // a resume with a config loaded the data to resolve that config
  Split split;
  Plan plan;
  std::unique_ptr<Mlp> model;
  std::unique_ptr<Optimizer> optim;
  std::unique_ptr<MlpRunner> runner;
  Exchange* ranks = nullptr;         // the MPI world of a run over several ranks (docs/scaling.md)
  std::unique_ptr<RankChain> chain; // with `ranks`: the gradient chains passed between them
  bool writer = true;               // rank 0 (or the only process): writes the run directory
  std::optional<RunDir> run;
  std::optional<AppendLog> steps_log, evals_log;
  long start_step = 0;
  Fault fault; // selftest only

  explicit Session(const TrainOptions& o) : opt(o) {}
  void note(const std::string& s) const {
    if (opt.on_note) {
      opt.on_note(s);
    }
  }
  const std::string& digest() const { return manifest["config_digest"].get_ref<const std::string&>(); }
};

// Phase 1a: the config, and for a resume the run it continues (its manifest read, its logs
// verified, --set limited to execution settings). Nothing is written.
void resolve_config(Session& s);

} // namespace reprun::train_detail
