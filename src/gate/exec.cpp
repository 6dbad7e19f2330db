// run_exec: run an external training program N times with pinned determinism variables, record
// each run like a built-in one (manifest, steps.jsonl, summary, output, artifacts), then diff. The
// making of one run is exec_run.cpp's; a run killed and resumed is exec_resume.cpp's.
#include "reprun/gate/exec.hpp"

#include "gate/exec_resume.hpp"
#include "gate/exec_run.hpp"
#include "reprun/audit/cause.hpp"
#include "reprun/audit/diff.hpp"
#include "reprun/audit/inputs_diff.hpp"
#include "reprun/audit/op_localize.hpp"
#include "reprun/audit/optrace.hpp"
#include "reprun/audit/resume.hpp"
#include "reprun/core/error.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/run_dir.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <functional>
#include <optional>
#include <set>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

const std::vector<std::pair<std::string, std::string>>& default_pins() {
  static const std::vector<std::pair<std::string, std::string>> k_pins = {
      {"PYTHONHASHSEED", "0"},         {"CUBLAS_WORKSPACE_CONFIG", ":4096:8"}, {"TF_DETERMINISTIC_OPS", "1"},
      {"TF_CUDNN_DETERMINISTIC", "1"}, {"HOROVOD_FUSION_THRESHOLD", "0"},      {"REPRUN_SEED", "0"}};
  return k_pins;
}

namespace {

std::string intra_op_threads(const ojson& framework) {
  if (framework.is_object() && framework.contains("determinism") && framework["determinism"].is_object() &&
      framework["determinism"].contains("intra_op_threads") &&
      framework["determinism"]["intra_op_threads"].is_number_integer()) {
    return std::to_string(framework["determinism"]["intra_op_threads"].get<long>());
  }
  return "";
}

// The first step whose record in `replay` (a step log of a replay) differs from its record in
// `original`, among the steps up to `upto` both logs hold; -1 when every one of them is equal.
long first_differing_record(const std::string& replay, const std::string& original, long upto) {
  std::ifstream ra(replay), rb(original);
  std::string la, lb;
  for (long step = 1; step <= upto && std::getline(ra, la) && std::getline(rb, lb); ++step) {
    if (la != lb) {
      return step;
    }
  }
  return -1;
}

// "PYTHONHASHSEED=0": the default pins exec set (not kept from the environment) that can change
// what this program computes: PYTHONHASHSEED for one that ran Python, CUBLAS_WORKSPACE_CONFIG for one
// that ran on CUDA. "" with --no-pin.
std::string effective_pins(const ExecPlan& plan, const CheckResult& res) {
  if (!plan.opt.pin || res.runs.empty()) {
    return "";
  }
  const ojson manifest = RunDir::open(res.runs.front().dir).read_manifest();
  // Python: the program itself, or a process it started (the capture's framework facts: a shell
  // script that runs python3).
  const bool python = !plan.interpreter.is_null() || (manifest.contains("framework") && manifest["framework"].is_object());
  std::string out;
  for (const auto& [name, value] : default_pins()) {
    const bool applies = (name == "PYTHONHASHSEED" && python) ||
                         (name == "CUBLAS_WORKSPACE_CONFIG" && ran_on_cuda(manifest));
    if (applies && !plan.base_env.count(name)) {
      out += (out.empty() ? "" : ", ") + name + "=" + value;
    }
  }
  return out;
}

// The verdict of an exec whose last run failed: how, after which step, and what the comparison
// with run-1 up to the failure found (its pair's report follows).
void failure_verdict(CheckResult& res) {
  res.identical = false;
  const CheckRun& failed = res.runs.back();
  const std::string status = failed.status.rfind("failed: ", 0) == 0 ? failed.status.substr(8) : failed.status;
  const std::string how = failed.timed_out ? status : "failed (" + status + ")";
  const long steps = RunDir::open(failed.dir).read_summary().value("steps", 0L);
  std::string compared = "nothing to compare it with";
  if (!res.pairs.empty()) {
    const DiffResult& d = res.pairs.back().diff;
    if (d.steps_compared == 0) {
      compared = "it logged no step record to compare with run-1's";
    } else if (!d.divergence.found || d.divergence.kind == DivergenceKind::ended_early) {
      compared = fmt::format("up to its failure its {} step records are identical to run-1's", d.steps_compared);
    } else {
      compared = fmt::format("before its failure it parts from run-1 at step {}{} ({})", d.divergence.step,
                             d.ranks.empty() ? "" : fmt::format(" on rank {}", d.divergence.rank),
                             d.divergence.classification());
    }
  }
  const std::string when = failed.timed_out ? (steps > 0 ? fmt::format(" (its last step: {})", steps) : " (before its first step)")
                           : steps > 0      ? fmt::format(" after step {}", steps)
                                            : " before its first step";
  res.verdict = fmt::format("ERROR: run-{} {}{}; {}", failed.index, how, when, compared);
}

bool compiled(const ojson& framework) {
  return framework.is_object() && framework.contains("compiled") && framework["compiled"] == true;
}

// A data-parallel program whose root rank's first differing op reads the result of a collective:
// the k-th collective of every rank is the same one, so its inputs are compared rank by rank. The
// collective is blamed only when every rank gave it the same inputs in both runs; otherwise the
// search goes on in the lowest rank whose input to it differs (up to one hop a rank).
void follow_collectives(OpDivergence& od, int& rank, int world,
                        const std::function<std::string(const std::string&, int)>& trace) {
  for (int hop = 0; hop < world && od.kind == OpDivergence::Kind::inputs_differ && od.collective >= 0; ++hop) {
    const long k = od.collective;
    int follow = -1;
    std::optional<OpRecord> at_root_a, at_root_b;
    for (int q = 0; q < world; ++q) {
      std::optional<OpRecord> ca = nth_collective(trace("a", q), k), cb = nth_collective(trace("b", q), k);
      if (q == rank) {
        at_root_a = ca;
        at_root_b = cb;
      }
      if (ca && cb && ca->in != cb->in && follow < 0) {
        follow = q;
      }
    }
    if (!at_root_a || !at_root_b) {
      return; // a trace ended before the collective: the root rank's own finding stands
    }
    if (follow < 0 || follow == rank) {
      OpDivergence c;
      c.kind = follow < 0 ? OpDivergence::Kind::same_inputs : OpDivergence::Kind::inputs_differ;
      c.a = *at_root_a;
      c.b = *at_root_b;
      c.ops_compared = od.ops_compared;
      if (follow == rank) {
        c.input_origin = "this rank's own input to the collective differs, written outside the traced ops (DDP "
                         "fills its gradient buckets in C++)";
      }
      od = std::move(c);
      return;
    }
    rank = follow;
    od = compare_op_traces(trace("a", rank), trace("b", rank));
  }
}

// No run made an optimizer step, and every run went on from a checkpoint no run of this exec saved
// (a leftover of an earlier one): the runs compared a file with itself, and nothing was tested.
void refuse_untested(const CheckResult& res, const std::vector<RunEvents>& events) {
  std::set<std::string> saved;
  for (const auto& r : events) {
    for (const auto& p : r.processes) {
      for (const auto& e : p.io) {
        if (e.save && !e.sha256.empty()) {
          saved.insert(e.sha256);
        }
      }
    }
  }
  const CheckpointEvent* leftover = nullptr;
  for (size_t i = 0; i < res.runs.size(); ++i) {
    const ojson summary = RunDir::open(res.runs[i].dir).read_summary();
    if (summary.value("steps", 0L) > 0 || i >= events.size()) {
      return;
    }
    const CheckpointEvent* loaded = nullptr;
    for (const auto& p : events[i].processes) {
      for (const auto& e : p.io) {
        if (!e.save && !e.sha256.empty() && !saved.count(e.sha256) &&
            (std::find(e.holds.begin(), e.holds.end(), "optimizer") != e.holds.end() ||
             std::find(e.holds.begin(), e.holds.end(), "parameters") != e.holds.end())) {
          loaded = &e;
        }
      }
    }
    if (!loaded) {
      return;
    }
    leftover = leftover ? leftover : loaded;
  }
  if (leftover) {
    throw Error(fmt::format("nothing was tested: no run made an optimizer step, and each went on from {}{}, a "
                            "checkpoint no run of this exec saved (left by an earlier run); remove it, or give each "
                            "run its own folder with {{run_dir}} in the program's arguments (e.g. --ckpt "
                            "{{run_dir}}/ckpt.pt)",
                            leftover->path, leftover->where.empty() ? "" : " (loaded at " + leftover->where + ")"));
  }
}

// Under --vary, the runs differ in the varied variables only: when each replay, at its run's value,
// gives its own run's records again, the variable decides the numbers and is the cause (with the
// op found, and a fix that acts on it); when a replay does not, the runs also differ at one value,
// and the cause found stands as it is.
void varied_cause(const ExecPlan& plan, CheckPair& pair, const CheckRun& run_a, const CheckRun& run_b,
                  const fs::path& replays, long upto, const OpRecord& r, bool same_inputs, OpCause& cause) {
  std::vector<std::string> values;
  for (const auto& v : plan.vary) {
    const std::string& va = v.values[static_cast<size_t>(run_a.index - 1) % v.values.size()];
    const std::string& vb = v.values[static_cast<size_t>(run_b.index - 1) % v.values.size()];
    if (va != vb) {
      values.push_back(plan.vary.size() == 1 ? fmt::format("{} {} {}", vb, same_inputs ? "than with" : "against", va)
                                             : fmt::format("{}={} {} {}={}", v.name, vb,
                                                           same_inputs ? "than with" : "against", v.name, va));
    }
  }
  if (values.empty()) {
    return;
  }
  auto again = [&](const CheckRun& run) {
    const std::string replay = RunDir::open((replays / fmt::format("run-{}", run.index)).string()).file(RunFile::steps);
    std::ifstream in(replay);
    std::string line;
    long held = 0;
    while (held < upto && std::getline(in, line)) {
      ++held;
    }
    return held >= std::min(upto, r.step) && first_differing_record(replay, RunDir::open(run.dir).file(RunFile::steps),
                                                                     upto) < 0;
  };
  std::string joined;
  for (const auto& v : values) {
    joined += (joined.empty() ? "" : ", and with ") + v;
  }
  if (!again(run_a) || !again(run_b)) {
    // The cause that says the variable changes the numbers is contradicted: withdrawn.
    auto& causes = pair.diff.diagnosis;
    causes.erase(std::remove_if(causes.begin(), causes.end(), [](const Diagnosis& d) { return d.claims_varied; }),
                 causes.end());
    cause.reason += "; the runs also differ at one value: a replay at its run's value did not give that run's records "
                    "again, so the varied variable is not the only cause";
    return;
  }
  std::string names;
  for (const auto& v : plan.vary) {
    names += (names.empty() ? "" : ", ") + v.name;
  }
  // An op with the same inputs gives other bits; one whose inputs already differ is where the runs,
  // reading or computing other inputs, part.
  cause.reason = fmt::format("the results depend on {}: {} with {} (each run's replay at its own value gave its "
                             "records again); {}",
                             names, same_inputs ? "it gives other bits" : "the runs part here", joined, cause.reason);
  if (cause.fix_kind != "kernels" && cause.fix_kind != "threads") {
    cause.fix = fmt::format("the same {} in every run and on every machine, or compare with a tolerance (reprun diff "
                            "--rtol/--atol); {}",
                            names, cause.fix);
  }
}

} // namespace

// Operation-level localization of a pair that diverged at a step: replays run-1 and run-K with an
// op trace up to that step (up to 3 attempts, until the traces differ), names the first op whose
// outputs differ, and for an op with identical inputs saves them with a repro.py. A resume pair's
// traces start at the resume boundary: run-1's after the checkpoint's step, run-K's in its resumed
// process (the replay kills and resumes it again, in its own directory).
std::optional<Localization> localize_ops(const ExecPlan& plan, const CheckResult& res, CheckPair& pair,
                                         const ResumeRun* rr) {
  const Divergence& dv = pair.diff.divergence;
  const ojson& ma = pair.diff.a.manifest;
  const ojson& mb = pair.diff.b.manifest;
  if (plan.capture_dir.empty() || !plan.opt.localize || !dv.found || !ma.is_object() || !ma.contains("framework") ||
      !ma["framework"].is_object() || !ma["framework"].contains("torch")) {
    return std::nullopt; // not a PyTorch program (a plain Python one's facts name no torch), or no step to replay up to
  }
  const ojson& fa = ma["framework"];
  const ojson fb = mb.is_object() && mb.contains("framework") ? mb["framework"] : ojson();
  const long limit = std::max({dv.line, dv.step, 1L});
  const CheckRun& run_a = res.runs.front();
  auto run_b = std::find_if(res.runs.begin(), res.runs.end(), [&](const CheckRun& r) { return r.index == pair.run; });
  Localization loc;
  loc.step = dv.step;
  const bool ranked = !pair.diff.ranks.empty();
  int rank = ranked ? std::max(dv.rank, 0) : 0;
  constexpr int k_attempts = 3;
  // A program that calls torch.compile: the op trace cannot see inside compiled code, so the replays
  // run with compilation off, and what they find stands only where their numbers are the compiled
  // runs' numbers.
  const bool compile_off = compiled(fa) || compiled(fb);
  if (const std::string changed = input_changed_between(pair.diff); !changed.empty()) {
    // A replay reads the files as they are now: it cannot make run-1 again if one changed since.
    loc.note = fmt::format("op-level localization: not replayed: a file the program read changed between the runs "
                           "({}), and a replay reads it as it is now, so it cannot reproduce both runs",
                           changed);
    return loc;
  }
  OpDivergence od;
  std::string late_failure; // a replay that failed after its traces were complete, said in the note
  int attempt = 1;
  for (; attempt <= k_attempts; ++attempt) {
    late_failure.clear();
    const fs::path root = fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run, attempt);
    std::vector<std::string> failures;
    bool any_log = false;
    ReplaySpec spec;
    spec.trace_steps = limit;
    spec.trace_from = rr ? rr->audit.resumed_from : -1;
    spec.compile_off = compile_off;
    const std::string dir_a = (root / fmt::format("run-{}", run_a.index)).string();
    const std::string dir_b = (root / fmt::format("run-{}", run_b->index)).string();
    try {
      exec_run(plan, run_a.index, dir_a, failures, any_log, spec);
      if (rr) {
        exec_resumed_run(plan, run_b->index, dir_b, rr->audit.killed_after, static_cast<int>(rr->audit.world_size), {},
                         failures, any_log, spec);
      } else {
        exec_run(plan, run_b->index, dir_b, failures, any_log, spec);
      }
    } catch (const Error& e) { // a replay that was not killed or did not resume: the runs' own verdict stands
      if (e.code() == ExitCode::interrupted) {
        throw;
      }
      failures.push_back(e.what());
    }
    // A data-parallel program: the root rank's traces (the rank whose own numbers part first).
    auto traced = [&](const std::string& dir, int q) {
      const RunDir d = rr && dir == dir_b ? RunDir::open(dir).process(2) : RunDir::open(dir);
      return q > 0 ? d.rank(q).file(RunFile::op_trace) : d.file(RunFile::op_trace);
    };
    if (!failures.empty()) {
      // A replay whose program failed after both traces stopped where they were asked to (a
      // data-parallel job whose teardown aborts at exit, as torch 1.13's gloo may: "terminate
      // called without an active exception") has what the localization needs; else its failure
      // is the answer (a replay that failed before it wrote its run directory has no trace either).
      auto stopped = [&](const std::string& dir) {
        try {
          const std::string end = op_trace_end(traced(dir, rank));
          return end == "steps" || end == "max_ops";
        } catch (const Error&) {
          return false;
        }
      };
      if (!stopped(dir_a) || !stopped(dir_b)) {
        loc.note = "op-level localization: a replay failed: " + failures.front();
        return loc;
      }
      late_failure = fmt::format("; a replay's program failed after its op traces were complete ({}): they are used",
                                 failures.front());
    }
    const std::string trace_a = traced(dir_a, rank);
    const std::string trace_b = traced(dir_b, rank);
    std::error_code ec;
    if (!fs::exists(trace_a, ec) || !fs::exists(trace_b, ec)) {
      loc.note = "op-level localization: the replays wrote no op trace (torch was not imported, or the program "
                 "replaced sys.meta_path)";
      return loc;
    }
    try {
      od = compare_op_traces(trace_a, trace_b, rr != nullptr);
      if (ranked) {
        follow_collectives(od, rank, pair.diff.a.world_size, [&](const std::string& side, int q) {
          return traced(side == "a" ? dir_a : dir_b, q);
        });
      }
    } catch (const Error& e) { // a damaged trace: the runs' own verdict stands
      loc.note = std::string("op-level localization: ") + e.what();
      return loc;
    }
    if (od.kind != OpDivergence::Kind::none) {
      break;
    }
  }
  if (od.kind == OpDivergence::Kind::none) {
    loc.note = fmt::format("op-level localization: {} replays traced {} ops each up to step {} and found them "
                           "identical; the difference did not recur (rare non-determinism), or it is outside "
                           "torch's ops (Python code that computes the logged values){}",
                           k_attempts, od.ops_compared, limit, late_failure);
    return loc;
  }
  std::string compile_note;
  if (compile_off) {
    // Up to the op found, the replays ran the same kernels as the compiled runs unless an op ran in
    // compiled code; then the finding stands only where the replays' records before the divergent
    // step equal the compiled runs' (the compiled kernels gave the eager numbers so far).
    const OpRecord& found = od.a.op.empty() ? od.b : od.a;
    const fs::path root = fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run, std::min(attempt, k_attempts));
    long differ = -1;
    if (od.compiled_code) {
      const long upto = dv.step - 1;
      differ = upto < 1 ? 1
                        : first_differing_record(RunDir::open((root / fmt::format("run-{}", run_a.index)).string())
                                                     .file(RunFile::steps),
                                                 RunDir::open(run_a.dir).file(RunFile::steps), upto);
    }
    if (differ > 0) {
      std::string why = "no step before it shows whether the compiled kernels give the eager numbers";
      if (differ > 1 || dv.step > 1) {
        why = fmt::format("the replay's numbers differ from the compiled run's from step {}", differ);
      }
      loc.note = fmt::format(
          "op-level localization: the program runs torch.compile'd code, whose kernels the op trace cannot see; "
          "replayed with compilation off (TORCHDYNAMO_DISABLE=1), the runs part at {} at {}, step {}, {}, and "
          "{}, so that need not be where the compiled runs part. To localize inside the compiled code: run both "
          "with compilation off (reprun exec --pin TORCHDYNAMO_DISABLE=1 ...): if they still part, that exec "
          "names the op; if not, the difference is in the compiled kernels (torch.compile(..., "
          "backend=\"aot_eager\") runs the same graph through ATen ops the trace sees)",
          short_op_name(found.op), found.where, found.step,
          found.compiled ? "an op of the compiled code" : "after ops of the compiled code", why);
      return loc;
    }
    compile_note = "; replayed with compilation off (TORCHDYNAMO_DISABLE=1: the program calls torch.compile), ";
    compile_note += od.compiled_code
                        ? fmt::format("the replay's numbers equal the compiled run's up to step {}", dv.step - 1)
                        : std::string("and no op up to this one runs in compiled code");
  }
  if ((od.a.op.empty() ? od.b : od.a).phase == "init") {
    // The runs part before the training started: in their initial state (model init, data), whatever
    // the step logs, which record after each step, could tell.
    reclassify_divergence(pair.diff, DivergenceKind::initial_state);
  }
  OpCause cause = op_cause_between(od, pair.diff);
  bool resume_explains = false;
  if (rr) {
    if (auto c = resume_op_cause(od, rr->audit)) { // a state the resume did not restore explains the op
      cause = *c;
      resume_explains = true;
    }
  }
  const OpRecord& r = od.a.op.empty() ? od.b : od.a;
  if (!rr && !resume_explains) {
    varied_cause(plan, pair, run_a, *run_b, fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run,
                                                                                     std::min(attempt, k_attempts)),
                 std::max(limit, r.step), r, od.kind == OpDivergence::Kind::same_inputs, cause);
  }
  const std::string repro_fix = cause.fix_kind;
  loc = apply_op_divergence(pair.diff, od, cause, od.kind == OpDivergence::Kind::same_inputs && !resume_explains,
                            ranked ? rank : -1);
  loc.note = fmt::format("op trace{}: {} ops identical before it (replay attempt {} of {}){}{}",
                         ranked ? fmt::format(" of rank {}", rank) : "", od.ops_compared,
                         std::min(attempt, k_attempts), k_attempts, compile_note, late_failure);
  if (ranked && od.kind == OpDivergence::Kind::same_inputs) {
    // Saving an op's inputs ends the process that runs it: one rank gone leaves the others waiting in
    // their next collective.
    loc.note += "; no repro.py for an op of a data-parallel program";
  } else if (od.kind == OpDivergence::Kind::same_inputs && !resume_explains) {
    const fs::path root = fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run, attempt);
    ReplaySpec save;
    save.save_index = od.a.index;
    save.trace_from = rr ? rr->audit.resumed_from : -1;
    save.save_dir = (fs::path(plan.opt.work_dir) / fmt::format("repro-run-{}", pair.run)).string();
    save.compile_off = compile_off;
    save.fix_kind = repro_fix;
    std::string ta = intra_op_threads(fa), tb = intra_op_threads(fb);
    save.threads = ta.empty() ? tb : tb.empty() || tb == ta ? ta : ta + "," + tb;
    std::vector<std::string> failures;
    bool any_log = false;
    try {
      exec_run(plan, run_a.index, (root / "save").string(), failures, any_log, save);
    } catch (const Error& e) {
      if (e.code() == ExitCode::interrupted) {
        throw;
      }
      failures.push_back(e.what());
    }
    std::error_code ec;
    const fs::path repro = fs::path(save.save_dir) / "repro.py";
    if (fs::is_regular_file(repro, ec)) {
      loc.repro = repro.string();
      loc.note += fmt::format("; {} reruns {} on the saved inputs, with and without the fix (python3 {})",
                              repro.string(), short_op_name(r.op), repro.string());
    } else {
      loc.note += "; the op's inputs could not be saved for a repro.py (see " + (root / "save").string() + ")";
    }
  }
  return loc;
}

std::string tail_lines(const std::string& path, size_t lines) {
  constexpr std::streamoff k_max = 64 * 1024;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return "";
  }
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > k_max ? size - k_max : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  size_t pos = text.size();
  for (size_t n = 0; n < lines && pos != std::string::npos && pos > 0; ++n) {
    pos = text.rfind('\n', pos - 1);
  }
  if (pos != std::string::npos && pos < text.size() && (text[pos] == '\n')) {
    ++pos;
  } else if (pos == std::string::npos) {
    pos = 0;
  }
  return text.substr(pos);
}

// exec --runs 1: run-1 recorded as a reference, nothing compared. Its verdict says where it is, what
// it logged and read, and how to compare a later run with it.
CheckResult recorded_run(const ExecPlan& plan, CheckResult& res) {
  const CheckRun& run = res.runs.front();
  if (!res.error.empty()) {
    failure_verdict(res);
    return res;
  }
  const RunDir dir = RunDir::open(run.dir);
  const long steps = dir.read_summary().value("steps", 0L);
  std::string what = steps > 0 ? fmt::format("{} step record{}", steps, steps == 1 ? "" : "s") : "no step log";
  const ojson manifest = dir.read_manifest();
  if (manifest.contains("inputs") && manifest["inputs"].is_object() && manifest["inputs"].contains("counts")) {
    const ojson& c = manifest["inputs"]["counts"];
    const long data = c.value("data", 0L), folders = c.value("data_folders", 0L), code = c.value("code", 0L);
    what += fmt::format(", read {} data file{}{} and {} code file{}", data, data == 1 ? "" : "s",
                        folders > 0 ? fmt::format(" (and listed {} folder{})", folders, folders == 1 ? "" : "s") : "",
                        code, code == 1 ? "" : "s");
    const ojson& u = manifest["inputs"].value("unrecorded", ojson::array());
    if (u.is_array() && !u.empty()) {
      what += fmt::format("; {} process{} not recorded (inputs.unrecorded in its manifest)", u.size(),
                          u.size() == 1 ? "" : "es");
    }
  } else if (!plan.opt.record_inputs) {
    what += ", inputs not recorded (--no-inputs)";
  }
  res.identical = true;
  res.recorded = true;
  // "-o ../A" from a subfolder: the run's own path, not ".../src/../A/run-1" (a path without "." or
  // ".." is shown as it is).
  std::string shown = run.dir;
  if (fs::path(run.dir).lexically_normal().string() != run.dir) {
    std::error_code ec;
    const fs::path real = fs::weakly_canonical(run.dir, ec);
    shown = ec ? run.dir : real.string();
  }
  res.verdict = fmt::format("RECORDED: run-1 of the program in {} ({}); compare a later run with it: reprun diff {} "
                            "OTHER_RUN",
                            shown, what, shown);
  return res;
}

CheckResult run_exec(const ExecOptions& opt) {
  const World& world = opt.world ? *opt.world : real_world();
  const ExecPlan plan = plan_exec(opt, world);
  size_t longest = plan.resume.empty() ? 0 : plan.resume.size() + 1;
  for (const auto& v : plan.vary) {
    longest = std::max(longest, v.values.size());
  }
  if (opt.runs == 1 && (!plan.vary.empty() || !plan.resume.empty())) {
    throw Error("--runs 1", "records one run and compares nothing, so --vary has nothing to vary: give --runs 2 or "
                            "more, or leave --vary out");
  }
  const int runs = count_runs(opt.runs, longest, 1);
  CheckResult res;
  res.kind = "exec";
  res.work_dir = opt.work_dir;
  res.vary = opt.vary;
  res.config = plan.command;
  const auto dirs = plan_run_dirs(opt.work_dir, runs, "exec");
  std::vector<std::string> failures;
  bool any_step_log = false;
  std::vector<RunEvents> events;
  std::vector<ResumeRun> resumed;
  for (int i = 1; i <= runs; ++i) {
    const std::string& dir = dirs[static_cast<size_t>(i - 1)];
    const long kill_at = i >= 2 && static_cast<size_t>(i - 2) < plan.resume.size() ? plan.resume[static_cast<size_t>(i - 2)] : 0;
    if (kill_at > 0) {
      if (i == 2) {
        require_resumable(plan, res.runs.front(), events.front());
      }
      ResumeRun rr = exec_resumed_run(plan, i, dir, kill_at, run_world_size(res.runs.front().dir), events, failures,
                                      any_step_log);
      res.runs.push_back(rr.run);
      events.push_back({i, run_events(RunDir::open(rr.run.dir))});
      resumed.push_back(std::move(rr));
    } else {
      ProcessPlan p;
      if (i == 1 && !plan.resume.empty()) {
        // The state a resume must restore, at run-1's saves up to the last step a run is killed after.
        p.env["REPRUN_BOUNDARY_STEPS"] = std::to_string(*std::max_element(plan.resume.begin(), plan.resume.end()));
      }
      res.runs.push_back(exec_run(plan, i, dir, failures, any_step_log, {}, p));
      events.push_back({i, run_events(RunDir::open(res.runs.back().dir))});
    }
    const CheckRun& made = res.runs.back();
    if (!failures.empty() && made.failure.empty()) {
      throw Error(failures.front()); // a malformed step log: bad input, not a run to compare
    }
    // A run that read another run's checkpoint is an error of the setup, never a divergence.
    const SharingFindings sharing = check_sharing(events);
    if (!sharing.error.empty()) {
      throw Error(sharing.error);
    }
    for (const auto& n : sharing.notes) {
      if (opt.on_note) {
        opt.on_note(n);
      }
      res.notes.push_back(n);
    }
    if (!made.failure.empty()) {
      // The program failed, was killed or ran past the time limit: no more runs, but what ran is
      // compared up to the failure, and the report says both (exit 2).
      res.error = failures.front();
      res.failure = made.failure;
      res.timed_out = made.timed_out;
      if (i < runs) {
        res.notes.push_back(fmt::format("run-{} failed, so {} not started", i,
                                        i + 1 == runs ? fmt::format("run-{} was", runs)
                                                      : fmt::format("runs {} to {} were", i + 1, runs)));
      }
      break;
    }
  }
  if (runs == 1) {
    return recorded_run(plan, res);
  }
  refuse_untested(res, events);
  DiffOptions dopt;
  dopt.ignore_meta = opt.ignore_meta;
  for (const auto& v : plan.vary) {
    dopt.varied.push_back("env." + v.name);
    dopt.varied.push_back("pins." + v.name);
  }
  if (!plan.vary.empty()) {
    // Nothing but the varied variables differs between the runs of one exec, so a determinism or CPU
    // kernel fact of the framework that differs follows from them (OMP_NUM_THREADS sets torch's intra-op threads;
    // a script may read a variable of its own): varied on purpose too, never counted.
    dopt.varied.push_back("framework.determinism");
    dopt.varied.push_back("framework.cpu"); // OPENBLAS_CORETYPE sets OpenBLAS's core, OMP_NUM_THREADS its threads
  }
  // The pins that a normal launch of this program would not have: a PASS holds with them only.
  const std::string pinned = effective_pins(plan, res);
  compare_runs(
      res, dopt,
      [&](CheckPair& pair) {
        // The automatic step log never has a step 0: the op-level localization tells initial weights
        // from computation instead (a built-in run's note, of nothing an exec user can act on).
        auto& notes = pair.diff.notes;
        notes.erase(std::remove_if(notes.begin(), notes.end(),
                                   [](const std::string& n) {
                                     return n.rfind("the logs have no step-0 record", 0) == 0 ||
                                            n.rfind("the logs' step 0 is a training step", 0) == 0;
                                   }),
                    notes.end());
        if (!opt.pin && !pair.diff.identical && !plan.base_env.count("PYTHONHASHSEED")) {
          pair.diff.notes.push_back("pins were off (--no-pin) and PYTHONHASHSEED is unset: Python randomizes string "
                                    "hashing per process, so set and dict order of strings differ between runs");
        }
        auto rr = std::find_if(resumed.begin(), resumed.end(), [&](const ResumeRun& r) { return r.run.index == pair.run; });
        const bool failed = !res.failure.empty() && pair.run == res.runs.back().index;
        if (rr != resumed.end()) {
          audit_resume_pair(plan, res, pair, *rr);
        } else if (!pair.diff.identical && !failed) {
          pair.localization = localize_ops(plan, res, pair);
        }
        if (!any_step_log) {
          pair.diff.notes.push_back("no step log (write REPRUN_STEP_LOG, or give --loss-regex): compared the exit "
                                    "status, stdout and --artifact files only, so the difference cannot be localized "
                                    "by step");
        }
      },
      fmt::format("{} runs of the program identical{}", runs,
                  any_step_log ? ""
                               : plan.opt.artifacts.empty()
                                   ? " (no step log; compared exit code and stdout)"
                                   : fmt::format(" (no step log; compared exit code, stdout and {} artifact{})",
                                                 plan.opt.artifacts.size(), plan.opt.artifacts.size() == 1 ? "" : "s")),
      [&](const std::string& a, const std::string& b) {
        DiffOptions o = dopt;
        if (std::any_of(resumed.begin(), resumed.end(), [&](const ResumeRun& r) { return fs::equivalent(r.run.dir, b); })) {
          // A killed run's stdout holds the killed process's lines and the resumed one's: not comparable.
          const std::string why = "not comparable: a killed and resumed run's stdout holds both processes' lines";
          o.incomparable.push_back({"outputs.stdout_sha256", why});
          o.incomparable.push_back({"outputs.stdout_bytes", why});
        }
        return diff_runs(a, b, o);
      });
  if (!resumed.empty()) {
    resume_verdict(res, resumed);
  }
  if (res.identical && res.error.empty() && !pinned.empty()) {
    res.verdict += ", with " + pinned + " pinned"; // last: after what a resume held across too
    res.notes.push_back(fmt::format("the pins ({}) hide what a normal launch of the program varies, such as the "
                                    "order of a set of strings: reprun exec --no-pin runs it as it is launched "
                                    "normally",
                                    pinned));
  }
  if (!res.error.empty()) {
    failure_verdict(res);
  }
  return res;
}

} // namespace reprun
