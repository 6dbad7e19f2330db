// What a training run records about itself (trainer.cpp's helpers, not a public API): the plan of
// its length, the manifest it writes at its start, the summary it writes as it goes and ends, the
// metrics a resumed or already complete run reads back from its logs and summary, and the faults
// `reprun selftest` injects.
#pragma once

#include "reprun/record/run_dir.hpp"
#include "reprun/train/trainer.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace reprun {

class Backend;
class Mlp;
class World;
struct Config;
struct Dataset;

namespace train_detail {

struct Plan {
  long train_samples = 0;
  long val_samples = 0;
  long steps_per_epoch = 0;
  long total_steps = 0;
};

// runs/<config name>-<local time>, with -2, -3... when taken.
std::string default_run_dir(const std::string& config_path);

// The manifest of a new run (docs/run-format.md): config, data, plan, model, seeds, the machine.
nlohmann::ordered_json build_manifest(const TrainOptions& opt, const Config& cfg, const std::string& config_text_digest,
                                      const Dataset& data, const Plan& plan, Mlp& model, const Backend& backend);

// Faults that `reprun selftest` (gate/selftest.cpp) injects into its own child processes to prove
// that the gate can fail. Read here only, from one internal environment variable that is not a
// documented option; a run made with one records it in its manifest ("selftest_faults"), so that
// it can never pass for a clean run.
//   flip:STEP:TENSOR  after the update of step STEP, flip the lowest bit of TENSOR's first value
//   drop-state        after a checkpoint is restored, zero the optimizer state (a broken restore)
//   restart           a resume in place ignores its checkpoints and starts over from step 0 (a
//                     resume that silently trains the run again)
// The variable's name is k_selftest_fault_variable (trainer.hpp).
struct Fault {
  std::string spec;        // as given; empty: no fault
  long flip_step = 0;      // 0: no flip
  std::string flip_tensor;
  bool drop_state = false;
  bool restart = false;
};
Fault read_fault(const World& world);

RunSummary summary_of(const TrainResult& r, long total, const AppendLog& steps, const AppendLog& evals);

// A number of summary.json: a JSON number, or "NaN"/"Infinity"/"-Infinity" as written for
// non-finite values; nullopt for null or a missing key.
std::optional<double> summary_number(const nlohmann::ordered_json& summary, const char* key);

// A run resumed from its checkpoint at step > 0 (its logs cut back to it) starts from the metrics its
// logs hold there: that step's loss and the last evaluation. A resume with nothing left to train
// (killed after its last checkpoint, before its summary) then still ends with the run's own metrics.
void metrics_from_logs(const RunDir& run, TrainResult& r);

// The result of a run that was already complete: its recorded final metrics.
TrainResult completed_run(const std::string& dir, const nlohmann::ordered_json& summary);

} // namespace train_detail

} // namespace reprun
