// The state of a training run in a checkpoint: the model's weights and the optimizer's state, in
// a fixed order. The container format is record/checkpoint_file.hpp; the file names and their
// listing are RunDir's.
#pragma once

#include <functional>
#include <string>

namespace reprun {

class Mlp;
class Optimizer;
class RunDir;

// Writes the state after step `step` to the run's checkpoint for that step, bound to the result
// digest, then keeps only the newest `keep` checkpoints.
void save_state(const RunDir& run, long step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                long keep);

// Restores the newest valid checkpoint at or before `max_step` (every one when max_step < 0) and
// returns its step; 0 when there is none: then the model is as `reset` leaves it. A corrupt or
// foreign checkpoint is reported through `on_note` and skipped.
long restore_state(const RunDir& run, long max_step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                   const std::function<void()>& reset, const std::function<void(const std::string&)>& on_note);

} // namespace reprun
