// What two runs of `reprun exec` read, compared (meta/inputs.hpp records it): the data and code files
// either run read, file by file from both runs' inputs.jsonl, with what changed said from the blocks
// their records keep ("data/train.csv: 1,500 -> 1,520 lines; the first 1,500 are identical (20
// appended)"; for code, the changed lines from the kept text). Counted like any metadata: a changed
// input is a difference even when the numbers agree (--ignore-meta inputs leaves them out); file
// times, pids and opening lines never are. A run recorded before inputs were is "not recorded".
#pragma once

#include "reprun/audit/diff.hpp"

#include <string>

namespace reprun {

// Adds one delta per data or code file (or data folder) that differs between the runs at `a` and `b`
// (run directories whose manifests `r` holds), and a note when one side recorded none.
void compare_inputs(DiffResult& r, const std::string& a, const std::string& b, const DiffOptions& opt);

struct ContentSummary;
// "1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)", for two summaries that differ.
std::string describe_content_change(const ContentSummary& a, const ContentSummary& b);

// The changed lines of two texts: "line 7: - lr = 0.01 / + lr = 0.03"-like lines for a report, at most
// `most` lines of each side; `summary` receives "line 7" or "lines 7-9".
std::string changed_lines(const std::string& a, const std::string& b, size_t most, std::string& summary);

} // namespace reprun
