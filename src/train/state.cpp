// Model and optimizer state to and from checkpoints: see include/reprun/train/state.hpp.
#include "reprun/train/state.hpp"

#include "reprun/core/error.hpp"
#include "reprun/record/checkpoint_file.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/optimizer.hpp"

namespace reprun {

namespace {

std::vector<NamedTensor> state_tensors(Mlp& model, Optimizer& optim) {
  // Names from Mlp::params(), which lists each layer's weight then bias.
  std::vector<NamedTensor> t;
  for (const auto& p : model.params()) {
    t.push_back({p.name, p.data, p.size});
  }
  for (const auto& s : optim.state()) {
    t.push_back({s.name, s.data->data(), s.data->size()});
  }
  return t;
}

} // namespace

void save_state(const RunDir& run, long step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                long keep) {
  write_checkpoint(run.checkpoint_path(step), step, config_digest, state_tensors(model, optim));
  run.prune_checkpoints(keep);
}

long restore_state(const RunDir& run, long max_step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                   const std::function<void()>& reset, const std::function<void(const std::string&)>& on_note) {
  const auto tensors = state_tensors(model, optim);
  for (const auto& ck : run.checkpoints()) {
    if (max_step >= 0 && ck.step > max_step) {
      continue;
    }
    try {
      return read_checkpoint(ck.path, config_digest, tensors);
    } catch (const Error& e) {
      if (on_note) {
        on_note(std::string("skipping checkpoint: ") + e.what());
      }
      reset(); // a failed read may have filled some tensors
    }
  }
  return 0;
}

} // namespace reprun
