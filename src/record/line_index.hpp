// index_lines(): a block's LineIndex (steplog.hpp), for the reader that finds the lines of a log
// where it read them (a read-ahead thread, or a diff's comparing thread after the divergence).
// Private to src/record/.
#pragma once

#include "reprun/record/steplog.hpp"

#include <cstddef>
#include <cstdint>

namespace reprun {

// Replaces `index` with the lines of [p, p + n) that end there: where each '\n' is, and the step
// (and, with `losses`, the loss) of each line that starts in the block, as quick_step and
// quick_loss give them. `at_line_start`: p starts a line (else its first line began in an earlier
// block, and its step is not known).
void index_lines(LineIndex& index, const char* p, size_t n, bool at_line_start, bool losses);

} // namespace reprun
