// Cause and fix: the most likely reason two runs differ, and the change that removes it, read from
// a DiffResult alone (its ranked metadata differences, data files, divergence kind and both
// manifests). It runs nothing and reads no file. It names causes, never effects: a manifest field
// that records what a run produced (exec's exit code, stdout digest, artifacts) is not offered.
#pragma once

#include "reprun/audit/diff.hpp"

#include <vector>

namespace reprun {

// True for a manifest field that records an outcome of the run (category "outputs"): it still
// makes two runs differ, but it is an effect of the cause, never the cause.
bool is_effect(const MetaDelta& m);

// True when a run's manifest says the program's tensors lived on a CUDA device (framework.devices,
// or any rank's under framework.distributed): what CUDA-only causes and fixes need.
bool ran_on_cuda(const nlohmann::ordered_json& manifest);

// Likely causes of a DIFFERENT result, most likely first; every different result gets at least
// one, an identical one none. Diagnosis is declared in diff.hpp (DiffResult holds the list).
std::vector<Diagnosis> diagnose(const DiffResult& r);

} // namespace reprun
