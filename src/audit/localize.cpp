// Localization from a replay's diff: see include/reprun/audit/localize.hpp.
#include "reprun/audit/localize.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace reprun {

void describe_trace_entry(const std::string& entry, std::string& layer, std::string& tensor) {
  static const std::vector<std::pair<std::string, std::string>> k_suffix = {
      {".weight.grad", "weight gradient"}, {".bias.grad", "bias gradient"},
      {".act.grad", "activation gradient"}, {".z.grad", "pre-activation gradient"},
      {".logits", "logits"},               {".z", "pre-activation (x W + b)"},
      {".act", "activation"},              {".dlogits", "gradient of the loss w.r.t. the logits"},
      {".weight", "weight after the update"}, {".bias", "bias after the update"}};
  for (const auto& [suffix, what] : k_suffix) {
    if (entry.size() > suffix.size() && entry.compare(entry.size() - suffix.size(), suffix.size(), suffix) == 0) {
      layer = entry.substr(0, entry.size() - suffix.size());
      tensor = what;
      return;
    }
  }
  layer = entry == "input" ? "input" : entry;
  tensor = entry == "input" ? "batch input" : entry;
}

Localization localize(const Divergence& d, const DiffResult& replay, long replay_from, int attempts) {
  Localization loc;
  loc.replay_from = replay_from;
  loc.loss_differs_from = d.loss_differs_from;
  const Divergence& x = replay.divergence;
  if (!x.found || x.trace_phase.empty()) {
    loc.note = fmt::format("three replays from step {} with trace full did not reproduce the divergence (it is not "
                           "deterministic); original runs part at step {} ({})",
                           replay_from, d.step, d.first_tensor.empty() ? d.detail : d.first_tensor);
    return loc;
  }
  loc.found = true;
  loc.step = x.step;
  loc.phase = x.trace_phase;
  loc.entry = x.trace_entry;
  describe_trace_entry(x.trace_entry, loc.layer, loc.tensor);
  const long loss_from = d.loss_differs_from > 0 ? d.loss_differs_from : x.loss_differs_from;
  loc.sentence = fmt::format("step {}, {}, layer {}, {}: first difference{}", loc.step, loc.phase, loc.layer,
                             loc.tensor, loss_from > 0 ? fmt::format("; loss differs from step {}", loss_from) : "");
  if (x.step != d.step || attempts > 1) {
    loc.note = fmt::format("the replay (attempt {}) parted at step {} while the original runs parted at step {}: "
                           "the computation is not deterministic, so where it parts varies",
                           attempts, x.step, d.step);
  }
  return loc;
}

} // namespace reprun
