// The walk of two step logs (private to src/audit/): stream both, compare identical lines as
// bytes (runs of them at once), parse only the lines that differ, classify the first divergence,
// and follow how the loss gap grows after it.
#pragma once

#include "reprun/audit/diff.hpp"
#include "reprun/record/steplog.hpp"

namespace reprun {

// Walks the two logs `ra` and `rb` (open, digesting what their summaries ask) to their ends,
// filling r's divergence, growth, peak, loss series, steps compared, each side's lines, last step
// and partial tail, and notes. True when part of what one side recorded had no counterpart (other
// trace levels). Throws Error naming the file and line of a record that is not valid.
bool walk_steps(DiffResult& r, const DiffOptions& opt, StepLogReader& ra, StepLogReader& rb);

} // namespace reprun
