// One run of `reprun exec` (private to src/gate/): the plan every run of an exec shares, and the
// making of one run directory from one process of the program, or from several (a run killed
// after a step and resumed, exec_resume.cpp). Running a process of the program is
// exec_process.cpp's; exec.cpp runs the runs and compares them.
#pragma once

#include "reprun/core/process.hpp"
#include "reprun/gate/exec.hpp"
#include "reprun/record/events.hpp"
#include "reprun/record/run_dir.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <set>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace reprun {

class World;

struct VaryEnv {
  std::string name;
  std::vector<std::string> values;
};

// What every run of one exec shares: the program, its hashed argument files, the pins.
struct ExecPlan {
  const ExecOptions& opt;
  const World& world;
  std::string exe;
  std::optional<std::regex> loss_re;
  std::vector<VaryEnv> vary;
  std::vector<long> resume; // --vary resume=N1,N2: run i+1 is killed after step N_i and resumed
  std::vector<std::pair<std::string, std::string>> user_pins;
  nlohmann::ordered_json argv_files = nlohmann::ordered_json::array();
  nlohmann::ordered_json interpreter;
  std::map<std::string, std::string> base_env;
  std::string command;     // the program's command line, for messages
  std::string capture_dir; // reprun's Python package, put on PYTHONPATH ("" when not capturing)
  std::string preload;     // libreprun_preload.so, first in every process's LD_PRELOAD ("" when not used)
  std::string preload_missing; // why it is not used, for the manifest
  // reprun's Python folder (sitecustomize) for the audit hook that records a Python process's opens,
  // also in a program that is not Python itself (a shell script that starts Python): "" when none.
  std::string files_python_dir;
  // What the runs of this exec wrote so far (absolute paths): a later run that reads one reads an
  // output of its own kind (a checkpoint), not an input.
  std::shared_ptr<std::set<std::string>> written = std::make_shared<std::set<std::string>>();
};

ExecPlan plan_exec(const ExecOptions& opt, const World& world);

// What a replay adds to a run: an op trace up to `trace_steps` optimizer steps (from the resume
// boundary after step `trace_from` when >= 0), or the inputs of op `save_index` and a repro.py in
// `save_dir`.
struct ReplaySpec {
  long trace_steps = 0;
  long trace_from = -1;
  long save_index = -1;
  std::string save_dir, fix_kind, threads;
  bool compile_off = false; // the program calls torch.compile: replay it with compilation off (TORCHDYNAMO_DISABLE=1)
  bool any() const { return trace_steps > 0 || save_index >= 0; }
};

// One process of a run. Number 0 is a run's only process, whose files are the run's own; a run of
// several processes gives each its folder (RunDir::process): 1 the killed one, 2 the resumed one.
struct ProcessPlan {
  int number = 0;
  std::map<std::string, std::string> env;   // added to the run's environment
  std::vector<std::string> extra_args;      // appended to the program's arguments ({run_dir} expanded)
  long kill_when_log_reaches = 0;           // > 0: SIGKILL once the program's own step log (or its stdout
                                            // through --loss-regex) shows this step, or the next one
                                            // once reprun's capture has stepped in a process of the
                                            // program (its framework facts exist): the capture kills
                                            // the program itself, after the program's save of that step
  bool append_output = false;               // stdout.txt and stderr.txt go on after an earlier process's
  // > 0: a data-parallel job of this many ranks to be stopped after a step (REPRUN_STOP_RANKS): once
  // every rank has written its "stop" event, or `stop_deadline` seconds after the first did, each
  // rank's reported pid and the program's whole process group get SIGKILL at once.
  int stop_world = 0;
  double stop_deadline = 0;
};

// What the stop of a data-parallel job found (ProcessPlan::stop_world).
struct JobStop {
  std::vector<long> stopped;         // the ranks that stopped, ascending
  bool deadline = false;             // killed at the deadline, before every rank stopped
};

// The step log a process leaves: the program's own (validated), or one built from its stdout with
// --loss-regex, or the automatic one, or none.
struct StepLogFacts {
  std::string source = "program"; // program | loss-regex | automatic | none
  std::string error;
  long records = 0;
  std::optional<double> last_loss;
};

// A run directory being made: locked, with the run's environment and pins.
struct RunInProgress {
  CheckRun res;
  RunDir run;
  RunLock lock;
  std::map<std::string, std::string> env;
  std::vector<std::string> pin_names;
  nlohmann::ordered_json pins;
  std::string label;   // "run-2", "the replay of run-2"
  std::string created;
  int64_t started_ns = 0;        // the time of the run's lock (file system clock): what changed after, the run made
  std::vector<std::string> argv; // as run ({run_dir} expanded)
  bool replay = false;           // a replay (an op trace, an op's inputs): records no inputs
  // Set when a process passed the time limit: what of the program was still running then, "rank 0
  // (after step 4), rank 1 (after step 2) and 2 other processes".
  std::string still_running;
  JobStop job_stop; // the last process run with ProcessPlan::stop_world
};

RunInProgress begin_run(const ExecPlan& plan, int i, const std::string& dir, const ReplaySpec& replay);

// The program's arguments with {run_dir} replaced by the run's directory.
std::vector<std::string> expand_run_dir(std::vector<std::string> args, const std::string& run_dir);

// Runs one process of the run to its end (exec_process.cpp); `files` is where its per-process
// files go (the run's own directory for process 0).
ProcessResult run_program(const ExecPlan& plan, RunInProgress& r, const ProcessPlan& p, const RunDir& files,
                          const ReplaySpec& replay);

// A process ended by SIGINT or SIGTERM to reprun (ExecOptions::stop): throws Error with
// ExitCode::interrupted, saying what was running.
void stop_if_interrupted(const ExecPlan& plan, const RunInProgress& r, const ProcessResult& pr);

// What of the program still runs in process group `pgid`: the ranks (the processes that hold a
// rank's automatic step log open, rank 0's being the run's own) with the last step each logged,
// and the other processes; "" when none of them runs.
std::string still_running(const RunDir& files, int pgid);

// The step log one process left in `files`, moved or built into `steps_path`.
StepLogFacts collect_step_log(const ExecPlan& plan, const RunDir& files, const std::string& steps_path);

// The framework facts reprun_capture wrote in `files` (null when it wrote none); the file is removed.
nlohmann::ordered_json take_framework_facts(const RunDir& files, std::vector<std::string>& notes);

// A data-parallel program's ranks (docs/pytorch.md, "Data-parallel programs"): the world size rank
// 0's capture recorded, and the ranks but 0 that left a step log in ranks/<r>/ (rank 0's log is the
// run's steps.jsonl). world_size is 0 when the program had no process group.
struct RankLogs {
  int world_size = 0;
  std::vector<int> logged; // ranks 1..world_size-1 with a step log, ascending
  std::vector<std::string> errors;
};

// Moves each rank's automatic step log into ranks/<r>/steps.jsonl (validated), and folds each
// rank's framework facts into `framework`'s "distributed" key (world size, backend, each rank's
// devices). Nothing happens without a process group.
RankLogs collect_rank_logs(const RunDir& files, nlohmann::ordered_json& framework, std::vector<std::string>& notes);

// Writes the manifest and the summary, reports a failure of `pr` (the run's last process), and
// returns the run. `log` describes the run's steps.jsonl as it now is.
CheckRun finish_run(const ExecPlan& plan, RunInProgress& r, const ProcessResult& pr, const StepLogFacts& log,
                    const nlohmann::ordered_json& framework, std::vector<std::string>& failures,
                    const RankLogs& ranks = {});

// Runs the program once into `dir` (a replay adds what `replay` asks for); failures (exit status,
// bad step log) go to `failures`.
CheckRun exec_run(const ExecPlan& plan, int i, const std::string& dir, std::vector<std::string>& failures,
                  bool& any_step_log, const ReplaySpec& replay = {}, const ProcessPlan& process = {});

// Validates a step log; on the first bad line keeps the valid prefix and returns the error ("" when
// the log is fine).
std::string validate_step_log(const std::string& path, long& records, double& last_loss, bool& has_loss);

// The step of a step-log line (a program may write {"step": 3, ...} with spaces), -1 when it has none.
long line_step(std::string_view line);

// "run-2 failed (exit status 1); the last lines of .../stderr.txt:\n  | ...": the block exec shows
// (for a process ended at the time limit, "run-2 ran past the time limit and was ended (...)").
std::string failure_block(const std::string& label, const ProcessResult& pr, const RunDir& files);

// "90s", "20m", "2h": a time limit as --time-limit takes it.
std::string duration_text(double seconds);

// The events every process of a run recorded (the run's own events.jsonl, or each process's).
std::vector<ProcessEvents> run_events(const RunDir& run);

} // namespace reprun
