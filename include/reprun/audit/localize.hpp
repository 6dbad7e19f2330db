// Localization: where, inside a step, two runs part. A replay of both runs from a common checkpoint
// with trace "full" (gate/) gives two step logs whose trace entries name every activation and
// gradient; this turns their diff into a phase, a layer and a tensor, and a sentence for reports.
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
  long loss_differs_from = 0;
  long replay_from = 0; // checkpoint step the replay started from
  std::string sentence; // "step 37, backward, layer dense_2, weight gradient: first difference; ..."
  std::string note;
};

// "dense_3.weight.grad" -> layer "dense_3", tensor "weight gradient".
void describe_trace_entry(const std::string& entry, std::string& layer, std::string& tensor);

// The localization of `original` (the divergence of the runs) from the diff of their replays,
// started at checkpoint `replay_from`; `attempts` replays were made.
Localization localize(const Divergence& original, const DiffResult& replay, long replay_from, int attempts);

} // namespace reprun
