// The core that `check` and `exec` share: run N variants of one experiment, each in its own run
// directory (WORK_DIR/run-1 ... run-N), diff runs 2..N against run 1, localize what can be
// localized, and give one verdict. check trains with the built-in trainer and localizes by replay
// (check.hpp); exec runs an external program (exec.hpp). The reports render a CheckResult.
#pragma once

#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/audit/resume.hpp"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

struct CheckRun {
  int index = 0;
  std::string dir;
  std::string variation; // "threads=2; killed after step 20 and resumed"
  int exit_code = 0;
  std::string status;
  // check --vary resume: the step the resumed process continued from (its manifest's
  // resumes[].from_step), and the checkpoint it had to continue from; -1 when not resumed.
  long resumed_from = -1;
  long resume_checkpoint = -1;
  // exec: the block that shows how the run's program failed (its status and the last lines of its
  // stderr), "" when it did not; and whether it was ended at the time limit.
  std::string failure;
  bool timed_out = false;
};

struct CheckPair {
  int run = 0; // compared against run 1
  DiffResult diff;
  std::optional<Localization> localization;
  std::optional<ResumeAudit> resume; // exec --vary resume: the run was killed and resumed
};

struct CheckResult {
  std::string kind = "check"; // "check" or "exec"
  bool identical = false;
  std::string verdict;
  std::string config;   // check: the config file; exec: the program's command line
  std::string work_dir;
  bool work_dir_removed = false; // a temporary work directory, removed as all runs agreed (--keep keeps it)
  std::vector<std::string> vary; // as given
  std::vector<CheckRun> runs;
  std::vector<CheckPair> pairs;
  std::vector<std::string> notes; // about the runs as a whole (exec: a checkpoint no run saved was loaded)
  // exec: a run whose program failed, was killed or passed the time limit ended the runs (exit 2).
  // `error` is the one-line error, `failure` the block that shows it (the run, its status, the last
  // lines of its stderr); the pairs compare the runs made up to it, the failed one included.
  std::string error;
  std::string failure;
  bool timed_out = false; // the failure is the time limit (--time-limit)
  bool recorded = false;  // exec --runs 1: one run recorded, nothing compared (verdict "RECORDED: ...")
};

// How many runs: `requested`, or (0) 2 or as many as the longest --vary list needs. Throws Error
// unless `fewest`..64 (exec records a single run with --runs 1).
int count_runs(int requested, size_t longest_vary, int fewest = 2);

// The last line of a file (a child's log, for an error message); "" when it cannot be read.
std::string last_line(const std::string& path);

// Creates `work_dir` and returns the paths of its run-1..run-N, none of which may exist yet.
std::vector<std::string> plan_run_dirs(const std::string& work_dir, int runs, const char* command);

// Diffs runs 2..N against run 1; `after_diff` (may be empty) adds notes or a localization to a
// pair. Sets res.pairs, res.identical and res.verdict: "PASS: <pass>" or "FAIL: k of N-1 runs
// differ from run-1; run-i: <where>" (the localization's sentence when found, else the diff's
// verdict).
// `differ` (default: diff_runs) compares two runs' directories (a search check compares searches).
void compare_runs(CheckResult& res, const DiffOptions& dopt, const std::function<void(CheckPair&)>& after_diff,
                  const std::string& pass,
                  const std::function<DiffResult(const std::string&, const std::string&)>& differ = {});

} // namespace reprun
