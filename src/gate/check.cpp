// run_check: plan the runs from --vary, train each in a child process, diff against run 1, and
// localize a divergence by replaying from a checkpoint with trace "full".
#include "reprun/gate/check.hpp"

#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/audit/search.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/search_dir.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/search_space.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

constexpr long k_max_threads = 1024; // as determinism.threads and --threads
constexpr long k_max_ranks = 4096;   // as determinism.ranks and --ranks

struct Dim {
  std::string name;
  std::vector<long> values;
  std::vector<std::string> words; // device: the values as given ("cpu", "cuda")
};

std::vector<Dim> parse_vary(const std::vector<std::string>& vary) {
  std::vector<Dim> dims;
  for (const auto& v : vary) {
    auto eq = v.find('=');
    std::string name = v.substr(0, eq);
    if (eq == std::string::npos || eq + 1 >= v.size()) {
      throw Error("--vary " + v,
                  "expected DIM=V1,V2,... (threads, ranks, device, accumulation, eval_batch_size, resume or jobs)");
    }
    if (name != "threads" && name != "ranks" && name != "device" && name != "accumulation" &&
        name != "eval_batch_size" && name != "resume" && name != "jobs") {
      throw Error("--vary " + v, "unknown dimension '" + name +
                                     "'; expected threads, ranks, device, accumulation, eval_batch_size, resume or jobs" +
                                     did_you_mean(name, {"threads", "ranks", "device", "accumulation",
                                                         "eval_batch_size", "resume", "jobs"}));
    }
    Dim d{name, {}, {}};
    size_t start = eq + 1;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string tok = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (name == "device") {
        if (tok != "cpu" && tok != "cuda") {
          throw Error("--vary " + v, "'" + tok + "' is not a device; expected cpu or cuda (determinism.device)" +
                                         did_you_mean(tok, {"cpu", "cuda"}));
        }
        d.words.push_back(tok);
        d.values.push_back(static_cast<long>(d.words.size())); // counts the values; the words say them
        if (comma == std::string::npos) {
          break;
        }
        start = comma + 1;
        continue;
      }
      char* end = nullptr;
      errno = 0;
      long x = std::strtol(tok.c_str(), &end, 10);
      if (tok.empty() || *end != '\0' || errno != 0 || x < 1 || x > 1'000'000'000) {
        throw Error("--vary " + v, "'" + tok + "' is not a positive integer");
      }
      if (name == "jobs" && x > 256) {
        throw Error("--vary " + v, fmt::format("{} jobs: at most 256 (reprun search --jobs)", x));
      }
      if (name == "threads" && x > k_max_threads) {
        throw Error("--vary " + v, fmt::format("{} threads: at most {} (determinism.threads)", x, k_max_threads));
      }
      if (name == "ranks" && x > k_max_ranks) {
        throw Error("--vary " + v, fmt::format("{} ranks: at most {} (determinism.ranks)", x, k_max_ranks));
      }
      d.values.push_back(x);
      if (comma == std::string::npos) {
        break;
      }
      start = comma + 1;
    }
    for (const auto& other : dims) {
      if (other.name == d.name) {
        throw Error("--vary " + v, "dimension '" + d.name + "' given twice");
      }
    }
    dims.push_back(d);
  }
  return dims;
}

struct ChildResult {
  int exit_code = 0;
  bool killed = false;
};

// Runs reprun itself with `args`, both output streams appended to `log`, in a process group of its
// own (a terminal's Ctrl-C reaches check alone). SIGINT or SIGTERM to check (`stop`) is passed on
// as one SIGTERM, on which train checkpoints and stops; then this throws Error with
// ExitCode::interrupted naming `label`.
ChildResult run_child(const std::string& exe, const std::vector<std::string>& args, const std::string& log,
                      const std::atomic<bool>* stop, const std::string& label) {
  ProcessSpec spec;
  spec.argv.push_back(exe);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.stdout_path = log;
  spec.stderr_path = log;
  spec.append = true; // a resumed run adds to the log of its first process
  spec.own_process_group = true;
  spec.die_with_parent = true;
  spec.stop = stop;
  spec.stop_signal = SIGTERM;
  ProcessResult r = run_process(spec);
  if (r.stopped || (stop && stop->load())) {
    // Where the training stopped, from the run it wrote (-o RUN_DIR, or the run it resumed).
    std::string where = r.describe();
    for (size_t k = 0; k + 1 < args.size(); ++k) {
      if ((args[k] == "-o" || args[k] == "--resume") && RunDir::holds_run(args[k + 1])) {
        const ojson summary = RunDir::open(args[k + 1]).read_summary();
        where = fmt::format("it stopped after step {} with status {}", summary.value("steps", 0L),
                            summary.value("status", "unknown"));
      }
    }
    throw Error(fmt::format("{} was running (reprun {}): {}", label, args.front(), where), ExitCode::interrupted);
  }
  return {r.exit_code, r.signal != 0};
}

long value_for(const Dim* d, int run) {
  if (!d) {
    return 0;
  }
  return d->values[static_cast<size_t>(run - 1) % d->values.size()];
}

std::string word_for(const Dim& d, int run) { return d.words[static_cast<size_t>(run - 1) % d.words.size()]; }

// Steps of the checkpoints a run directory holds.
std::vector<long> checkpoint_steps(const std::string& dir) {
  std::vector<long> steps;
  for (const auto& c : RunDir::open(dir).checkpoints()) {
    steps.push_back(c.step);
  }
  return steps;
}

// The newest checkpoint both runs hold before `step` (0: the start).
long common_checkpoint_before(const std::string& a, const std::string& b, long step) {
  auto ca = checkpoint_steps(a);
  auto cb = checkpoint_steps(b);
  long from = 0;
  for (long s : ca) {
    if (s < step && std::find(cb.begin(), cb.end(), s) != cb.end()) {
      from = std::max(from, s);
    }
  }
  return from;
}

// What the runs of one check share: the binary, the config, the varied dimensions.
struct CheckPlan {
  std::string exe;
  std::string config;
  const Dim* threads = nullptr;
  const Dim* ranks = nullptr; // MPI ranks (train --ranks), each run under mpirun
  const Dim* device = nullptr; // cpu or cuda (train --device); a replay keeps its run's (the manifest's)
  const Dim* accumulation = nullptr;
  const Dim* eval_batch_size = nullptr;
  const Dim* resume = nullptr;
  std::vector<long> resume_from; // per resume value: the checkpoint a run killed after it continues from
  std::vector<std::string> sets;
  const std::atomic<bool>* stop = nullptr; // SIGINT/SIGTERM to check: the running training stops, check ends

  std::vector<std::string> thread_args(int run) const {
    if (!threads) {
      return {};
    }
    return {"--threads", std::to_string(value_for(threads, run))};
  }
  std::vector<std::string> rank_args(int run) const {
    if (!ranks) {
      return {};
    }
    return {"--ranks", std::to_string(value_for(ranks, run))};
  }
};

void fail_if_broken(const ChildResult& c, const std::string& who, const std::string& log, const char* what) {
  if (c.exit_code == 2 || c.exit_code == 127 || c.killed) {
    std::string why = last_line(log);
    throw Error(who, fmt::format("{} failed (exit {}): {} (log: {})", what, c.exit_code, why.empty() ? "no output" : why,
                                 log));
  }
}

// Trains run `i` (and, when it is to be killed, resumes it).
CheckRun train_run(const CheckPlan& plan, int i, const std::string& dir,
                   const std::function<void(const std::string&)>& note) {
  CheckRun run;
  run.index = i;
  run.dir = dir;
  // Not --quiet: the run's log says what train says (the data, evaluations, the resume point), so
  // that a CI job that keeps the logs keeps something on a pass too.
  std::vector<std::string> args = {"train", plan.config, "-o", run.dir};
  std::vector<std::string> parts;
  const auto targs = plan.thread_args(i);
  args.insert(args.end(), targs.begin(), targs.end());
  if (plan.threads) {
    parts.push_back(fmt::format("threads={}", value_for(plan.threads, i)));
  }
  const auto rargs_ranks = plan.rank_args(i);
  args.insert(args.end(), rargs_ranks.begin(), rargs_ranks.end());
  if (plan.ranks) {
    parts.push_back(fmt::format("ranks={}", value_for(plan.ranks, i)));
  }
  if (plan.device) {
    args.push_back("--device");
    args.push_back(word_for(*plan.device, i));
    parts.push_back("device=" + word_for(*plan.device, i));
  }
  if (plan.accumulation) {
    args.push_back("--set");
    args.push_back(fmt::format("training.accumulation={}", value_for(plan.accumulation, i)));
    parts.push_back(fmt::format("accumulation={}", value_for(plan.accumulation, i)));
  }
  if (plan.eval_batch_size) {
    args.push_back("--set");
    args.push_back(fmt::format("training.eval_batch_size={}", value_for(plan.eval_batch_size, i)));
    parts.push_back(fmt::format("eval_batch_size={}", value_for(plan.eval_batch_size, i)));
  }
  for (const auto& s : plan.sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  long kill_at = 0;
  if (plan.resume && i >= 2 && static_cast<size_t>(i - 2) < plan.resume->values.size()) {
    kill_at = plan.resume->values[static_cast<size_t>(i - 2)];
    run.resume_checkpoint = plan.resume_from[static_cast<size_t>(i - 2)];
    // Killed once the step's checkpoint, when it has one, is written: never between a step's
    // record and its checkpoint, where the resume would start from the checkpoint before.
    args.insert(args.end(), {"--kill-after-step", std::to_string(kill_at), "--kill-after-save"});
    parts.push_back(fmt::format("killed after step {} and resumed", kill_at));
  }
  auto join = [&] {
    run.variation.clear();
    for (const auto& p : parts) {
      run.variation += (run.variation.empty() ? "" : "; ") + p;
    }
  };
  join();
  const std::string log = run.dir + ".log";
  note(fmt::format("run-{}: training{}", i, run.variation.empty() ? "" : " (" + run.variation + ")"));
  ChildResult c = run_child(plan.exe, args, log, plan.stop, fmt::format("run-{}", i));
  if (kill_at > 0) {
    const std::string flag = fmt::format("--vary resume={}", kill_at);
    if (!c.killed) {
      fail_if_broken(c, fmt::format("run-{}", i), log, "training");
      // The variation did not happen: passing would certify a resume that was never tested.
      throw Error(flag, fmt::format("run-{} ended (exit {}) before step {}, so it was never killed and resumed (log: {})",
                                    i, c.exit_code, kill_at, log));
    }
    const auto kept = checkpoint_steps(run.dir);
    if (std::find(kept.begin(), kept.end(), run.resume_checkpoint) == kept.end()) {
      throw Error(flag, fmt::format("run-{} was killed after step {} without its checkpoint of step {} on disk, so no "
                                    "resume from it could be tested (log: {})",
                                    i, kill_at, run.resume_checkpoint, log));
    }
    std::vector<std::string> rargs = {"train", "--resume", run.dir};
    rargs.insert(rargs.end(), targs.begin(), targs.end());
    rargs.insert(rargs.end(), rargs_ranks.begin(), rargs_ranks.end());
    c = run_child(plan.exe, rargs, log, plan.stop, fmt::format("the resume of run-{}", i));
    fail_if_broken(c, fmt::format("run-{}", i), log, "the resume");
    const ojson resumes = RunDir::open(run.dir).read_manifest().value("resumes", ojson::array());
    run.resumed_from = resumes.empty() ? -1 : resumes.back().value("from_step", -1L);
    parts.back() += fmt::format(" from step {}", run.resumed_from);
    join();
  }
  run.exit_code = c.exit_code;
  fail_if_broken(c, fmt::format("run-{}", i), log, "training");
  try {
    run.status = RunDir::open(run.dir).read_summary().value("status", "unknown");
  } catch (const Error& e) {
    run.status = std::string("unreadable: ") + e.what();
  }
  return run;
}

// Every run's config, with its varied keys, checked as train will check it, before run 1 trains:
// a value that train refuses (accumulation=128 of a batch of 64) is refused now, naming the
// --vary value, rather than after the runs before it have trained in vain.
void validate_varied_configs(const CheckPlan& plan, int runs) {
  if (!plan.accumulation && !plan.eval_batch_size) {
    return; // the other dimensions are flags, checked when they are parsed
  }
  for (int i = 1; i <= runs; ++i) {
    std::vector<std::string> sets, parts;
    if (plan.accumulation) {
      sets.push_back(fmt::format("training.accumulation={}", value_for(plan.accumulation, i)));
      parts.push_back(fmt::format("accumulation={}", value_for(plan.accumulation, i)));
    }
    if (plan.eval_batch_size) {
      sets.push_back(fmt::format("training.eval_batch_size={}", value_for(plan.eval_batch_size, i)));
      parts.push_back(fmt::format("eval_batch_size={}", value_for(plan.eval_batch_size, i)));
    }
    sets.insert(sets.end(), plan.sets.begin(), plan.sets.end());
    try {
      load_config_file(plan.config, sets);
    } catch (const Error& e) {
      throw Error(fmt::format("--vary {} (run-{})", fmt::join(parts, " "), i), e.what());
    }
  }
}

// A config without a seed lets every run draw its own: the runs of a check would then differ by
// their seeds, never by what the check varies. One seed is drawn for all of them (the replays and
// resumes read it from their run's manifest) and the report says so.
void draw_one_seed(CheckPlan& plan, CheckResult& res, const std::function<void(const std::string&)>& note) {
  const Config cfg = load_config_file(plan.config, plan.sets);
  if (!cfg.seed_drawn) {
    return;
  }
  plan.sets.push_back(fmt::format("seed={}", cfg.seed));
  res.notes.push_back(fmt::format("{} sets no seed: every run of this check trains with seed {}, drawn once for the "
                                  "check (a run would draw its own otherwise); set \"seed\" in the config to choose it",
                                  res.config, cfg.seed));
  note(res.notes.back());
}

// The atomic reduction (determinism.reduction "atomic") is there to differ, and check expects it
// to: when its runs are identical, the report says so and why, rather than pass in silence. Its
// chunks of 8 samples are added into a gradient zeroed at each step in an order drawn per process;
// two partials added to zero give the same bits in either order, so runs can differ only from 3
// chunks per micro-batch (17 rows), or 2 where a micro-batch adds to a gradient that already holds
// the step's earlier micro-batches (accumulation above 1).
void warn_if_atomic_agreed(CheckResult& res, const std::function<void(const std::string&)>& note) {
  if (!res.identical) {
    return;
  }
  long rows = 0, batch = 0, accumulation = 1;
  bool atomic = false, can_differ = false;
  for (const auto& run : res.runs) {
    const ojson cfg = RunDir::open(run.dir).read_manifest().value("config", ojson::object());
    const ojson::json_pointer reduction("/determinism/reduction"), b("/training/batch_size"),
        acc("/training/accumulation");
    if (!cfg.contains(reduction) || cfg.at(reduction) != "atomic") {
      continue;
    }
    atomic = true;
    batch = cfg.value(b, 0L);
    accumulation = std::max(1L, cfg.value(acc, 1L));
    const long r = (batch + accumulation - 1) / accumulation, chunks = (r + 7) / 8;
    rows = std::max(rows, r);
    can_differ = can_differ || chunks >= 3 || (accumulation > 1 && chunks >= 2);
  }
  if (!atomic) {
    return;
  }
  std::string why =
      can_differ
          ? "the gate did not show that it can fail here; run it again, or reprun selftest, which requires it to"
          : fmt::format("here a micro-batch has at most {} rows (training.batch_size {}, accumulation {}), {} "
                        "chunk{} of 8 samples, whose partial sums add to the same bits in either order: atomic runs "
                        "can differ only from 17 rows per micro-batch (9 with accumulation above 1)",
                        rows, batch, accumulation, (rows + 7) / 8, rows > 8 ? "s" : "");
  res.notes.push_back(fmt::format("warning: determinism.reduction is \"atomic\", which check expects to differ, yet "
                                  "the {} runs are identical: {}",
                                  res.runs.size(), why));
  note(res.notes.back());
}

// A resume variation must stop the run before its last step and after a checkpoint, or it tests
// nothing: each step of `resume` is checked against run 1's length and checkpoint cadence (the
// same for every run: no dimension varies them) before any other run is trained. Returns, for each,
// the step of the checkpoint the resumed run must continue from: the newest at or before it.
std::vector<long> plan_resumes(const Dim& resume, const CheckRun& first) {
  const RunDir run = RunDir::open(first.dir);
  const long last = run.read_summary().value("steps", 0L);
  const long every = run.read_manifest().value(ojson::json_pointer("/config/training/checkpoint_every"), 0L);
  std::vector<long> from;
  for (long step : resume.values) {
    const std::string flag = fmt::format("--vary resume={}", step);
    if (step >= last) {
      throw Error(flag, fmt::format("step {} is at or past the run's last step ({}): the run would end before it is "
                                    "killed, so no resume would be tested; give a step from 1 to {}",
                                    step, last, last - 1));
    }
    const long k = every > 0 ? step / every * every : 0;
    if (k == 0) {
      const long first_ckpt = every > 0 ? std::min(every, last) : last;
      throw Error(flag, first_ckpt < last
                            ? fmt::format("the run saved no checkpoint by step {}: the first one is at step {} "
                                          "(training.checkpoint_every {}), so a run killed after step {} would start "
                                          "over and no resume would be tested; give a step from {} to {}, or a "
                                          "smaller training.checkpoint_every",
                                          step, first_ckpt, every, step, first_ckpt, last - 1)
                            : fmt::format("the run saved no checkpoint before its last step ({}; "
                                          "training.checkpoint_every {}), so no resume can be tested; set "
                                          "training.checkpoint_every below {}",
                                          last, every, last));
    }
    from.push_back(k);
  }
  return from;
}

// A resumed run that did not continue from the checkpoint the killed process left tested no
// resume, and its trainer skipped a checkpoint it wrote: the pair fails, whatever its numbers.
void require_resumed_from_checkpoint(CheckPair& pair, const CheckRun& run) {
  if (run.resumed_from < 0 || run.resumed_from == run.resume_checkpoint) {
    return;
  }
  DiffResult& d = pair.diff;
  const std::string what = fmt::format("DIFFERENT: the resume continued from step {}, not from the checkpoint of step "
                                       "{} the killed run left",
                                       run.resumed_from, run.resume_checkpoint);
  const std::string prefix = "DIFFERENT: ";
  d.verdict = d.identical ? what + " (the step records are identical: it trained the steps again)"
              : d.verdict.rfind(prefix, 0) == 0 ? what + "; " + d.verdict.substr(prefix.size())
                                                 : what + "; " + d.verdict;
  d.identical = false;
  d.diagnosis.insert(d.diagnosis.begin(),
                     Diagnosis{fmt::format("train --resume did not continue from the killed run's checkpoint of step "
                                           "{} (on disk when it was killed) but from step {}: it skipped a checkpoint "
                                           "it wrote, so a preempted run would silently start over",
                                           run.resume_checkpoint, run.resumed_from),
                               fmt::format("read {}.log (a resume names each checkpoint it skips, and why)", run.dir),
                               false});
}

// Forks `run` at checkpoint `from` into `replay` and trains the fork to `until` with trace full.
void replay_run(const CheckPlan& plan, const CheckRun& run, const std::string& replay, long from, long until) {
  std::vector<std::string> args = {"train",       "--resume", run.dir,
                                   "-o",          replay,     "--from-step",
                                   std::to_string(from),      "--quiet",
                                   "--set",       "determinism.trace=full",
                                   "--set",       "training.epochs=null",
                                   "--set",       fmt::format("training.steps={}", until)};
  const auto targs = plan.thread_args(run.index);
  args.insert(args.end(), targs.begin(), targs.end());
  const std::string log = replay + ".log";
  ChildResult c = run_child(plan.exe, args, log, plan.stop, fmt::format("the replay of run-{}", run.index));
  if (c.exit_code != 0 && c.exit_code != 1) {
    throw Error(replay, fmt::format("replay failed (exit {}): {}", c.exit_code, last_line(log)));
  }
}

// Replays runs 1 and i from their newest common checkpoint before the divergence, with trace
// "full", to name the phase, layer and tensor where they part.
Localization localize_pair(const CheckPlan& plan, const CheckResult& res, const CheckRun& other, const CheckPair& pair,
                           const DiffOptions& dopt) {
  const Divergence& d = pair.diff.divergence;
  const CheckRun& first = res.runs[0];
  const long from = common_checkpoint_before(first.dir, other.dir, d.step);
  // Replay past the original divergence: a non-deterministic cause may not recur at exactly that
  // step. It may not recur at all in one replay, so try up to three times.
  const long until = std::max(1L, std::min(pair.diff.a.last_step, d.step + 100));
  DiffResult rd;
  int attempts = 0;
  for (attempts = 1; attempts <= 3; ++attempts) {
    std::string base = (fs::path(res.work_dir) / fmt::format("replay-1-vs-{}", other.index)).string() +
                       (attempts > 1 ? fmt::format("-try{}", attempts) : "");
    const std::string ra = base + "/a", rb = base + "/b";
    std::error_code ec;
    fs::create_directories(base, ec); // the replays' logs go beside them
    replay_run(plan, first, ra, from, until);
    replay_run(plan, other, rb, from, until);
    rd = diff_runs(RunDir::open(ra).existing_file(RunFile::steps), RunDir::open(rb).existing_file(RunFile::steps),
                   dopt);
    if (rd.divergence.found) {
      break;
    }
  }
  return localize(d, rd, from, std::min(attempts, 3));
}

// A config with a search section: the whole search N times (reprun search in child processes,
// --vary jobs), each compared with the first as `reprun diff SEARCH_A SEARCH_B` does, and their
// leaderboards byte for byte.
CheckResult run_search_check(const CheckOptions& opt, const std::vector<Dim>& dims,
                             const std::function<void(const std::string&)>& note) {
  const Dim* jobs = nullptr;
  for (const auto& d : dims) {
    if (d.name != "jobs") {
      throw Error("--vary " + d.name, fmt::format("{} has a search section: a search check varies jobs only (each "
                                                  "trial's own execution settings are checked by checking its config)",
                                                  opt.config));
    }
    jobs = &d;
  }
  const int runs = count_runs(opt.runs, jobs ? jobs->values.size() : 0);
  const std::string exe = opt.self_exe.empty() ? fs::read_symlink("/proc/self/exe").string() : opt.self_exe;
  CheckResult res;
  res.config = opt.config;
  res.vary = opt.vary;
  res.work_dir = opt.work_dir;
  // As for a training check: a search without a seed would draw an experiment seed per run.
  std::vector<std::string> sets = opt.sets;
  if (const SearchConfig sc = load_search_config(opt.config, sets); sc.base.seed_drawn) {
    sets.push_back(fmt::format("seed={}", sc.base.seed));
    res.notes.push_back(fmt::format("{} sets no seed: every search of this check runs with experiment seed {}, drawn "
                                    "once for the check (a search would draw its own otherwise); set \"seed\" in the "
                                    "config to choose it",
                                    opt.config, sc.base.seed));
    note(res.notes.back());
  }
  const auto dirs = plan_run_dirs(res.work_dir, runs, "check");
  for (int i = 1; i <= runs; ++i) {
    CheckRun run;
    run.index = i;
    run.dir = dirs[static_cast<size_t>(i - 1)];
    const long j = jobs ? value_for(jobs, i) : 1;
    run.variation = jobs ? fmt::format("jobs={}", j) : "";
    std::vector<std::string> args = {"search", fs::absolute(opt.config).string(), "-o", run.dir, "--jobs",
                                     std::to_string(j), "--quiet"};
    for (const auto& s : sets) {
      args.insert(args.end(), {"--set", s});
    }
    const std::string log = run.dir + ".log";
    note(fmt::format("run-{}: searching{}", i, run.variation.empty() ? "" : " (" + run.variation + ")"));
    ChildResult c = run_child(exe, args, log, opt.stop, fmt::format("run-{}", i));
    if (c.exit_code != 0) {
      const std::string why = last_line(log);
      throw Error(fmt::format("run-{}", i), fmt::format("the search failed (exit {}): {} (log: {})", c.exit_code,
                                                        why.empty() ? "no output" : why, log));
    }
    run.status = "complete";
    res.runs.push_back(run);
  }
  DiffOptions dopt;
  auto differ = [&](const std::string& a, const std::string& b) {
    SearchDiff d = diff_searches(a, b, dopt);
    DiffResult r = d.run_diff ? *d.run_diff : DiffResult{};
    r.identical = d.identical;
    r.verdict = d.verdict;
    if (!r.a.is_run_dir) {
      r.a.label = a;
      r.b.label = b;
    }
    for (const auto& x : d.differences) {
      r.notes.push_back("search differs: " + x);
    }
    for (const auto& x : d.trial_differences) {
      r.notes.push_back(fmt::format("trial {}: {}", d.trial, x));
    }
    const std::string la = SearchDir::open(a).file(SearchFile::leaderboard_json);
    const std::string lb = SearchDir::open(b).file(SearchFile::leaderboard_json);
    if (r.identical && read_file(la) != read_file(lb)) {
      r.identical = false;
      r.verdict = "DIFFERENT: the leaderboards differ although every trial agrees (leaderboard.json)";
    }
    return r;
  };
  compare_runs(res, dopt, {}, fmt::format("{} searches identical: the same trials, runs and leaderboard", runs), differ);
  return res;
}

} // namespace

CheckResult run_check(const CheckOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.on_note) {
      opt.on_note(s);
    }
  };
  std::vector<Dim> dims = parse_vary(opt.vary);
  {
    std::error_code ec;
    if (fs::exists(opt.config, ec) && config_has_search(read_file(opt.config))) {
      return run_search_check(opt, dims, note);
    }
  }
  for (const auto& d : dims) {
    if (d.name == "jobs") {
      throw Error("--vary jobs", fmt::format("varies a search's parallelism, and {} has no search section",
                                             opt.config));
    }
  }
  CheckPlan plan;
  size_t longest = 0;
  for (const auto& d : dims) {
    (d.name == "threads"           ? plan.threads
     : d.name == "ranks"           ? plan.ranks
     : d.name == "device"          ? plan.device
     : d.name == "accumulation"    ? plan.accumulation
     : d.name == "eval_batch_size" ? plan.eval_batch_size
                                   : plan.resume) = &d;
    longest = std::max(longest, d.values.size() + (d.name == "resume" ? 1 : 0));
  }
  const int runs = count_runs(opt.runs, longest);
  std::error_code ec;
  if (!fs::exists(opt.config, ec)) {
    throw Error(opt.config, "no such file");
  }
  if (plan.device && std::find(plan.device->words.begin(), plan.device->words.end(), "cuda") != plan.device->words.end()) {
    if (const std::string why = cuda_unavailable(); !why.empty()) {
      throw Error("--vary device", why + "; no run can train on cuda here"); // before run 1 trains in vain
    }
  }
  plan.exe = opt.self_exe.empty() ? fs::read_symlink("/proc/self/exe").string() : opt.self_exe;
  plan.config = fs::absolute(opt.config).string();
  plan.sets = opt.sets;
  plan.stop = opt.stop;

  CheckResult res;
  res.config = opt.config;
  res.vary = opt.vary;
  res.work_dir = opt.work_dir;
  validate_varied_configs(plan, runs);
  draw_one_seed(plan, res, note);
  const auto dirs = plan_run_dirs(res.work_dir, runs, "check");
  for (int i = 1; i <= runs; ++i) {
    res.runs.push_back(train_run(plan, i, dirs[static_cast<size_t>(i - 1)], note));
    if (i == 1 && plan.resume) {
      plan.resume_from = plan_resumes(*plan.resume, res.runs[0]);
    }
  }
  DiffOptions dopt;
  if (plan.accumulation) {
    dopt.varied.push_back("config.training.accumulation");
  }
  if (plan.eval_batch_size) {
    dopt.varied.push_back("config.training.eval_batch_size");
  }
  compare_runs(
      res, dopt,
      [&](CheckPair& pair) {
        require_resumed_from_checkpoint(pair, res.runs[static_cast<size_t>(pair.run - 1)]);
        const Divergence& d = pair.diff.divergence;
        if (d.found && localizable(d.kind)) {
          note(fmt::format("run-{} differs from run-1 at step {}: replaying with trace full to localize", pair.run,
                           d.step));
          pair.localization = localize_pair(plan, res, res.runs[static_cast<size_t>(pair.run - 1)], pair, dopt);
        }
      },
      fmt::format("{} runs bitwise identical", runs));
  warn_if_atomic_agreed(res, note);
  return res;
}

} // namespace reprun
