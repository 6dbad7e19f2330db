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

// struct Localization is in diff.hpp (a diff carries one).

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
