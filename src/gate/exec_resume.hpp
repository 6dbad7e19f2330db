// `reprun exec --vary resume=N` (private to src/gate/): a run killed with SIGKILL at its first
// training forward after optimizer step N (by reprun's capture, as a preemption would), then the same
// command again in a fresh process that resumes through the program's own code; its step log is
// stitched at the step K of the checkpoint it loaded, and the state at the resume boundary is
// compared with run-1's (audit/resume.hpp). Refusals (exit 2) in one line each: N at or past the
// run's end, no checkpoint by step N, a resumed process that loaded none of the killed one's
// checkpoints or failed.
#pragma once

#include "gate/exec_run.hpp"
#include "reprun/audit/resume.hpp"

#include <optional>

namespace reprun {

struct ResumeRun {
  CheckRun run;
  ResumeAudit audit; // killed_after, resumed_from, the checkpoint, no_table: filled when the run is made
  bool captured = true; // the capture saw the program (else: its own step log or --loss-regex)
};

// Before run 2: every N of `plan.resume` must end before run-1's last step, and run-1 must have saved
// a checkpoint by step N (when the capture saw its saves). Throws Error (exit 2) naming --vary resume=N.
void require_resumable(const ExecPlan& plan, const CheckRun& first, const RunEvents& first_events);

// Run `i`, killed after step `kill_at` and resumed, into `dir`; `before` are the earlier runs' events
// (a process that read another run's checkpoint is refused before any other check). With a replay
// spec, the resumed process is traced (from its boundary) and the killed one is not.
// A data-parallel run-1 (world > 1): every rank is stopped at its first training forward after step N
// and the whole job killed at once (exec_resume_job.cpp).
ResumeRun exec_resumed_run(const ExecPlan& plan, int i, const std::string& dir, long kill_at, int world,
                           const std::vector<RunEvents>& before, std::vector<std::string>& failures,
                           bool& any_step_log, const ReplaySpec& replay = {});

// The world size run-1's manifest records (0 without a process group).
int run_world_size(const std::string& run_dir);

// exec_resume_job.cpp: exec_resumed_run for a data-parallel job.
ResumeRun exec_resumed_job(const ExecPlan& plan, int i, const std::string& dir, long kill_at, int world,
                           const std::vector<RunEvents>& before, std::vector<std::string>& failures,
                           bool& any_step_log, const ReplaySpec& replay);

// Helpers both share (exec_resume.cpp). The resumed process (or job): the same command again, its
// output appended, --resume-arg added, REPRUN_RESUME_SAVES set when the killed one's saves are
// known (`saves`); a failed one is refused (exit 2) naming `who`.
ProcessResult run_resumed(const ExecPlan& plan, RunInProgress& r, const RunDir& killed, const RunDir& resumed,
                          const ReplaySpec& replay, bool saves);
void refuse_failed(const ExecPlan& plan, const RunInProgress& r, const ProcessResult& pr, const std::string& who,
                   const std::string& flag);
void refuse_shared(const std::vector<RunEvents>& before, int i, std::vector<ProcessEvents> processes);
std::string loads_phrase(const ProcessEvents& resumed);
StepLogFacts stitch(const RunDir& run, const RunDir& killed, const RunDir& resumed, long k, const std::string& source);

// The audit of a resume pair: run-to-run nondeterminism before the kill (reported and localized as
// such), the boundary table, the verdict (exit 1 also when the numbers agree but a state a resume
// must restore was not), the causes, and the op where the numbers part.
void audit_resume_pair(const ExecPlan& plan, const CheckResult& res, CheckPair& pair, const ResumeRun& rr);

// The one-line verdict of an exec with resumed runs.
void resume_verdict(CheckResult& res, const std::vector<ResumeRun>& resumed);

// exec.cpp: the op-level localization of a pair that diverged (up to 3 replays with an op trace);
// for a resume pair (`rr`), run-1 is traced from the resume boundary and run-2 is killed and resumed
// again with its resumed process traced from its own boundary, and the op's cause comes from the
// boundary table.
std::optional<Localization> localize_ops(const ExecPlan& plan, const CheckResult& res, CheckPair& pair,
                                         const ResumeRun* rr = nullptr);

} // namespace reprun
