// The op where two PyTorch runs part, put into a diff's terms: its cause first among the likely
// causes, the causes it contradicts withdrawn, and a Localization for the reports. exec finds the
// op by replaying both runs with an op trace; `reprun diff` finds it in the traces two runs kept
// (exec --trace-steps N), from one machine or two.
#pragma once

#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/audit/optrace.hpp"

#include <string>

namespace reprun {

// What the comparison of two traces found (`od`, with `cause` its explanation) made part of `diff`:
// a divergence in initialization is reclassified as the initial state; causes that claim the same
// inputs are withdrawn when the op's inputs already differ; the op's cause goes first (it claims
// the same inputs when `claims_same_inputs`); the root rank is set when `rank` >= 0. Returns the
// Localization with its sentence (no note: the caller says how the traces were made).
Localization apply_op_divergence(DiffResult& diff, const OpDivergence& od, OpCause cause, bool claims_same_inputs,
                                 int rank = -1);

// The op cause of `od` between two runs whose manifests are in `diff` (their threads, environment
// and CPU kernels).
OpCause op_cause_between(const OpDivergence& od, const DiffResult& diff);

// "" when two traces' fingerprints were taken by the same method; otherwise why they cannot be
// compared ("XXH3 of the bytes in A, CRC-32 in B"): equal values give different strings then.
std::string fingerprint_methods_differ(const std::string& trace_a, const std::string& trace_b);

// reprun diff of two runs that diverged: where both kept an op trace (exec --trace-steps), the op
// where they part, as exec would name it (diff.localization, the cause first); otherwise a note
// that says why not, and how to record the traces. Throws Error (exit 2) for a damaged trace.
void localize_in_stored_traces(DiffResult& diff, const std::string& run_a, const std::string& run_b);

} // namespace reprun
