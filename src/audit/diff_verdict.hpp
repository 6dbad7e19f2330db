// The verdict line of a DiffResult (private to src/audit/): "IDENTICAL: ...", "DIFFERENT: runs
// part at step S ...", or what was compared instead of steps (exec's outputs, other world sizes).
#pragma once

#include "reprun/audit/diff.hpp"

namespace reprun {

// Both runs are data-parallel programs of other world sizes: their step logs are not compared.
bool world_sizes_differ(const DiffResult& r);

// Sets r.identical and r.verdict from the divergence and the material metadata; `one_sided`: part
// of what one side recorded had no counterpart (other trace levels).
void set_verdict(DiffResult& r, const DiffOptions& opt, bool one_sided);

} // namespace reprun
