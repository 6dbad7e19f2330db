// exec --vary resume=N on a data-parallel program (exec_resume.hpp): every rank stops at its first
// training forward after step N and waits (reprun's capture); once all have stopped, reprun kills the
// ranks and the launcher together (ProcessPlan::stop_world), runs the same command again, and checks
// that every rank resumed from the same checkpoint step. Each rank's step log is stitched from its
// killed and resumed processes, as rank 0's is.
#include "gate/exec_resume.hpp"

#include "reprun/core/error.hpp"
#include "reprun/gate/gate.hpp"
#include "reprun/record/steplog.hpp"

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <set>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// The last step each of `ranks` logged in process folder `files` (the capture's logs, before they are
// moved): "rank 1 (after step 3)".
std::string ranks_with_steps(const RunDir& files, const std::vector<long>& ranks) {
  std::string out;
  for (long rank : ranks) {
    const std::string path = rank == 0 ? files.file(RunFile::capture_steps)
                                       : files.rank(static_cast<int>(rank)).file(RunFile::capture_steps);
    long step = -1;
    try {
      const std::string line = last_line(path);
      step = line.empty() ? -1 : line_step(line);
    } catch (const Error&) {
    }
    out += fmt::format("{}rank {} ({})", out.empty() ? "" : ", ", rank,
                       step > 0 ? fmt::format("after step {}", step) : "before its first step");
  }
  return out;
}

std::vector<long> ranks_not_in(long world, const std::vector<long>& in) {
  std::vector<long> out;
  for (long r = 0; r < world; ++r) {
    if (std::find(in.begin(), in.end(), r) == in.end()) {
      out.push_back(r);
    }
  }
  return out;
}

} // namespace

ResumeRun exec_resumed_job(const ExecPlan& plan, int i, const std::string& dir, long kill_at, int world,
                           const std::vector<RunEvents>& before, std::vector<std::string>& failures,
                           bool& any_step_log, const ReplaySpec& replay) {
  ResumeRun out;
  out.audit.killed_after = kill_at;
  out.audit.world_size = world;
  RunInProgress r = begin_run(plan, i, dir, replay);
  r.res.variation += (r.res.variation.empty() ? "" : "; ") +
                     fmt::format("every rank stopped after step {}, the job killed and resumed", kill_at);
  const std::string flag = fmt::format("--vary resume={}", kill_at);
  const std::string run_label = replay.any() ? fmt::format("the replay of run-{}", i) : fmt::format("run-{}", i);

  // 1: every rank stops at its first training forward after step N; then the whole job is killed.
  const RunDir killed = r.run.process(1);
  ProcessPlan kp;
  kp.number = 1;
  kp.env["REPRUN_KILL_AFTER_STEP"] = std::to_string(kill_at);
  kp.env["REPRUN_BOUNDARY_STEPS"] = std::to_string(kill_at);
  kp.env["REPRUN_STOP_RANKS"] = "1";
  kp.stop_world = world;
  kp.stop_deadline = plan.opt.resume_deadline;
  const ProcessResult pr1 = run_program(plan, r, kp, killed, ReplaySpec{});
  stop_if_interrupted(plan, r, pr1);
  const JobStop stop = r.job_stop;
  const ProcessEvents ev1 = read_events(killed.file(RunFile::events));
  refuse_shared(before, i, {ev1});
  if (stop.deadline) {
    throw Error(flag, fmt::format("{}: {} did not stop within {} of the first rank that stopped after step {} (a "
                                  "rank waiting in a collective that a stopped rank never enters?); every process of "
                                  "the job was killed; give more time with --resume-deadline",
                                  run_label, ranks_with_steps(killed, ranks_not_in(world, stop.stopped)),
                                  duration_text(plan.opt.resume_deadline), kill_at));
  }
  if (static_cast<int>(stop.stopped.size()) < world) {
    if (pr1.exit_code != 0 && pr1.signal != SIGKILL) {
      if (plan.opt.on_failure) {
        plan.opt.on_failure(failure_block(run_label, pr1, r.run));
      }
      throw Error(fmt::format("{}: the program failed ({}) before every rank stopped after step {}; its output is "
                              "in {}",
                              run_label, pr1.describe(), kill_at, r.run.file(RunFile::stderr_log)));
    }
    throw Error(flag, fmt::format("{}: {} ended before its first training forward after step {}, so the job was "
                                  "never stopped and resumed",
                                  run_label, ranks_with_steps(killed, ranks_not_in(world, stop.stopped)), kill_at));
  }
  const StepLogFacts log1 = collect_step_log(plan, killed, killed.file(RunFile::steps));
  if (!log1.error.empty()) {
    throw Error(log1.error);
  }
  std::vector<std::string> notes;
  ojson facts1 = take_framework_facts(killed, notes);
  const RankLogs ranks1 = collect_rank_logs(killed, facts1, notes);
  if (!ranks1.errors.empty()) {
    throw Error(ranks1.errors.front());
  }
  if (!last_checkpoint_by(ev1, kill_at)) {
    throw Error(flag, fmt::format("{} was stopped after step {} but no rank had saved a checkpoint by then, so it "
                                  "has nothing to resume from",
                                  run_label, kill_at));
  }

  // 2: the same command again: each rank resumes through the program's own code.
  const RunDir resumed = r.run.process(2);
  const ProcessResult pr2 = run_resumed(plan, r, killed, resumed, replay, true);
  const ProcessEvents ev2 = read_events(resumed.file(RunFile::events));
  refuse_shared(before, i, {ev1, ev2});
  refuse_failed(plan, r, pr2, fmt::format("the resumed job of {}", run_label), flag);
  const StepLogFacts log2 = collect_step_log(plan, resumed, resumed.file(RunFile::steps));
  if (!log2.error.empty()) {
    throw Error(log2.error);
  }
  ojson framework = take_framework_facts(resumed, notes);
  const RankLogs ranks2 = collect_rank_logs(resumed, framework, notes);
  if (!ranks2.errors.empty()) {
    throw Error(ranks2.errors.front());
  }
  if (ranks2.world_size != world) {
    throw Error(flag, fmt::format("the resumed job of {} ran {} (run-1 ran {} ranks): a resume with another world "
                                  "size is not the same training",
                                  run_label,
                                  ranks2.world_size > 0 ? fmt::format("{} ranks", ranks2.world_size)
                                                        : std::string("without a process group"),
                                  world));
  }
  // Each rank: the checkpoint it resumed from, by its own loads.
  std::vector<std::string> started_over, each;
  std::map<long, std::vector<long>> by_step;
  for (long rank = 0; rank < world; ++rank) {
    const ProcessEvents mine = ev2.of_rank(rank);
    const long starts = std::count_if(mine.states.begin(), mine.states.end(), [](const StateEvent& s) { return s.at == "resumed"; });
    if (starts > 1) {
      throw Error(flag, fmt::format("rank {} of the resumed job of {} started {} times: its launcher restarted its "
                                    "ranks, so the job's records mix several attempts; run the audit without restarts "
                                    "(torchrun --max-restarts=0)",
                                    rank, run_label, starts));
    }
    const CheckpointEvent* load = resuming_load(mine);
    if (!load) {
      started_over.push_back(fmt::format("rank {}{}", rank, loads_phrase(mine)));
      continue;
    }
    by_step[load->resumes_step].push_back(rank);
    each.push_back(fmt::format("rank {} from step {} ({} at {})", rank, load->resumes_step, load->path, load->where));
    ResumeAudit::Rank rk;
    rk.rank = rank;
    rk.resumed_from = load->resumes_step;
    rk.checkpoint = load->path;
    rk.loaded_at = load->where;
    if (const CheckpointEvent* save = save_of(ev1, *load)) {
      rk.saved_at = save->where;
      if (rank == 0) {
        out.audit.saved_after_backward = save->after_backward;
      }
    }
    out.audit.ranks.push_back(rk);
  }
  if (!started_over.empty()) {
    std::string list;
    for (const auto& s : started_over) {
      list += (list.empty() ? "" : "; ") + s;
    }
    throw Error(flag, fmt::format("the resumed job of {} loaded no checkpoint of the stopped one before its first "
                                  "optimizer step on {}: it started over there; a script that resumes only when told "
                                  "needs --resume-arg (e.g. --resume-arg=--resume)",
                                  run_label, list));
  }
  if (by_step.size() > 1) {
    std::string list;
    for (const auto& s : each) {
      list += (list.empty() ? "" : ", ") + s;
    }
    throw Error(flag, fmt::format("the ranks of the resumed job of {} resumed from different steps: {}; every rank "
                                  "must load the checkpoint of the same step",
                                  run_label, list));
  }
  const ResumeAudit::Rank& first = out.audit.ranks.front();
  const long k = first.resumed_from;
  out.audit.resumed_from = k;
  out.audit.checkpoint = first.checkpoint;
  out.audit.loaded_at = first.loaded_at;
  out.audit.saved_at = first.saved_at;
  out.audit.captured = true;

  // Every rank's step log, stitched at step K.
  const StepLogFacts log = stitch(r.run, killed, resumed, k, log2.source);
  any_step_log = any_step_log || log.source != "none";
  RankLogs ranks;
  ranks.world_size = world;
  for (int rank = 1; rank < world; ++rank) {
    std::error_code ec;
    if (!fs::exists(killed.rank(rank).file(RunFile::steps), ec) || !fs::exists(resumed.rank(rank).file(RunFile::steps), ec)) {
      continue;
    }
    const RunDir dst = r.run.rank(rank);
    fs::create_directories(dst.path(), ec);
    if (ec) {
      throw Error(dst.path(), "cannot create: " + ec.message());
    }
    stitch(dst, killed.rank(rank), resumed.rank(rank), k, log2.source);
    ranks.logged.push_back(rank);
  }
  for (const auto& n : notes) {
    if (plan.opt.on_note) {
      plan.opt.on_note(n);
    }
  }
  out.run = finish_run(plan, r, pr2, log, framework, failures, ranks);
  return out;
}

} // namespace reprun
