// What the built-in trainer's guarantees say about the manifest differences of two of its runs
// (kind "train" on both sides; private to src/audit/, applied by diff_manifests after the general
// rules). Runs of other kinds (exec) keep the general rules: a program may read anything.
//   - The same data under another path or name is no change: where the fingerprint is equal (or
//     the files hold the same bytes in the same order), the path and the names are not counted.
//   - Values the data decides (the plan's sample counts, the model's shapes, config keys the config
//     left to the data) are effects of a data change, not config causes: moved to the dataset.
//   - Facts the determinism guarantees make irrelevant (the working folder's git state, the
//     environment, the host but its architecture, the GPU of a CPU run) are listed, not counted.
#pragma once

#include "reprun/audit/diff.hpp"

#include <string>
#include <vector>

namespace reprun {

// True when both manifests are runs of the built-in trainer (kind "train").
bool both_trainer_runs(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b);

// The data's path or file names differ but not its bytes: those deltas become informational, and
// `dataset.same_bytes` is set when only the names of the files differ. Before settle_config_digests.
void settle_data_names(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                       std::vector<MetaDelta>& deltas, DatasetDelta& dataset);

// The data changed: what follows from it is moved to the dataset category, "follows the data".
void settle_data_effects(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                         std::vector<MetaDelta>& deltas);

// Facts that cannot change the built-in trainer's bits: informational, each with its reason.
void settle_trainer_facts(const nlohmann::ordered_json& a, const nlohmann::ordered_json& b,
                          std::vector<MetaDelta>& deltas);

// The config keys a data path or name delta may carry without the data changing.
bool is_data_path_key(const std::string& key);

} // namespace reprun
