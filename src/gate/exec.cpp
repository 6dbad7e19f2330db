// run_exec: run an external training program N times with pinned determinism variables, record
// each run like a built-in one (manifest, steps.jsonl, summary, output, artifacts), then diff.
#include "reprun/gate/exec.hpp"

#include "reprun/audit/diff.hpp"
#include "reprun/audit/optrace.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/core/process.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/meta/snapshot.hpp"
#include "reprun/record/step_record.hpp"
#include "reprun/record/steplog.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/train/backend.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <regex>
#include <sstream>

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

struct Pin {
  std::string name, value, source; // source: pinned | kept (already set) | --pin | vary
};

struct VaryEnv {
  std::string name;
  std::vector<std::string> values;
};

std::pair<std::string, std::string> split_assignment(const std::string& s, const std::string& flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(flag + " " + s, "expected NAME=VALUE");
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

std::vector<VaryEnv> parse_vary(const std::vector<std::string>& vary) {
  std::vector<VaryEnv> out;
  for (const auto& v : vary) {
    if (v.rfind("env:", 0) != 0) {
      throw Error("--vary " + v, "exec varies environment variables: expected env:NAME=V1,V2,...");
    }
    auto [name, list] = split_assignment(v.substr(4), "--vary");
    VaryEnv e{name, {}};
    size_t start = 0;
    for (;;) {
      size_t comma = list.find(',', start);
      e.values.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) {
        break;
      }
      start = comma + 1;
    }
    out.push_back(e);
  }
  return out;
}

// Interpreter version when the program is Python (directly, or a script with a python shebang).
ojson interpreter_of(const World& world, const std::string& exe) {
  std::string interp;
  std::string base = fs::path(exe).filename().string();
  if (base.rfind("python", 0) == 0) {
    interp = exe;
  } else {
    std::string head(256, '\0');
    {
      std::ifstream in(exe, std::ios::binary); // the first line only: the program may be a large binary
      in.read(head.data(), static_cast<std::streamsize>(head.size()));
      head.resize(static_cast<size_t>(in.gcount()));
    }
    {
      if (head.rfind("#!", 0) == 0) {
        std::string line = head.substr(2, head.find('\n') - 2);
        if (line.find("python") != std::string::npos) {
          // "#!/usr/bin/env python3" or "#!/usr/bin/python3 -u"
          std::vector<std::string> words;
          size_t p = 0;
          while (p < line.size()) {
            size_t q = line.find(' ', p);
            std::string w = line.substr(p, q == std::string::npos ? std::string::npos : q - p);
            if (!w.empty()) {
              words.push_back(w);
            }
            p = q == std::string::npos ? line.size() : q + 1;
          }
          if (!words.empty()) {
            interp = fs::path(words[0]).filename() == "env" && words.size() > 1 ? words[1] : words[0];
          }
        }
      }
    }
  }
  if (interp.empty()) {
    return nullptr;
  }
  auto v = world.run_command({interp, "--version"}, "");
  std::string s = v ? *v : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
    s.pop_back();
  }
  return {{"path", interp}, {"version", s.empty() ? ojson(nullptr) : ojson(s)}};
}

// Validates a program's step log; on the first bad line keeps the valid prefix and returns the
// error ("" when the log is fine).
std::string validate_step_log(const std::string& path, long& records, double& last_loss, bool& has_loss) {
  std::string text = read_file(path);
  size_t pos = 0, keep = 0;
  long lineno = 0, prev = -1;
  std::string error;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line(text.data() + pos, (nl == std::string::npos ? text.size() : nl) - pos);
    ++lineno;
    try {
      if (nl == std::string::npos) {
        throw Error(fmt::format("{}:{}", path, lineno), "last line is not terminated by a newline (cut short?)");
      }
      if (line.empty()) {
        throw Error(fmt::format("{}:{}", path, lineno), "empty line");
      }
      ParsedStep p = parse_step_line(line, path, lineno);
      if (p.step <= prev) {
        throw Error(fmt::format("{}:{}", path, lineno),
                    fmt::format("step {} after step {} (duplicate or decreasing step)", p.step, prev));
      }
      prev = p.step;
      if (p.has_loss) {
        last_loss = p.loss;
        has_loss = true;
      }
    } catch (const Error& e) {
      error = e.what();
      break;
    }
    ++records;
    pos = nl + 1;
    keep = pos;
  }
  if (!error.empty()) {
    write_file_atomic(path, std::string_view(text).substr(0, keep));
  }
  return error;
}

// Builds steps.jsonl from the program's stdout with --loss-regex: group 1 is the loss, or, with
// two groups, group 1 the step and group 2 the loss.
long steps_from_stdout(const std::string& stdout_path, const std::regex& re, const std::string& steps_path) {
  std::string text = read_file(stdout_path);
  std::string out;
  long n = 0, prev = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, (nl == std::string::npos ? text.size() : nl) - pos);
    pos = nl == std::string::npos ? text.size() : nl + 1;
    std::smatch m;
    if (!std::regex_search(line, m, re) || m.size() < 2) {
      continue;
    }
    std::string loss_s = m[m.size() >= 3 ? 2 : 1].str();
    char* end = nullptr;
    double loss = std::strtod(loss_s.c_str(), &end);
    if (loss_s.empty() || *end != '\0') {
      continue;
    }
    long step = prev + 1;
    if (m.size() >= 3) {
      step = std::strtol(m[1].str().c_str(), nullptr, 10);
      if (step <= prev) {
        continue;
      }
    }
    prev = step;
    out += format_loss_line(step, loss);
    ++n;
  }
  write_file_atomic(steps_path, out);
  return n;
}

// What every run of one exec shares: the program, its hashed argument files, the pins.
struct ExecPlan {
  const ExecOptions& opt;
  const World& world;
  std::string exe;
  std::optional<std::regex> loss_re;
  std::vector<VaryEnv> vary;
  std::vector<std::pair<std::string, std::string>> user_pins;
  ojson argv_files = ojson::array();
  ojson interpreter;
  std::map<std::string, std::string> base_env;
  std::string command; // the program's command line, for messages
  std::string capture_dir; // reprun's Python package, put on PYTHONPATH ("" when not capturing)
};

// What a replay adds to a run: an op trace up to `trace_steps` optimizer steps, or the inputs of
// op `save_index` and a repro.py in `save_dir`.
struct ReplaySpec {
  long trace_steps = 0;
  long save_index = -1;
  std::string save_dir, fix_kind, threads;
};

// reprun's Python package: beside the binary in the build folder (python/), or under
// share/reprun/python of an installation (bin/reprun). "" when neither holds it.
std::string find_capture_package() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    return "";
  }
  for (const fs::path& dir : {exe.parent_path() / "python", exe.parent_path().parent_path() / "share" / "reprun" / "python"}) {
    if (fs::is_regular_file(dir / "sitecustomize.py", ec) && fs::is_regular_file(dir / "reprun_capture" / "__init__.py", ec)) {
      return fs::weakly_canonical(dir, ec).string();
    }
  }
  return "";
}

ExecPlan plan_exec(const ExecOptions& opt, const World& world) {
  if (opt.argv.empty()) {
    throw Error("exec: give the program to run after --, e.g. reprun exec -- python3 train.py");
  }
  ExecPlan plan{.opt = opt, .world = world, .exe = resolve_executable(opt.argv[0]), .vary = parse_vary(opt.vary)};
  if (!opt.loss_regex.empty()) {
    try {
      plan.loss_re.emplace(opt.loss_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error("--loss-regex " + opt.loss_regex, std::string("invalid regular expression: ") + e.what());
    }
    if (plan.loss_re->mark_count() < 1) {
      throw Error("--loss-regex " + opt.loss_regex, "needs a capture group for the loss, e.g. 'loss=([0-9.eE+-]+)'");
    }
  }
  for (const auto& p : opt.pins) {
    plan.user_pins.push_back(split_assignment(p, "--pin"));
  }
  // Argument files (the script itself): hashed once, before the runs.
  for (size_t i = 0; i < opt.argv.size(); ++i) {
    std::error_code ec;
    const std::string path = i == 0 ? plan.exe : opt.argv[i];
    if (fs::is_regular_file(path, ec)) {
      plan.argv_files.push_back({{"index", i}, {"path", opt.argv[i]}, {"sha256", sha256_file(path)}});
    }
  }
  plan.interpreter = interpreter_of(world, plan.exe);
  plan.base_env = world.environment();
  if (opt.capture && !plan.interpreter.is_null()) {
    plan.capture_dir = find_capture_package();
    if (plan.capture_dir.empty() && opt.on_note) {
      opt.on_note("reprun's Python package (sitecustomize.py, reprun_capture/) is not beside this binary nor "
                  "under share/reprun/python: no automatic step log or op trace for this program");
    }
  }
  for (const auto& a : opt.argv) {
    plan.command += (plan.command.empty() ? "" : " ") + a;
  }
  return plan;
}

// Replaces any earlier pin of the same name.
void set_pin(std::vector<Pin>& pins, Pin p) {
  pins.erase(std::remove_if(pins.begin(), pins.end(), [&](const Pin& q) { return q.name == p.name; }), pins.end());
  pins.push_back(std::move(p));
}

// The child's environment for run `i`: ours, the default pins, --pin, --vary.
std::vector<Pin> child_environment(const ExecPlan& plan, int i, std::map<std::string, std::string>& env,
                                   std::string& variation) {
  env = plan.base_env;
  std::vector<Pin> pins;
  if (plan.opt.pin) {
    for (const auto& [name, value] : default_pins()) {
      auto it = env.find(name);
      if (it != env.end()) {
        pins.push_back({name, it->second, "kept (already set)"});
      } else {
        env[name] = value;
        pins.push_back({name, value, "pinned"});
      }
    }
  }
  for (const auto& [name, value] : plan.user_pins) {
    env[name] = value;
    set_pin(pins, {name, value, "--pin"});
  }
  for (const auto& v : plan.vary) {
    const std::string& value = v.values[static_cast<size_t>(i - 1) % v.values.size()];
    env[v.name] = value;
    set_pin(pins, {v.name, value, "vary"});
    variation += (variation.empty() ? "" : "; ") + v.name + "=" +
                 (looks_secret(v.name) ? std::string("(redacted)") : value);
  }
  return pins;
}

// Copies the --artifact files into the run directory and hashes them.
ojson collect_artifacts(const RunDir& run, const std::vector<std::string>& files) {
  ojson artifacts = ojson::array();
  for (const auto& a : files) {
    std::error_code ec;
    if (!fs::is_regular_file(a, ec)) {
      artifacts.push_back({{"path", a}, {"missing", true}});
      continue;
    }
    std::string copy = run.artifact_path(a);
    fs::copy_file(a, copy, fs::copy_options::overwrite_existing, ec);
    uint64_t size = 0;
    std::string digest = sha256_file(copy, &size);
    artifacts.push_back({{"path", a}, {"size", size}, {"sha256", digest}});
  }
  return artifacts;
}

// The step log a run leaves: the program's own (validated), or one built from its stdout with
// --loss-regex, or an empty one.
struct StepLogFacts {
  std::string source = "program"; // program | loss-regex | automatic | none
  std::string error;
  long records = 0;
  std::optional<double> last_loss;
};

StepLogFacts collect_step_log(const ExecPlan& plan, const RunDir& run) {
  StepLogFacts f;
  const std::string steps_path = run.file(RunFile::steps);
  const std::string auto_path = run.file(RunFile::capture_steps);
  refuse_link(steps_path);
  refuse_link(auto_path);
  std::error_code ec;
  const bool program_log = fs::exists(steps_path, ec);
  if (!program_log && !plan.loss_re && fs::exists(auto_path, ec)) {
    fs::rename(auto_path, steps_path); // the program wrote none: reprun_capture's is the step log
    f.source = "automatic";
  } else {
    fs::remove(auto_path, ec); // the program's own log (or --loss-regex) wins
  }
  if (program_log || f.source == "automatic") {
    double last = 0;
    bool has = false;
    f.error = validate_step_log(steps_path, f.records, last, has);
    if (has) {
      f.last_loss = last;
    }
  } else if (plan.loss_re) {
    f.source = "loss-regex";
    f.records = steps_from_stdout(run.file(RunFile::stdout_log), *plan.loss_re, steps_path);
  } else {
    f.source = "none";
    write_file_atomic(steps_path, "");
  }
  return f;
}

ojson exec_manifest(const ExecPlan& plan, const RunDir& run, const std::vector<Pin>& pins,
                    const std::map<std::string, std::string>& env, const std::string& created,
                    const std::string& log_source) {
  ojson m;
  m["format"] = k_run_format;
  m["kind"] = "exec";
  m["created"] = created;
  m["command_line"] = plan.opt.argv;
  m["working_directory"] = plan.world.current_directory();
  ojson pin_json = ojson::object();
  for (const auto& p : pins) {
    // The value reaches the program, but a secret-looking name is never written down.
    pin_json[p.name] = {{"value", looks_secret(p.name) ? "(redacted)" : p.value}, {"source", p.source}};
  }
  m["program"] = {{"argv", plan.opt.argv},
                  {"executable", plan.exe},
                  {"argv_files", plan.argv_files},
                  {"interpreter", plan.interpreter},
                  {"run_dir", run.path()},
                  {"step_log", log_source}};
  m["pins"] = pin_json;
  EnvironmentWorld child(plan.world, env);
  SnapshotOptions so;
  so.env_allow = plan.opt.env_allow;
  so.kernels = kernel_facts();
  for (const auto& p : pins) {
    so.env_allow.push_back(p.name);
  }
  ojson snap = machine_snapshot(child, so);
  for (auto it = snap.begin(); it != snap.end(); ++it) {
    m[it.key()] = *it;
  }
  return m;
}

// The framework facts reprun_capture wrote (null when it wrote none); the file is removed.
ojson take_framework_facts(const RunDir& run, std::vector<std::string>& notes) {
  const std::string path = run.file(RunFile::framework_facts);
  refuse_link(path);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    return nullptr;
  }
  ojson j = ojson::parse(read_file(path), nullptr, false);
  fs::remove(path, ec);
  if (j.is_discarded() || !j.is_object()) {
    notes.push_back(fmt::format("{}: the framework facts were malformed and are not recorded", path));
    return nullptr;
  }
  return j;
}

// Runs the program once into `dir` (a replay adds what `replay` asks for); failures (exit status,
// bad step log) go to `failures`.
CheckRun exec_run(const ExecPlan& plan, int i, const std::string& dir, std::vector<std::string>& failures,
                  bool& any_step_log, const ReplaySpec& replay = {}) {
  CheckRun res;
  res.index = i;
  res.dir = fs::absolute(dir).string();
  RunDir run = RunDir::create(res.dir);
  RunLock lock = run.lock();
  std::map<std::string, std::string> env;
  std::vector<Pin> pins = child_environment(plan, i, env, res.variation);
  const std::string label = replay.trace_steps > 0 || replay.save_index >= 0 ? fmt::format("the replay of run-{}", i)
                                                                              : fmt::format("run-{}", i);
  env["REPRUN_RUN_DIR"] = run.path();
  env["REPRUN_STEP_LOG"] = run.file(RunFile::steps);
  if (!plan.capture_dir.empty()) {
    auto pp = env.find("PYTHONPATH");
    env["PYTHONPATH"] = plan.capture_dir + (pp == env.end() || pp->second.empty() ? "" : ":" + pp->second);
    env["REPRUN_CAPTURE"] = "1";
    env["REPRUN_AUTO_STEP_LOG"] = run.file(RunFile::capture_steps);
    env["REPRUN_FRAMEWORK_FILE"] = run.file(RunFile::framework_facts);
    if (replay.trace_steps > 0) {
      env["REPRUN_OP_TRACE"] = run.file(RunFile::op_trace);
      env["REPRUN_OP_TRACE_STEPS"] = std::to_string(replay.trace_steps);
    }
    if (replay.save_index >= 0) {
      env["REPRUN_OP_SAVE"] = std::to_string(replay.save_index);
      env["REPRUN_OP_SAVE_DIR"] = replay.save_dir;
      env["REPRUN_OP_FIX"] = replay.fix_kind;
      env["REPRUN_OP_THREADS"] = replay.threads;
    }
  }
  if (plan.opt.on_note) {
    const std::string what = replay.trace_steps > 0
                                 ? fmt::format("replay of run-{} with an op trace up to step {}", i, replay.trace_steps)
                             : replay.save_index >= 0 ? fmt::format("replay of run-{} to save the inputs of op {}", i,
                                                                    replay.save_index)
                                                      : fmt::format("run-{}", i);
    plan.opt.on_note(fmt::format("{}: {}{}", what, plan.command, res.variation.empty() ? "" : " (" + res.variation + ")"));
  }
  const std::string created = plan.world.now_iso8601();
  ProcessSpec spec;
  spec.argv = plan.opt.argv;
  spec.argv[0] = plan.exe;
  spec.env = env;
  spec.stdout_path = run.file(RunFile::stdout_log);
  spec.stderr_path = run.file(RunFile::stderr_log);
  spec.tee_fd = plan.opt.quiet ? -1 : 2;
  ProcessResult pr = run_process(spec);

  StepLogFacts log = collect_step_log(plan, run);
  any_step_log = any_step_log || log.source != "none";
  ojson artifacts = collect_artifacts(run, plan.opt.artifacts);
  uint64_t out_bytes = 0;
  std::string out_digest = sha256_file(spec.stdout_path, &out_bytes);
  std::vector<std::string> notes;
  ojson framework = take_framework_facts(run, notes);
  for (const auto& n : notes) {
    if (plan.opt.on_note) {
      plan.opt.on_note(n);
    }
  }
  ojson m = exec_manifest(plan, run, pins, env, created, log.source);
  if (!framework.is_null()) {
    m["framework"] = framework;
  }
  m["outputs"] = {{"exit_code", pr.exit_code}, {"stdout_sha256", out_digest}, {"stdout_bytes", out_bytes},
                  {"artifacts", artifacts}};
  run.write_manifest(m);
  RunSummary summary;
  summary.status = pr.exit_code == 0 ? "complete" : "failed: " + pr.describe();
  summary.exit_code = pr.exit_code;
  summary.steps = log.records;
  summary.train_loss = log.last_loss;
  summary.has_eval_fields = false;
  summary.wall_seconds = pr.wall_seconds;
  summary.steps_log = run.log_facts(RunFile::steps);
  run.write_summary(summary);
  res.exit_code = pr.exit_code;
  res.status = summary.status;
  if (pr.exit_code != 0 && plan.opt.on_failure) {
    constexpr size_t k_tail = 20;
    std::string shown = spec.stderr_path;
    std::string tail = tail_lines(shown, k_tail);
    if (tail.empty()) {
      shown = spec.stdout_path;
      tail = tail_lines(shown, k_tail);
    }
    std::string block =
        tail.empty() ? fmt::format("{} failed ({}); it wrote nothing to stderr or stdout", label, pr.describe())
                     : fmt::format("{} failed ({}); the last lines of {}:", label, pr.describe(), shown);
    std::istringstream in(tail);
    for (std::string l; std::getline(in, l);) {
      block += "\n  | " + l;
    }
    plan.opt.on_failure(block);
  }
  if (pr.exit_code != 0) {
    failures.push_back(fmt::format("{}: the program failed ({}); its output is in {}", label, pr.describe(),
                                   spec.stderr_path));
  }
  if (!log.error.empty()) {
    failures.push_back(log.error + " (the valid prefix is kept)");
  }
  return res;
}

// "OMP_NUM_THREADS is 1 in A and 2 in B" for the thread variables the runs set differently.
std::string env_thread_difference(const ojson& ma, const ojson& mb) {
  std::string out;
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    auto get = [&](const ojson& m) -> std::string {
      if (m.is_object() && m.contains("env") && m["env"].is_object() && m["env"].contains(name) &&
          m["env"][name].is_string()) {
        return m["env"][name].get<std::string>();
      }
      return "unset";
    };
    const std::string a = get(ma), b = get(mb);
    if (a != b) {
      out += fmt::format("{}{} is {} in A and {} in B", out.empty() ? "" : "; ", name, a, b);
    }
  }
  return out;
}

std::string intra_op_threads(const ojson& framework) {
  if (framework.is_object() && framework.contains("determinism") && framework["determinism"].is_object() &&
      framework["determinism"].contains("intra_op_threads") &&
      framework["determinism"]["intra_op_threads"].is_number_integer()) {
    return std::to_string(framework["determinism"]["intra_op_threads"].get<long>());
  }
  return "";
}

// Operation-level localization of a pair that diverged at a step: replays run-1 and run-K with an
// op trace up to that step (up to 3 attempts, until the traces differ), names the first op whose
// outputs differ, and for an op with identical inputs saves them with a repro.py.
std::optional<Localization> localize_ops(const ExecPlan& plan, const CheckResult& res, CheckPair& pair) {
  const Divergence& dv = pair.diff.divergence;
  const ojson& ma = pair.diff.a.manifest;
  const ojson& mb = pair.diff.b.manifest;
  if (plan.capture_dir.empty() || !plan.opt.localize || !dv.found || !ma.is_object() || !ma.contains("framework")) {
    return std::nullopt; // not a PyTorch program, or no step to replay up to
  }
  const ojson& fa = ma["framework"];
  const ojson fb = mb.is_object() && mb.contains("framework") ? mb["framework"] : ojson();
  const long limit = std::max({dv.line, dv.step, 1L});
  const CheckRun& run_a = res.runs.front();
  auto run_b = std::find_if(res.runs.begin(), res.runs.end(), [&](const CheckRun& r) { return r.index == pair.run; });
  Localization loc;
  loc.step = dv.step;
  constexpr int k_attempts = 3;
  OpDivergence od;
  int attempt = 1;
  for (; attempt <= k_attempts; ++attempt) {
    const fs::path root = fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run, attempt);
    std::vector<std::string> failures;
    bool any_log = false;
    ReplaySpec spec;
    spec.trace_steps = limit;
    const std::string dir_a = (root / fmt::format("run-{}", run_a.index)).string();
    const std::string dir_b = (root / fmt::format("run-{}", run_b->index)).string();
    exec_run(plan, run_a.index, dir_a, failures, any_log, spec);
    exec_run(plan, run_b->index, dir_b, failures, any_log, spec);
    if (!failures.empty()) {
      loc.note = "op-level localization: a replay failed: " + failures.front();
      return loc;
    }
    const std::string trace_a = RunDir::open(dir_a).file(RunFile::op_trace);
    const std::string trace_b = RunDir::open(dir_b).file(RunFile::op_trace);
    std::error_code ec;
    if (!fs::exists(trace_a, ec) || !fs::exists(trace_b, ec)) {
      loc.note = "op-level localization: the replays wrote no op trace (torch was not imported, or the program "
                 "replaced sys.meta_path)";
      return loc;
    }
    try {
      od = compare_op_traces(trace_a, trace_b);
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
                           "torch's ops (Python code that computes the logged values)",
                           k_attempts, od.ops_compared, limit);
    return loc;
  }
  const OpCause cause = op_cause(od, fa, fb, env_thread_difference(ma, mb));
  const OpRecord& r = od.a.op.empty() ? od.b : od.a;
  // The operation found is the most direct cause: first among the likely causes. A cause that says
  // the numbers part from the same inputs is withdrawn when the op's inputs already differ (or the
  // runs took other ops): what was found contradicts it.
  auto& causes = pair.diff.diagnosis;
  if (od.kind != OpDivergence::Kind::same_inputs) {
    causes.erase(std::remove_if(causes.begin(), causes.end(), [](const Diagnosis& d) { return d.claims_same_inputs; }),
                 causes.end());
  }
  causes.insert(causes.begin(), Diagnosis{fmt::format("{} at {}: {}", short_op_name(r.op), r.where, cause.reason),
                                          cause.fix, od.kind == OpDivergence::Kind::same_inputs});
  loc.found = true;
  loc.step = r.step;
  loc.phase = r.phase;
  loc.layer = r.module;
  loc.tensor = short_op_name(r.op);
  loc.entry = r.op;
  loc.source = r.where;
  loc.effect = dv.first_tensor; // a parameter after the update: always an effect of an op
  loc.effect_step = dv.step;
  loc.loss_differs_from = dv.loss_differs_from;
  loc.sentence = op_sentence(od, cause);
  loc.note = fmt::format("op trace: {} ops identical before it (replay attempt {} of {})", od.ops_compared,
                         std::min(attempt, k_attempts), k_attempts);
  if (od.kind == OpDivergence::Kind::same_inputs) {
    const fs::path root = fs::path(plan.opt.work_dir) / fmt::format("replay-{}.{}", pair.run, attempt);
    ReplaySpec save;
    save.save_index = od.a.index;
    save.save_dir = (fs::path(plan.opt.work_dir) / fmt::format("repro-run-{}", pair.run)).string();
    save.fix_kind = cause.fix_kind;
    std::string ta = intra_op_threads(fa), tb = intra_op_threads(fb);
    save.threads = ta.empty() ? tb : tb.empty() || tb == ta ? ta : ta + "," + tb;
    std::vector<std::string> failures;
    bool any_log = false;
    exec_run(plan, run_a.index, (root / "save").string(), failures, any_log, save);
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

} // namespace

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

CheckResult run_exec(const ExecOptions& opt) {
  const World& world = opt.world ? *opt.world : real_world();
  const ExecPlan plan = plan_exec(opt, world);
  size_t longest = 0;
  for (const auto& v : plan.vary) {
    longest = std::max(longest, v.values.size());
  }
  const int runs = count_runs(opt.runs, longest);
  CheckResult res;
  res.kind = "exec";
  res.work_dir = opt.work_dir;
  res.vary = opt.vary;
  res.config = plan.command;
  const auto dirs = plan_run_dirs(opt.work_dir, runs, "exec");
  std::vector<std::string> failures;
  bool any_step_log = false;
  for (int i = 1; i <= runs; ++i) {
    res.runs.push_back(exec_run(plan, i, dirs[static_cast<size_t>(i - 1)], failures, any_step_log));
  }
  if (!failures.empty()) {
    throw Error(failures.front());
  }
  DiffOptions dopt;
  for (const auto& v : plan.vary) {
    dopt.varied.push_back("env." + v.name);
    dopt.varied.push_back("pins." + v.name);
  }
  compare_runs(
      res, dopt,
      [&](CheckPair& pair) {
        if (!opt.pin && !pair.diff.identical && !plan.base_env.count("PYTHONHASHSEED")) {
          pair.diff.notes.push_back("pins were off (--no-pin) and PYTHONHASHSEED is unset: Python randomizes string "
                                    "hashing per process, so set and dict order of strings differ between runs");
        }
        if (!pair.diff.identical) {
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
                                                 plan.opt.artifacts.size(), plan.opt.artifacts.size() == 1 ? "" : "s")));
  return res;
}

} // namespace reprun
