// exec --vary resume: see exec_resume.hpp.
#include "gate/exec_resume.hpp"

#include "reprun/audit/diff.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/steplog.hpp"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// The step of a run's last record, -1 when it has none.
long last_step(const RunDir& run) {
  const std::string line = last_line(run.file(RunFile::steps));
  return line.empty() ? -1 : line_step(line);
}

bool saw_torch(const RunDir& run) {
  const ojson m = run.read_manifest();
  return m.contains("framework") && m["framework"].is_object() && m["framework"].contains("torch");
}

} // namespace

ProcessResult run_resumed(const ExecPlan& plan, RunInProgress& r, const RunDir& killed, const RunDir& resumed,
                          const ReplaySpec& replay, bool saves) {
  ProcessPlan rp;
  rp.number = 2;
  rp.append_output = true;
  rp.extra_args = plan.opt.resume_args;
  if (saves) {
    rp.env["REPRUN_RESUME_SAVES"] = killed.file(RunFile::events);
  }
  const ProcessResult pr = run_program(plan, r, rp, resumed, replay);
  stop_if_interrupted(plan, r, pr);
  return pr;
}

void refuse_failed(const ExecPlan& plan, const RunInProgress& r, const ProcessResult& pr, const std::string& who,
                   const std::string& flag) {
  if (pr.exit_code == 0) {
    return;
  }
  if (plan.opt.on_failure) {
    plan.opt.on_failure(failure_block(who, pr, r.run));
  }
  throw Error(flag, fmt::format("{} failed ({}); its output is in {}", who, pr.describe(), r.run.file(RunFile::stderr_log)));
}

// A process that read another run's checkpoint: refused before anything else is said of the run.
void refuse_shared(const std::vector<RunEvents>& before, int i, std::vector<ProcessEvents> processes) {
  if (before.empty()) {
    return; // a replay: its runs are replays of runs already checked
  }
  std::vector<RunEvents> runs = before;
  runs.push_back({i, std::move(processes)});
  const SharingFindings f = check_sharing(runs);
  if (!f.error.empty()) {
    throw Error(f.error);
  }
}

// "; it loaded ckpt.pt (train.py:30), bytes the killed process never saved" or "; it loaded nothing".
std::string loads_phrase(const ProcessEvents& resumed) {
  for (const auto& e : resumed.io) {
    if (!e.save) {
      return fmt::format(" (it loaded {} at {}, bytes the killed process never saved)", e.path, e.where);
    }
  }
  return " (it never called torch.load)";
}

// run's steps.jsonl: the killed process's records up to step k, then the resumed process's.
StepLogFacts stitch(const RunDir& run, const RunDir& killed, const RunDir& resumed, long k, const std::string& source) {
  std::string out;
  const std::string a = read_file(killed.file(RunFile::steps));
  for (size_t pos = 0; pos < a.size();) {
    const size_t nl = a.find('\n', pos);
    const std::string_view line(a.data() + pos, (nl == std::string::npos ? a.size() : nl) - pos);
    pos = nl == std::string::npos ? a.size() : nl + 1;
    if (nl != std::string::npos && line_step(line) <= k) {
      out.append(line).push_back('\n');
    }
  }
  const std::string b = read_file(resumed.file(RunFile::steps));
  const size_t first_nl = b.find('\n');
  if (first_nl != std::string::npos) {
    const long first = line_step(std::string_view(b.data(), first_nl));
    if (first <= k) {
      throw Error(resumed.file(RunFile::steps),
                  fmt::format("the resumed process's log starts at step {}, not after step {} of the checkpoint it "
                              "loaded",
                              first, k));
    }
  }
  out += b;
  const std::string path = run.file(RunFile::steps);
  write_file_atomic(path, out);
  StepLogFacts f;
  f.source = source;
  double last = 0;
  bool has = false;
  f.error = validate_step_log(path, f.records, last, has);
  if (has) {
    f.last_loss = last;
  }
  return f;
}


void require_resumable(const ExecPlan& plan, const CheckRun& first, const RunEvents& first_events) {
  const RunDir run = RunDir::open(first.dir);
  const long last = last_step(run);
  const bool torch = saw_torch(run);
  const ProcessEvents none;
  const ProcessEvents& ev = first_events.processes.empty() ? none : first_events.processes.front();
  for (long n : plan.resume) {
    const std::string flag = fmt::format("--vary resume={}", n);
    if (last < 0) {
      throw Error(flag, "run-1 left no step log, so there is no step to kill it after: a PyTorch program gets one "
                        "from reprun's capture (it needs a torch.optim optimizer); another writes REPRUN_STEP_LOG, or "
                        "give --loss-regex with a step group");
    }
    if (n >= last) {
      throw Error(flag, fmt::format("step {} is at or past run-1's last step ({}): the run would end before it is "
                                    "killed, so no resume would be tested; give a step from 1 to {}",
                                    n, last, last - 1));
    }
    if (torch && !last_checkpoint_by(ev, n)) {
      const CheckpointEvent* f = first_checkpoint(ev);
      throw Error(flag, f ? fmt::format("run-1 saved no checkpoint by step {}: the first one was saved after step {} "
                                        "({} at {}), so a run killed after step {} has nothing to resume from; give "
                                        "a step from {} to {}",
                                        n, f->step, f->path, f->where, n, f->step, last - 1)
                          : fmt::format("run-1 saved no checkpoint (no torch.save of an optimizer's state_dict or the "
                                        "model's parameters), so a run killed after step {} has nothing to resume "
                                        "from",
                                        n));
    }
  }
}

int run_world_size(const std::string& run_dir) {
  const ojson m = RunDir::open(run_dir).read_manifest();
  return m.contains("ranks") && m["ranks"].is_object() ? static_cast<int>(m["ranks"].value("world_size", 0L)) : 0;
}

ResumeRun exec_resumed_run(const ExecPlan& plan, int i, const std::string& dir, long kill_at, int world,
                           const std::vector<RunEvents>& before, std::vector<std::string>& failures,
                           bool& any_step_log, const ReplaySpec& replay) {
  if (world > 1) {
    return exec_resumed_job(plan, i, dir, kill_at, world, before, failures, any_step_log, replay);
  }
  ResumeRun out;
  out.audit.killed_after = kill_at;
  RunInProgress r = begin_run(plan, i, dir, replay);
  r.res.variation += (r.res.variation.empty() ? "" : "; ") + fmt::format("killed after step {} and resumed", kill_at);
  const std::string flag = fmt::format("--vary resume={}", kill_at);
  const std::string run_label = replay.any() ? fmt::format("the replay of run-{}", i) : fmt::format("run-{}", i);

  // 1: killed at its first training forward after step N (by the capture, with its whole process
  // group), or once its own log shows step N (a program without the capture; N + 1 once the capture
  // has stepped in one of its processes, which then kills it first: ProcessPlan::kill_when_log_reaches).
  const RunDir killed = r.run.process(1);
  ProcessPlan kp;
  kp.number = 1;
  kp.env["REPRUN_KILL_AFTER_STEP"] = std::to_string(kill_at);
  kp.env["REPRUN_BOUNDARY_STEPS"] = std::to_string(kill_at); // its own states: the reference if run-1 differs
  // The capture kills the program's whole process group, as a preemption does: a shell script or a
  // launcher that started Python with it, not only the Python process. The group is that of its
  // ancestor whose parent is this process.
  kp.env["REPRUN_KILL_GROUP"] = std::to_string(::getpid());
  kp.kill_when_log_reaches = kill_at;
  const ProcessResult pr1 = run_program(plan, r, kp, killed, ReplaySpec{});
  stop_if_interrupted(plan, r, pr1);
  const StepLogFacts log1 = collect_step_log(plan, killed, killed.file(RunFile::steps));
  const ProcessEvents ev1 = read_events(killed.file(RunFile::events));
  refuse_shared(before, i, {ev1});
  if (pr1.signal != SIGKILL) {
    if (pr1.exit_code != 0) {
      if (plan.opt.on_failure) {
        plan.opt.on_failure(failure_block(run_label, pr1, r.run));
      }
      throw Error(fmt::format("{}: the program failed ({}) before it was killed; its output is in {}", run_label,
                              pr1.describe(), r.run.file(RunFile::stderr_log)));
    }
    throw Error(flag, fmt::format("{} ended (exit 0) before its first training forward after step {}, so it was "
                                  "never killed and resumed (its log has {} steps)",
                                  run_label, kill_at, log1.records));
  }
  if (!log1.error.empty()) {
    throw Error(log1.error);
  }
  std::error_code ec;
  out.captured = !plan.capture_dir.empty() && fs::exists(killed.file(RunFile::framework_facts), ec);
  if (out.captured && !last_checkpoint_by(ev1, kill_at)) {
    throw Error(flag, fmt::format("{} was killed after step {} but had saved no checkpoint by then, so it has "
                                  "nothing to resume from",
                                  run_label, kill_at));
  }

  // 2: the same command in a fresh process, which resumes through the program's own code.
  const RunDir resumed = r.run.process(2);
  const ProcessResult pr2 = run_resumed(plan, r, killed, resumed, replay, out.captured);
  const StepLogFacts log2 = collect_step_log(plan, resumed, resumed.file(RunFile::steps));
  const ProcessEvents ev2 = read_events(resumed.file(RunFile::events));
  refuse_shared(before, i, {ev1, ev2});
  refuse_failed(plan, r, pr2, fmt::format("the resumed process of {}", run_label), flag);
  if (!log2.error.empty()) {
    throw Error(log2.error);
  }
  long k = -1;
  if (out.captured) {
    const CheckpointEvent* load = resuming_load(ev2);
    if (!load) {
      throw Error(flag, fmt::format("the resumed process of {} loaded no checkpoint of the killed one before its "
                                    "first optimizer step: it started over{}; a script that resumes only when told "
                                    "needs --resume-arg (e.g. --resume-arg=--resume)",
                                    run_label, loads_phrase(ev2)));
    }
    k = load->resumes_step;
    out.audit.checkpoint = load->path;
    out.audit.loaded_at = load->where;
    if (const CheckpointEvent* save = save_of(ev1, *load)) {
      out.audit.saved_at = save->where;
      out.audit.saved_after_backward = save->after_backward;
    }
  } else {
    const std::string text = read_file(resumed.file(RunFile::steps));
    if (text.empty()) {
      throw Error(flag, fmt::format("the resumed process of {} logged no step, so where it resumed cannot be told",
                                    run_label));
    }
    k = line_step(std::string_view(text).substr(0, text.find('\n'))) - 1;
    out.audit.killed_log_step = last_step(killed);
    out.audit.has_table = false;
    out.audit.no_table = "the program ran without reprun's capture (its own step log or --loss-regex): reprun "
                         "saw no checkpoint and no state, so the resume is placed at the resumed log's first step, "
                         "and there is no boundary table";
  }
  out.audit.resumed_from = k;
  out.audit.captured = out.captured;
  const StepLogFacts log = stitch(r.run, killed, resumed, k, log2.source);
  any_step_log = any_step_log || log.source != "none";
  std::vector<std::string> notes;
  ojson framework = take_framework_facts(resumed, notes);
  if (framework.is_null() && fs::exists(killed.file(RunFile::framework_facts), ec)) {
    framework = ojson::parse(read_file(killed.file(RunFile::framework_facts)), nullptr, false);
    framework = framework.is_discarded() ? ojson() : framework;
  }
  // A program with a process group of one rank (torchrun --nproc_per_node=1) is resumed here, not as
  // a job: its facts are folded as run-1's were (the world size, each rank's devices), so that its
  // manifest says what run-1's says.
  const RankLogs ranks = collect_rank_logs(resumed, framework, notes);
  for (const auto& n : notes) {
    if (plan.opt.on_note) {
      plan.opt.on_note(n);
    }
  }
  out.run = finish_run(plan, r, pr2, log, framework, failures, ranks);
  return out;
}

void audit_resume_pair(const ExecPlan& plan, const CheckResult& res, CheckPair& pair, const ResumeRun& rr) {
  ResumeRun with_table = rr;
  ResumeAudit& a = with_table.audit;
  const RunDir run1 = RunDir::open(res.runs.front().dir);
  const RunDir run2 = RunDir::open(rr.run.dir);
  const RunDir killed = run2.process(1), resumed = run2.process(2);
  // Before the kill the two are the same program run twice: a difference there is run-to-run
  // nondeterminism, whatever the resume does.
  DiffOptions plain;
  const DiffResult before = diff_runs(run1.file(RunFile::steps), killed.file(RunFile::steps), plain);
  const Divergence& bd = before.divergence;
  if (bd.found && bd.kind != DivergenceKind::ended_early && bd.step <= a.killed_after) {
    a.nondeterminism_step = bd.step;
  }
  if (rr.captured) {
    // The reference is run-1, unless the killed process already parted from it: then its own states.
    if (a.nondeterminism_step > 0) {
      a.reference = "the killed process";
    }
    const ProcessEvents ref = read_events((a.nondeterminism_step > 0 ? killed : run1).file(RunFile::events));
    const ProcessEvents after = read_events(resumed.file(RunFile::events));
    if (a.world_size > 1) {
      std::vector<std::pair<ProcessEvents, ProcessEvents>> per_rank;
      for (long rank = 0; rank < a.world_size; ++rank) {
        per_rank.emplace_back(ref.of_rank(rank), after.of_rank(rank));
      }
      fill_rank_tables(a, per_rank);
    } else {
      fill_boundary_table(a, ref, after);
    }
  }
  const Divergence& dv = pair.diff.divergence;
  a.numbers_part = dv.found && dv.kind != DivergenceKind::ended_early ? dv.step : -1;
  auto& causes = pair.diff.diagnosis;
  if (a.nondeterminism_step > 0) {
    // Localized as exec localizes two plain runs, never blamed on the resume.
    CheckPair p;
    p.run = pair.run;
    p.diff = pair.diff;
    p.diff.divergence = bd;
    p.diff.diagnosis.clear();
    pair.localization = localize_ops(plan, res, p);
    pair.diff.identical = false;
    pair.diff.verdict = fmt::format("DIFFERENT: the killed process parted from run-1 at step {}, before it was "
                                    "killed after step {}: run-to-run nondeterminism, not the resume",
                                    a.nondeterminism_step, a.killed_after);
    causes = p.diff.diagnosis;
    causes.push_back({"run-to-run nondeterminism: the same program, run twice without a kill, already differs at "
                      "step " + std::to_string(a.nondeterminism_step),
                      "make the uninterrupted runs identical first (reprun exec without --vary resume), then audit "
                      "the resume"});
    a.notes.push_back("run-1 already differs before the kill: the resumed process's state is compared with the "
                      "killed process's own");
    for (const auto& [cause, fix] : resume_causes(a)) {
      causes.push_back({cause, fix});
    }
    pair.resume = a;
    return;
  }
  if (a.numbers_part > 0) {
    pair.localization = localize_ops(plan, res, pair, &with_table);
  } else if (a.state_not_restored()) {
    pair.diff.identical = false;
    pair.diff.verdict = fmt::format("DIFFERENT: step records identical, but the resume after step {} did not "
                                    "restore {} (the run ended before the numbers parted)",
                                    a.resumed_from, a.not_restored_names());
  }
  for (const BoundaryRow* row : a.not_restored()) {
    if (!row->is_state() && a.numbers_part < 0) {
      a.notes.push_back(fmt::format("{} {} at the resume, but nothing drew from it before the run ended: the numbers "
                                    "agree",
                                    row->name, row->verdict_words()));
    }
  }
  // The table's causes, after the op's (when one was found); a cause that says "same inputs and
  // environment" contradicts a state that was not restored, and goes.
  std::vector<Diagnosis> table;
  const std::string op_cause = pair.localization && pair.localization->found && !causes.empty() ? causes.front().cause : "";
  for (const auto& [cause, fix] : resume_causes(a)) {
    if (op_cause.find(cause) == std::string::npos) { // the op's cause already names this state
      table.push_back({cause, fix});
    }
  }
  if (!a.not_restored().empty() || a.saved_after_backward) {
    causes.erase(std::remove_if(causes.begin(), causes.end(), [](const Diagnosis& d) { return d.claims_same_inputs; }),
                 causes.end());
    const bool op_first = pair.localization && pair.localization->found && !causes.empty();
    causes.insert(causes.begin() + (op_first ? 1 : 0), table.begin(), table.end());
  }
  pair.resume = a;
}

void resume_verdict(CheckResult& res, const std::vector<ResumeRun>& resumed) {
  auto audit_of = [&](int run) -> const ResumeAudit* {
    for (const auto& p : res.pairs) {
      if (p.run == run && p.resume) {
        return &*p.resume;
      }
    }
    return nullptr;
  };
  auto summary = [](const ResumeAudit& a) {
    if (a.nondeterminism_step > 0) {
      return fmt::format("run-to-run nondeterminism: its killed process parted from run-1 at step {}, before the "
                         "kill",
                         a.nondeterminism_step);
    }
    if (!a.has_table) {
      return "no boundary table: " + a.no_table;
    }
    const auto rows = a.not_restored();
    return rows.empty() ? fmt::format("every state restored ({} compared)", a.rows.size())
                        : a.not_restored_summary();
  };
  if (res.identical) {
    std::string s;
    for (const auto& rr : resumed) {
      if (const ResumeAudit* a = audit_of(rr.run.index)) {
        s += fmt::format("; run-{} killed after step {} and resumed from step {}: {}", rr.run.index, a->killed_after,
                         a->resumed_from, summary(*a));
      }
    }
    res.verdict += s;
    return;
  }
  for (const auto& p : res.pairs) {
    if (p.diff.identical) {
      continue;
    }
    if (!p.resume) {
      return; // the first differing run was not resumed: compare_runs's verdict stands
    }
    const long differing = std::count_if(res.pairs.begin(), res.pairs.end(), [](const CheckPair& q) { return !q.diff.identical; });
    const std::string where = p.localization && p.localization->found ? p.localization->sentence : p.diff.verdict;
    res.verdict = fmt::format("FAIL: {} of {} runs differ from run-1; run-{} (killed after step {}, resumed from "
                              "step {}): {}; {}",
                              differing, res.runs.size() - 1, p.run, p.resume->killed_after, p.resume->resumed_from,
                              summary(*p.resume), where);
    return;
  }
}

} // namespace reprun
