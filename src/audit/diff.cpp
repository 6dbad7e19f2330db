// diff_runs: open both sides (their logs verified by the read that compares them), compare their
// metadata, walk their step logs (audit/step_walk.cpp), rank by rank for data-parallel programs.
#include "reprun/audit/diff.hpp"
#include "reprun/audit/inputs_diff.hpp"
#include "reprun/audit/op_localize.hpp"

#include "audit/diff_verdict.hpp"
#include "audit/step_walk.hpp"

#include "reprun/audit/cause.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/steplog.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <optional>
#include <sys/stat.h>

namespace reprun {

namespace fs = std::filesystem;

const char* divergence_kind_name(DivergenceKind k) {
  // In the order of enum class DivergenceKind.
  static constexpr const char* k_names[] = {"", "data order", "initial state", "computation", "run ended early",
                                            "steps differ"};
  return k_names[static_cast<size_t>(k)];
}

bool localizable(DivergenceKind k) {
  return k == DivergenceKind::data_order || k == DivergenceKind::initial_state || k == DivergenceKind::computation;
}

long DiffResult::material_meta_count() const {
  long n = 0;
  for (const auto& m : meta) {
    n += m.kind == MetaDelta::Kind::material ? 1 : 0;
  }
  return n;
}

namespace {

// "line 4: A `validation subset [3, 1]`, B `validation subset [0, 7]`" for the first line where two
// outputs differ ("line 4: B ends, A goes on with `...`" where one stops first); "" when they are
// equal or unreadable. Long lines are cut.
std::string first_stdout_difference(const std::string& path_a, const std::string& path_b) {
  std::ifstream fa(path_a, std::ios::binary), fb(path_b, std::ios::binary);
  if (!fa || !fb) {
    return "";
  }
  auto shown = [](const std::string& l) { return "`" + (l.size() > 100 ? l.substr(0, 97) + "..." : l) + "`"; };
  std::string la, lb;
  for (long n = 1;; ++n) {
    const bool ga = static_cast<bool>(std::getline(fa, la)), gb = static_cast<bool>(std::getline(fb, lb));
    if (!ga && !gb) {
      return "";
    }
    if (ga && gb && la == lb) {
      continue;
    }
    if (!ga || !gb) {
      return fmt::format("line {}: {} ends, {} goes on with {}", n, ga ? "B" : "A", ga ? "A" : "B", shown(ga ? la : lb));
    }
    return fmt::format("line {}: A {}, B {}", n, shown(la), shown(lb));
  }
}


// The ranks a data-parallel exec recorded (the manifest's "ranks": world size and the list of rank
// logs; never a glob of ranks/).
void read_ranks(const RunDir& run, RunSide& side) {
  const auto& m = side.manifest;
  if (!m.is_object() || !m.contains("ranks")) {
    return;
  }
  const std::string where = run.file(RunFile::manifest);
  const auto& ranks = m["ranks"];
  if (!ranks.is_object() || !ranks.contains("world_size") || !ranks["world_size"].is_number_integer() ||
      ranks["world_size"].get<long>() < 1 || ranks["world_size"].get<long>() > 65536 || !ranks.contains("logs") ||
      !ranks["logs"].is_object()) {
    throw Error(where, "\"ranks\" is not {\"world_size\": N, \"logs\": {\"<rank>\": \"<path>\", ...}}");
  }
  side.world_size = static_cast<int>(ranks["world_size"].get<long>());
  for (const auto& [key, path] : ranks["logs"].items()) {
    char* end = nullptr;
    const long r = std::strtol(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || r < 0 || r >= side.world_size || !path.is_string()) {
      throw Error(where, fmt::format("\"ranks.logs\": \"{}\" is not a rank of the world size {}", key,
                                     side.world_size));
    }
    if (r > 0) {
      side.rank_logs[static_cast<int>(r)] = run.rank(static_cast<int>(r)).existing_file(RunFile::steps);
    }
  }
}

// One side's steps.jsonl check against its summary, done by the walk's own read (one pass: its
// reader digests the records the summary covers as they are compared) and settled once the walk
// is done. An error met before that (a parse error in the log, the other side's summary) waits
// for the check: a damaged log's message wins, as when the logs were verified before they were
// compared, and in the same order (A's log, then B's).
struct StepsCheck {
  std::optional<RunDir> run; // set, with want and cover, when the summary recorded facts
  std::optional<LogFacts> want;
  long cover = -1;
  StepLogReader* reader = nullptr; // the walk's, once it opened the log
  bool done = true;

  void attach(StepLogReader& r) {
    reader = &r;
    if (!done) {
      r.digest_lines(cover);
    }
  }
  // Throws the "damaged" Error when the log is not what its summary recorded. A reader that
  // stopped early (an error) reads on to the end of what the facts cover; without one (the error
  // came first) the log is read here.
  void settle() {
    if (done) {
      return;
    }
    done = true;
    if (!reader) {
      run->check_facts(RunFile::steps, *want, run->log_facts(RunFile::steps, cover));
      return;
    }
    std::string_view line;
    while (!reader->digest_complete() && reader->next(line)) {
    }
    run->check_facts(RunFile::steps, *want, {reader->digested(), "xxh3:" + hex64(reader->digest_value())});
  }
};

// Opens one side. A run directory's logs are verified against its summary (RunDir::verify_logs,
// with steps.jsonl left to `check`): a damaged run is an error (exit 2), never reported as a
// divergence.
void open_side(const std::string& path, RunSide& side, std::vector<std::string>& notes, StepsCheck& check) {
  side.label = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    side.is_run_dir = true;
    RunDir run = RunDir::open(path);
    side.manifest = run.read_manifest();
    side.summary = run.read_summary();
    if (const std::optional<LogFacts> steps = run.recorded_facts(side.summary, RunFile::steps)) {
      check = {run, steps, RunDir::facts_cover(side.summary, *steps), nullptr, false};
      struct stat st {};
      if (::lstat(run.file(RunFile::steps).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        check.settle(); // missing, a link or not a file: checked (and named) now, as verify_logs does
      }
      if (const std::optional<LogFacts> evals = run.recorded_facts(side.summary, RunFile::evals)) {
        run.check_facts(RunFile::evals, *evals, run.log_facts(RunFile::evals, RunDir::facts_cover(side.summary, *evals)));
      }
      run.verify_rank_logs(side.summary); // a data-parallel exec's rank logs: read once here, before the walk
    } else {
      notes.push_back(run.verify_logs(side.summary).note); // no facts for steps.jsonl: evals.jsonl alone
    }
    side.status = side.summary.value("status", "unknown");
    side.steps_path = run.existing_file(RunFile::steps);
    read_ranks(run, side);
    return;
  }
  if (!fs::exists(path, ec)) {
    throw Error(path, "no such file or directory (expected a run directory or a steps.jsonl file)");
  }
  // A run directory's manifest.json or summary.json given for the directory: the step log is read
  // as JSON lines, and the first line of a JSON document would read as "not valid JSON".
  const fs::path parent = fs::path(path).parent_path().empty() ? fs::path(".") : fs::path(path).parent_path();
  const std::string file_name = fs::path(path).filename().string();
  if (file_name != RunDir::name(RunFile::steps) && fs::exists(parent / RunDir::name(RunFile::manifest), ec) &&
      file_name.size() > 5 && file_name.ends_with(".json")) {
    throw Error(path, fmt::format("a file of the run directory {}, not a step log: compare the directory itself",
                                  parent.string()));
  }
  side.steps_path = path;
}

std::string describe_mode(const DiffOptions& opt) {
  if (!opt.tolerance()) {
    return "bitwise";
  }
  std::string m = "tolerance (";
  if (opt.rtol) {
    m += fmt::format("rtol={} ", *opt.rtol);
  }
  if (opt.atol) {
    m += fmt::format("atol={} ", *opt.atol);
  }
  if (opt.max_ulps) {
    m += fmt::format("max-ulps={} ", *opt.max_ulps);
  }
  m.back() = ')';
  return m + "; checksums informational";
}


// The machines two runs ran on (the CPU, the host, the variables that choose the CPU's kernels)
// explain numbers that differ; where every step record agrees they are what the runs ran on, listed
// and not counted, so two machines with bitwise equal runs are IDENTICAL.
void settle_machine_facts(DiffResult& r) {
  std::vector<std::string> keys;
  for (auto& m : r.meta) {
    if (m.kind == MetaDelta::Kind::material && (m.category == "cpu" || m.category == "host")) {
      m.kind = MetaDelta::Kind::informational;
      m.why = "a machine fact: the numbers agree";
      keys.push_back(m.key);
    }
  }
  if (!keys.empty()) {
    r.notes.push_back(fmt::format("the runs ran on different machines or CPU kernels ({}{}): every step record agrees, "
                                  "so these are listed, not counted",
                                  fmt::join(keys.begin(), keys.begin() + std::min<size_t>(keys.size(), 4), ", "),
                                  keys.size() > 4 ? ", ..." : ""));
  }
}

// A data-parallel exec: every rank's log against the same rank's log of the other run. The
// divergence reported is the root rank's: at the first step where any rank's log differs, the
// lowest rank whose loss differs there (after an all-reduce every rank's parameters differ,
// whichever rank's data caused it), else the lowest rank that differs.
void compare_ranks(DiffResult& r, const DiffOptions& opt) {
  if (r.a.world_size == 0 || r.b.world_size == 0) {
    if (r.a.world_size > 1 || r.b.world_size > 1) {
      r.notes.push_back(fmt::format("{} recorded no ranks (no process group): its step log is compared with rank "
                                    "0's only",
                                    r.a.world_size == 0 ? "A" : "B"));
    }
    return;
  }
  if (r.a.world_size == 1) {
    r.divergence.rank = r.divergence.found ? 0 : -1;
    return;
  }
  auto loss_differs = [](const Divergence& d) { return d.found && d.loss_differs_from == d.step; };
  r.ranks.push_back({0, r.divergence.found, r.divergence.step, r.divergence.kind, loss_differs(r.divergence),
                     r.steps_compared});
  r.a.rank_records = r.a.lines;
  r.b.rank_records = r.b.lines;
  r.a.ranks_read = r.b.ranks_read = 1;
  std::vector<DiffResult> subs;
  for (int k = 1; k < r.a.world_size; ++k) {
    auto ia = r.a.rank_logs.find(k), ib = r.b.rank_logs.find(k);
    if (ia == r.a.rank_logs.end() || ib == r.b.rank_logs.end()) {
      if (ia != r.a.rank_logs.end() || ib != r.b.rank_logs.end()) {
        r.notes.push_back(fmt::format("rank {}: no step log in {}: not compared", k, ia == r.a.rank_logs.end() ? "A" : "B"));
      }
      continue;
    }
    DiffResult sub;
    sub.a = r.a;
    sub.b = r.b;
    sub.a.steps_path = ia->second;
    sub.b.steps_path = ib->second;
    sub.a.lines = sub.b.lines = 0;
    sub.a.last_step = sub.b.last_step = -1;
    StepLogReader ra(sub.a.steps_path, false), rb(sub.b.steps_path, true); // as diff_runs reads them
    walk_steps(sub, opt, ra, rb);
    for (const auto& n : sub.notes) {
      if (std::find(r.notes.begin(), r.notes.end(), n) == r.notes.end()) { // rank 0's note holds for it too
        r.notes.push_back(fmt::format("rank {}: {}", k, n));
      }
    }
    r.a.rank_records += sub.a.lines;
    r.b.rank_records += sub.b.lines;
    ++r.a.ranks_read;
    ++r.b.ranks_read;
    r.ranks.push_back({k, sub.divergence.found, sub.divergence.step, sub.divergence.kind,
                       loss_differs(sub.divergence), sub.steps_compared});
    subs.push_back(std::move(sub));
  }
  const RankResult* root = nullptr;
  for (const auto& rr : r.ranks) {
    if (!rr.found) {
      continue;
    }
    if (root == nullptr || rr.step < root->step || (rr.step == root->step && rr.loss_differs && !root->loss_differs)) {
      root = &rr;
    }
  }
  long total = 0;
  for (const auto& rr : r.ranks) {
    total += rr.steps_compared;
  }
  if (root != nullptr && root->rank != 0) {
    const auto it = std::find_if(subs.begin(), subs.end(), [&](const DiffResult& s) {
      return s.a.steps_path == r.a.rank_logs.at(root->rank);
    });
    r.divergence = it->divergence;
    r.growth = it->growth;
    r.peak = it->peak;
    r.loss_series = it->loss_series;
  }
  r.divergence.rank = root != nullptr ? root->rank : -1;
  r.steps_compared = total;
}

} // namespace

DiffResult diff_runs(const std::string& a, const std::string& b, const DiffOptions& opt) {
  DiffResult r;
  r.mode = describe_mode(opt);
  StepsCheck check_a, check_b;
  std::optional<StepLogReader> ra, rb;
  bool walked = false, one_sided = false;
  try {
    open_side(a, r.a, r.notes, check_a);
    open_side(b, r.b, r.notes, check_b);
    if (std::error_code ec; fs::equivalent(a, b, ec)) {
      r.notes.push_back(fmt::format("A and B are the same {} ({}): a run compared with itself is always identical",
                                    r.a.is_run_dir ? "directory" : "file", a));
    }
    if (r.a.is_run_dir != r.b.is_run_dir) {
      r.notes.push_back("one side is a run directory, the other a bare step log: metadata not compared");
    }
    if (!opt.ignore_meta.empty() && !(r.a.is_run_dir && r.b.is_run_dir)) {
      r.notes.push_back("--ignore-meta: a bare step log has no metadata, so nothing was ignored");
    }
    if (r.a.is_run_dir && r.b.is_run_dir) {
      r.meta = diff_manifests(r.a.manifest, r.b.manifest, opt, r.dataset);
      compare_inputs(r, a, b, opt);
    }
    if (world_sizes_differ(r)) {
      // Each rank's log holds its own shard's losses: logs of other world sizes are not comparable
      // (their digests are still checked, by settle).
      r.notes.push_back(fmt::format("world sizes differ ({} -> {}): the step logs are not compared (each rank's log "
                                    "holds the losses of its own shard of the data, and under FSDP the checksums of "
                                    "its own shard of the parameters)",
                                    r.a.world_size, r.b.world_size));
      for (auto& m : r.meta) {
        if (m.kind == MetaDelta::Kind::material &&
            (m.key.rfind("ranks.logs.", 0) == 0 || m.key.rfind("framework.distributed.devices.", 0) == 0)) {
          m.kind = MetaDelta::Kind::informational;
          m.why = "follows the world size";
        }
      }
    } else {
      // A read here, B ahead by a thread of its own when it is long (StepLogReader): the kernel's
      // copies of the two logs on both cores, and each byte of A compared and checked where it
      // was read; B's thread finds its lines, steps and (after the divergence) losses.
      ra.emplace(r.a.steps_path, false);
      check_a.attach(*ra);
      rb.emplace(r.b.steps_path, true);
      check_b.attach(*rb);
      one_sided = walk_steps(r, opt, *ra, *rb);
      walked = true;
    }
  } catch (...) {
    // Whatever went wrong, a damaged log is named first (settle throws then).
    check_a.settle();
    check_b.settle();
    throw;
  }
  check_a.settle();
  check_b.settle();
  if (walked) {
    compare_ranks(r, opt); // rank 0's log was walked: the other ranks' (verified by open_side)
  }
  for (const RunSide* s : {&r.a, &r.b}) {
    if (s->partial_tail > 0) {
      r.notes.push_back(fmt::format("{}: last line is incomplete ({} bytes, a write cut short): ignored",
                                    s->steps_path, s->partial_tail));
    }
  }
  if (!r.divergence.found && r.a.is_run_dir && r.b.is_run_dir && r.a.status != r.b.status) {
    r.notes.push_back(fmt::format("statuses differ: A {}, B {}", r.a.status, r.b.status));
  }
  if (r.a.is_run_dir && r.b.is_run_dir &&
      std::any_of(r.meta.begin(), r.meta.end(), [](const MetaDelta& m) {
        return m.kind == MetaDelta::Kind::material && m.key == "outputs.stdout_sha256";
      })) {
    r.stdout_difference = first_stdout_difference(RunDir::open(a).file(RunFile::stdout_log),
                                                  RunDir::open(b).file(RunFile::stdout_log));
    if (!r.stdout_difference.empty()) {
      r.notes.push_back("stdout differs first at " + r.stdout_difference);
    }
  }
  if (walked && !r.divergence.found && r.steps_compared > 0) {
    settle_machine_facts(r);
  }
  set_verdict(r, opt, one_sided);
  r.diagnosis = diagnose(r);
  if (opt.stored_traces) {
    localize_in_stored_traces(r, a, b);
  }
  return r;
}

void reclassify_divergence(DiffResult& r, DivergenceKind kind) {
  Divergence& d = r.divergence;
  if (!d.found || d.kind == kind) {
    return;
  }
  const std::string was = fmt::format("({})", d.classification());
  d.kind = kind;
  const size_t at = r.verdict.find(was);
  if (at != std::string::npos) {
    r.verdict.replace(at, was.size(), fmt::format("({})", d.classification()));
  }
  r.diagnosis = diagnose(r);
}

} // namespace reprun
