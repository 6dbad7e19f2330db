// What two runs of `reprun exec` read, compared (meta/inputs.hpp records it): the data and code files
// either run read, file by file from both runs' inputs.jsonl, with what changed said from the blocks
// their records keep ("data/train.csv: 1,500 -> 1,520 lines; the first 1,500 are identical (20
// appended)"; for code, the changed lines from the kept text). Counted like any metadata: a changed
// input is a difference even when the numbers agree (--ignore-meta inputs leaves them out); file
// times, pids and opening lines never are. A run recorded before inputs were is "not recorded".
#pragma once

#include "reprun/audit/diff.hpp"

#include <string>
#include <vector>

namespace reprun {

// Adds one delta per data or code file (or data folder) that differs between the runs at `a` and `b`
// (run directories whose manifests `r` holds), and a note when one side recorded none.
void compare_inputs(DiffResult& r, const std::string& a, const std::string& b, const DiffOptions& opt);

// The inputs two runs read that differ, for a sentence: "shards/b.pt (read by B only, at shards.py:5)"
// and "data/train.csv (1,500 -> 1,520 lines; ...)", at most `most` of them and how many more; "" when
// the runs read the same data and code (as far as both recorded it).
std::string differing_inputs(const DiffResult& r, size_t most = 3);

// A data or code file both runs read at the same path whose bytes differ, with what changed
// ("data/train.csv: 1,500 -> 1,520 lines; ..."): the file changed between the runs, so a replay of
// the earlier run, which reads it as it is now, cannot reproduce it. "" when none.
std::string input_changed_between(const DiffResult& r);

// A count as a report writes it: "1,520".
std::string grouped(long long n);

// "a, b, c and 4 more": the first `most` of `v`, and how many more.
std::string name_list(const std::vector<std::string>& v, size_t most);

struct ContentSummary;
// "1,500 -> 1,520 lines; the first 1,500 are identical (20 appended)", for two summaries that differ.
std::string describe_content_change(const ContentSummary& a, const ContentSummary& b);

// The changed lines of two texts: "    7 - lr = 0.01" / "    7 + lr = 0.03" lines for a report, each
// place where they differ apart (the first three places, at most `most` lines of each side there);
// `summary` receives where and what: "line 7 changed", "lines 1 and 31 changed", "line 1 added, line
// 9 changed".
std::string changed_lines(const std::string& a, const std::string& b, size_t most, std::string& summary);

} // namespace reprun
