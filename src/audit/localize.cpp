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

namespace {

// The first differing tensor of the original runs, as an effect of `l`'s origin: kept unless it is
// the origin's own entry or a marker such as "(tensor lists differ)".
void set_effect(Localization& l, const Divergence& d) {
  if (!d.first_tensor.empty() && d.first_tensor.front() != '(' && d.first_tensor != l.entry) {
    l.effect = d.first_tensor;
    l.effect_step = d.step;
  }
}

void set_sentence(Localization& l) {
  const std::string effect = effect_phrase(l);
  l.sentence = fmt::format("step {}, origin {}: the first differing value in computation order{}{}", l.step,
                           origin_phrase(l), effect.empty() ? "" : "; " + effect,
                           l.loss_differs_from >= 0 ? fmt::format("; loss differs from step {}", l.loss_differs_from)
                                                    : "");
}

} // namespace

std::string origin_phrase(const Localization& l) {
  if (l.layer.empty()) { // an op outside any module (exec's op trace)
    return fmt::format("{}, {} ({})", l.phase, l.tensor, l.entry);
  }
  return fmt::format("{}, layer {}, {} ({})", l.phase, l.layer, l.tensor, l.entry);
}

std::string effect_phrase(const Localization& l) {
  if (l.effect.empty()) {
    return "";
  }
  return fmt::format("{}, the first differing tensor in model order{}, is an effect of it (weights are recorded "
                     "after the update)",
                     l.effect, l.effect_step != l.step ? fmt::format(" at step {}", l.effect_step) : "");
}

Localization origin_in_trace(const Divergence& d) {
  Localization loc;
  if (!d.found || d.trace_phase.empty()) {
    return loc;
  }
  loc.found = true;
  loc.step = d.step;
  loc.phase = d.trace_phase;
  loc.entry = d.trace_entry;
  loc.loss_differs_from = d.loss_differs_from;
  loc.replay_from = -1; // not a replay
  describe_trace_entry(d.trace_entry, loc.layer, loc.tensor);
  set_effect(loc, d);
  set_sentence(loc);
  return loc;
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
  loc.loss_differs_from = d.loss_differs_from >= 0 ? d.loss_differs_from : x.loss_differs_from;
  set_effect(loc, d);
  set_sentence(loc);
  if (x.step != d.step || attempts > 1) {
    loc.note = fmt::format("the replay (attempt {}) parted at step {} while the original runs parted at step {}: "
                           "the computation is not deterministic, so where it parts varies",
                           attempts, x.step, d.step);
  }
  return loc;
}

} // namespace reprun
