// Model and optimizer state to and from checkpoints: see include/reprun/train/state.hpp. The state
// lives in the backend's memory; a checkpoint downloads it (or reads it in place on the CPU) and a
// restore uploads it, so the files are the same whichever device wrote or reads them.
#include "reprun/train/state.hpp"

#include "reprun/core/error.hpp"
#include "reprun/record/checkpoint_file.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/optimizer.hpp"

namespace reprun {

namespace {

// The state's tensors in backend memory. Names from Mlp::params(), which lists each layer's weight
// then bias.
std::vector<NamedTensor> state_tensors(Mlp& model, Optimizer& optim) {
  std::vector<NamedTensor> t;
  for (const auto& p : model.params()) {
    t.push_back({p.name, p.data, p.size});
  }
  for (const auto& s : optim.state()) {
    t.push_back({s.name, s.data, s.size});
  }
  return t;
}

// The same tensors on the host: themselves where the backend computes on host memory, else host
// copies in `staging` (one per tensor).
std::vector<NamedTensor> host_side(const Backend& be, const std::vector<NamedTensor>& dev,
                                   std::vector<std::vector<float>>& staging) {
  if (be.host_memory()) {
    return dev;
  }
  staging.resize(dev.size());
  std::vector<NamedTensor> host = dev;
  for (size_t i = 0; i < dev.size(); ++i) {
    staging[i].resize(dev[i].count);
    host[i].data = staging[i].data();
  }
  return host;
}

} // namespace

void save_state(const RunDir& run, long step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                long keep) {
  Backend& be = model.backend();
  const auto dev = state_tensors(model, optim);
  std::vector<std::vector<float>> staging;
  const auto host = host_side(be, dev, staging);
  if (!be.host_memory()) {
    for (size_t i = 0; i < dev.size(); ++i) {
      if (dev[i].count > 0) {
        be.download(host[i].data, dev[i].data, dev[i].count * sizeof(float));
      }
    }
  }
  write_checkpoint(run.checkpoint_path(step), step, config_digest, host);
  run.prune_checkpoints(keep);
}

long restore_state(const RunDir& run, long max_step, const std::string& config_digest, Mlp& model, Optimizer& optim,
                   const std::function<void()>& reset, const std::function<void(const std::string&)>& on_note) {
  Backend& be = model.backend();
  const auto dev = state_tensors(model, optim);
  std::vector<std::vector<float>> staging;
  const auto host = host_side(be, dev, staging);
  for (const auto& ck : run.checkpoints()) {
    if (max_step >= 0 && ck.step > max_step) {
      continue;
    }
    try {
      const long step = read_checkpoint(ck.path, config_digest, host);
      if (!be.host_memory()) {
        for (size_t i = 0; i < dev.size(); ++i) {
          if (dev[i].count > 0) {
            be.upload(dev[i].data, host[i].data, dev[i].count * sizeof(float));
          }
        }
      }
      return step;
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
