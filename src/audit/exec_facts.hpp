// What the causes of a diff (cause.cpp) read of two exec runs' manifests: whether a run recorded
// what its program read, whether two runs are of one exec, and the Python interpreter each ran
// (private to src/audit/).
#pragma once

#include "reprun/audit/diff.hpp"

#include <string>

namespace reprun {

// The run recorded what the program read (exec without --no-inputs, by a reprun that records it).
bool inputs_recorded(const nlohmann::ordered_json& manifest);

// Both runs are of one exec (their run directories side by side in one work directory): one
// environment, one start; else recorded apart (a reference and a later run), where what reprun
// does not record may differ.
bool same_exec(const DiffResult& r);

// "/usr/bin/python3 (Python 3.11.2)", from a manifest's program.interpreter ("?" for what it lacks).
std::string interpreter_phrase(const nlohmann::ordered_json& manifest);

// "; with it, its installed distributions differ (94 -> 45 installed, 118 differ in name or
// version)", from the distributions' deltas, or "" when none differ.
std::string distributions_phrase(const DiffResult& r);

} // namespace reprun
