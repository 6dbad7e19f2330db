// Localization: where, inside a step, two runs part. A replay of both runs from a common checkpoint
// with trace "full" (gate/) gives two step logs whose trace entries name every activation and
// gradient; this turns their diff into a phase, a layer and a tensor, and a sentence for reports.
// The origin is the first differing value in the order the step computes it: forward from the
// first layer to the last, backward from the last layer to the first (so dense_3's gradient comes
// before dense_1's), then the update. The step log's first differing tensor (model order, weights
// recorded after the update) is named as an effect of the origin, never as a second origin.
#pragma once

#include "reprun/audit/diff.hpp"

#include <string>

namespace reprun {

struct Localization {
  bool found = false;
  long step = 0;
  std::string phase;  // forward | backward | update
  std::string layer;  // dense_2
  std::string tensor; // "weight gradient", "activation", ...
  std::string entry;  // raw trace entry name
  std::string effect; // "dense_1.weight": the original runs' first differing tensor in model order,
                      // when it is not the origin itself ("" otherwise)
  long effect_step = 0; // the step where `effect` was seen (the original divergence)
  long loss_differs_from = -1; // -1: none within the logs
  long replay_from = 0; // checkpoint step the replay started from
  std::string sentence; // "step 37, origin backward, layer dense_3, weight gradient (dense_3.weight.grad): ..."
  std::string note;
  std::string source; // exec: the source line of the origin op ("train.py:46")
  std::string repro;  // exec: repro.py, which reruns the origin op on its saved inputs ("" when none)
  int rank = -1;      // exec of a data-parallel program: the rank whose op trace holds the origin
};

// "dense_3.weight.grad" -> layer "dense_3", tensor "weight gradient".
void describe_trace_entry(const std::string& entry, std::string& layer, std::string& tensor);

// "backward, layer dense_3, weight gradient (dense_3.weight.grad)": the origin in one phrase.
std::string origin_phrase(const Localization& l);

// "dense_1.weight, the first differing tensor in model order, is an effect of it (...)", or "".
std::string effect_phrase(const Localization& l);

// The origin a diff shows by itself when both logs carry trace "full" (found when the divergence
// has a trace phase), in the same terms as a replay's localization.
Localization origin_in_trace(const Divergence& d);

// The localization of `original` (the divergence of the runs) from the diff of their replays,
// started at checkpoint `replay_from`; `attempts` replays were made.
Localization localize(const Divergence& original, const DiffResult& replay, long replay_from, int attempts);

} // namespace reprun
