// One run of `reprun exec`: see exec_run.hpp.
#include "gate/exec_run.hpp"

#include "gate/exec_inputs.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/meta/fingerprint.hpp"
#include "reprun/meta/snapshot.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/step_record.hpp"
#include "reprun/record/steplog.hpp"
#include "reprun/train/backend.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sys/stat.h>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

struct Pin {
  std::string name, value, source; // source: pinned | kept (already set) | --pin | vary
};

std::pair<std::string, std::string> split_assignment(const std::string& s, const std::string& flag) {
  auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(flag + " " + s, "expected NAME=VALUE");
  }
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// --vary env:NAME=V1,V2,... and resume=N1,N2,... (exec varies the environment, or kills a run
// after a step and resumes it).
void parse_vary(const std::vector<std::string>& vary, std::vector<VaryEnv>& env, std::vector<long>& resume) {
  for (const auto& v : vary) {
    if (v.rfind("resume=", 0) == 0) {
      std::string list = v.substr(7);
      size_t start = 0;
      for (;;) {
        const size_t comma = list.find(',', start);
        const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        char* end = nullptr;
        const long n = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0' || n < 1) {
          throw Error("--vary " + v, fmt::format("'{}' is not a step: expected resume=N1,N2,... with each N >= 1 (the "
                                                 "optimizer step after which a run is killed)",
                                                 item));
        }
        resume.push_back(n);
        if (comma == std::string::npos) {
          break;
        }
        start = comma + 1;
      }
      continue;
    }
    if (v.rfind("env:", 0) != 0) {
      throw Error("--vary " + v, "exec varies environment variables or kills and resumes runs: expected "
                                 "env:NAME=V1,V2,... or resume=N1,N2,...");
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
    env.push_back(e);
  }
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

// Copies the --artifact files into the run directory and hashes them. A path may hold {run_dir}
// (each run's own final.pt): it is read where it expands to, and recorded as written, so that the
// runs' records compare.
ojson collect_artifacts(const RunDir& run, const std::vector<std::string>& files) {
  ojson artifacts = ojson::array();
  const std::vector<std::string> expanded = expand_run_dir(files, run.path());
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string& a = files[i];
    const std::string& at = expanded[i];
    std::error_code ec;
    if (!fs::is_regular_file(at, ec)) {
      artifacts.push_back({{"path", a}, {"missing", true}});
      continue;
    }
    std::string copy = run.artifact_path(at);
    fs::copy_file(at, copy, fs::copy_options::overwrite_existing, ec);
    uint64_t size = 0;
    std::string digest = sha256_file(copy, &size);
    artifacts.push_back({{"path", a}, {"size", size}, {"sha256", digest}});
  }
  return artifacts;
}

ojson exec_manifest(const ExecPlan& plan, const RunInProgress& r, const std::string& log_source) {
  ojson m;
  m["format"] = k_run_format;
  m["kind"] = "exec";
  m["created"] = r.created;
  m["command_line"] = plan.opt.argv;
  m["working_directory"] = plan.world.current_directory();
  m["program"] = {{"argv", plan.opt.argv},
                  {"executable", plan.exe},
                  {"argv_files", plan.argv_files},
                  {"interpreter", plan.interpreter},
                  {"run_dir", r.run.path()},
                  {"step_log", log_source}};
  std::vector<std::string> written = plan.opt.argv;
  written[0] = plan.exe;
  if (r.argv != written) {
    // {run_dir} (or --resume-arg) made this run's arguments its own: argv stays as written, so that
    // runs do not differ by their directories; what ran is here, expected to differ.
    std::vector<std::string> ran = r.argv;
    ran[0] = plan.opt.argv[0];
    m["program"]["argv_expanded"] = ran;
  }
  m["pins"] = r.pins;
  EnvironmentWorld child(plan.world, r.env);
  SnapshotOptions so;
  so.env_allow = plan.opt.env_allow;
  so.kernels = kernel_facts();
  for (const auto& p : r.pin_names) {
    so.env_allow.push_back(p);
  }
  ojson snap = machine_snapshot(child, so);
  for (auto it = snap.begin(); it != snap.end(); ++it) {
    m[it.key()] = *it;
  }
  return m;
}

} // namespace

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

ExecPlan plan_exec(const ExecOptions& opt, const World& world) {
  if (opt.argv.empty()) {
    throw Error("exec: give the program to run after --, e.g. reprun exec -- python3 train.py");
  }
  ExecPlan plan{.opt = opt, .world = world, .exe = resolve_executable(opt.argv[0])};
  parse_vary(opt.vary, plan.vary, plan.resume);
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
  if (!plan.resume.empty() && plan.loss_re && plan.loss_re->mark_count() < 2) {
    throw Error("--loss-regex " + opt.loss_regex, "with --vary resume the regular expression needs the step as group 1 "
                                                  "and the loss as group 2 (the resumed process's log is stitched by "
                                                  "its step numbers), e.g. 'step ([0-9]+) loss ([0-9.eE+-]+)'");
  }
  if (plan.resume.empty() && !opt.resume_args.empty()) {
    throw Error("--resume-arg", "is for a resumed process: give --vary resume=N");
  }
  // The places of data named: checked before any run (a run, then its record refused after it, would
  // leave a run directory half made), and one that is not there refused (a mistyped folder would
  // make nothing data, in silence).
  for (const auto& [flag, dirs] : {std::pair{"--data-dir", &opt.data_dirs}, std::pair{"--stat-only", &opt.stat_only_dirs}}) {
    for (const auto& d : *dirs) {
      if (d.empty()) {
        throw Error(flag, "an empty path: give a folder (" + std::string(flag) + " /datasets/x)");
      }
      if (!opt.record_inputs) {
        throw Error(std::string(flag) + " " + d, "says how to record what the program read, which --no-inputs turns off");
      }
      if (std::error_code ec; !fs::exists(d, ec)) {
        throw Error(std::string(flag) + " " + d, ec && ec != std::errc::no_such_file_or_directory
                                                     ? "cannot be looked at: " + ec.message()
                                                     : "no such folder (make it first if the program fills it)");
      }
    }
  }
  // Argument files (the script itself, a config, a data set): hashed once, before the runs, through
  // the hash cache (a data file named in the arguments is not read again at every exec). An option
  // that names a file after "=" (--config=cfg.json) names a file too.
  HashOptions argv_hash;
  argv_hash.follow_symlinks = true; // the file the program will read
  argv_hash.threads = 1;
  for (size_t i = 0; i < opt.argv.size(); ++i) {
    std::error_code ec;
    const std::string& arg = opt.argv[i];
    const size_t eq = arg.find('=');
    const bool option = i > 0 && arg.size() > 1 && arg[0] == '-' && eq != std::string::npos && eq + 1 < arg.size();
    const std::string named = option ? arg.substr(eq + 1) : arg;
    const std::string path = i == 0 ? plan.exe : named;
    if (fs::is_regular_file(path, ec)) {
      const HashResult h = hash_files({path}, {named}, argv_hash);
      plan.argv_files.push_back({{"index", i}, {"path", named}, {"sha256", h.entries.at(0).sha256}});
      if (option) {
        plan.argv_files.back()["option"] = arg.substr(0, eq);
      }
    }
  }
  if (opt.record_inputs) {
    plan.preload = find_preload_library();
    plan.preload_missing = plan.preload.empty() ? "libreprun_preload.so is not beside reprun nor in lib/reprun" : "";
    if (plan.preload.find_first_of(" :") != std::string::npos) {
      // LD_PRELOAD separates its entries with spaces and colons: such a path cannot be given.
      plan.preload_missing = "the preload library's path holds a space or a colon, which LD_PRELOAD cannot carry (" +
                             plan.preload + ")";
      plan.preload.clear();
      if (opt.on_note) {
        opt.on_note(plan.preload_missing + ": the files the program reads are recorded for its Python processes only");
      }
    }
  }
  plan.interpreter = interpreter_of(world, plan.exe);
  plan.base_env = world.environment();
  // Every program: one that is not Python itself (a shell script, a launcher) may start Python
  // processes (`cd sub && exec python3 train.py`), whose steps are the run's.
  if (opt.capture) {
    plan.capture_dir = find_capture_package();
    if (plan.capture_dir.empty() && !plan.interpreter.is_null() && opt.on_note) {
      opt.on_note("reprun's Python package (sitecustomize.py, reprun_capture/) is not beside this binary nor "
                  "under share/reprun/python: no automatic step log or op trace for this program");
    }
  }
  if (opt.record_inputs) {
    plan.files_python_dir = plan.capture_dir.empty() ? find_capture_package() : plan.capture_dir;
  }
  for (const auto& a : opt.argv) {
    plan.command += (plan.command.empty() ? "" : " ") + a;
  }
  return plan;
}


RunInProgress begin_run(const ExecPlan& plan, int i, const std::string& dir, const ReplaySpec& replay) {
  const std::string path = fs::absolute(dir).string();
  RunDir run = RunDir::create(path);
  RunLock lock = run.lock();
  RunInProgress r{.res = {}, .run = run, .lock = std::move(lock)};
  r.res.index = i;
  r.res.dir = path;
  r.replay = replay.any();
  std::vector<Pin> pins = child_environment(plan, i, r.env, r.res.variation);
  r.pins = ojson::object();
  for (const auto& p : pins) {
    // The value reaches the program, but a secret-looking name is never written down.
    r.pins[p.name] = {{"value", looks_secret(p.name) ? "(redacted)" : p.value}, {"source", p.source}};
    r.pin_names.push_back(p.name);
  }
  r.label = replay.any() ? fmt::format("the replay of run-{}", i) : fmt::format("run-{}", i);
  r.created = plan.world.now_iso8601();
  // The file system's clock, not the world's: the time of the run's lock, just made, is compared with
  // the times of the files the run made (a clock read here can run ahead of the file system's).
  struct stat lock_st {};
  if (::stat(run.file(RunFile::lock).c_str(), &lock_st) == 0) {
    r.started_ns = static_cast<int64_t>(lock_st.st_mtim.tv_sec) * 1000000000 + lock_st.st_mtim.tv_nsec;
  }
  r.argv = expand_run_dir(plan.opt.argv, run.path());
  r.argv[0] = plan.exe;
  return r;
}

StepLogFacts collect_step_log(const ExecPlan& plan, const RunDir& files, const std::string& steps_path) {
  StepLogFacts f;
  const std::string own_path = files.file(RunFile::steps);
  const std::string auto_path = files.file(RunFile::capture_steps);
  refuse_link(own_path);
  refuse_link(auto_path);
  refuse_link(steps_path);
  std::error_code ec;
  const bool program_log = fs::exists(own_path, ec);
  if (program_log && own_path != steps_path) {
    fs::rename(own_path, steps_path);
  }
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
    f.records = steps_from_stdout(files.file(RunFile::stdout_log), *plan.loss_re, steps_path);
  } else {
    f.source = "none";
    write_file_atomic(steps_path, "");
  }
  return f;
}

ojson take_framework_facts(const RunDir& files, std::vector<std::string>& notes) {
  const std::string path = files.file(RunFile::framework_facts);
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

RankLogs collect_rank_logs(const RunDir& files, ojson& framework, std::vector<std::string>& notes) {
  RankLogs out;
  if (!framework.is_object() || !framework.contains("distributed") || !framework["distributed"].is_object()) {
    return out;
  }
  ojson& dist = framework["distributed"];
  const ojson world = dist.value("world_size", ojson());
  if (!world.is_number_integer() || world.get<long>() < 1 || world.get<long>() > 65536) {
    notes.push_back(fmt::format("{}: the framework facts name no valid world size: the ranks are not recorded",
                                files.file(RunFile::framework_facts)));
    framework.erase("distributed");
    return out;
  }
  out.world_size = static_cast<int>(world.get<long>());
  ojson devices = ojson::object();
  devices["0"] = framework.value("devices", ojson::object());
  for (int r = 1; r < out.world_size; ++r) {
    const RunDir rank = files.rank(r);
    std::error_code ec;
    if (!fs::is_directory(rank.path(), ec)) {
      continue; // the rank made no optimizer step
    }
    const std::string auto_path = rank.file(RunFile::capture_steps);
    const std::string steps_path = rank.file(RunFile::steps);
    refuse_link(auto_path);
    refuse_link(steps_path);
    if (fs::exists(auto_path, ec)) {
      fs::rename(auto_path, steps_path);
      long records = 0;
      double last = 0;
      bool has = false;
      const std::string error = validate_step_log(steps_path, records, last, has);
      if (!error.empty()) {
        out.errors.push_back(error + " (the valid prefix is kept)");
      }
      out.logged.push_back(r);
    }
    const ojson facts = take_framework_facts(rank, notes);
    devices[std::to_string(r)] = facts.is_object() ? facts.value("devices", ojson::object()) : ojson();
  }
  // What rank 0 wrote of itself ("rank": 0) becomes the job's: world size, backend, each rank's devices.
  ojson job = ojson::object();
  job["world_size"] = out.world_size;
  job["backend"] = dist.value("backend", ojson());
  job["devices"] = devices;
  dist = job;
  return out;
}

CheckRun finish_run(const ExecPlan& plan, RunInProgress& r, const ProcessResult& pr, const StepLogFacts& log,
                    const ojson& framework, std::vector<std::string>& failures, const RankLogs& ranks) {
  const RunDir& run = r.run;
  ojson artifacts = collect_artifacts(run, plan.opt.artifacts);
  std::optional<LogFacts> inputs_facts;
  std::vector<std::string> input_notes;
  ojson inputs = r.replay ? ojson() : record_run_inputs(plan, run, r.started_ns, inputs_facts, input_notes);
  for (const auto& n : input_notes) {
    if (plan.opt.on_note) {
      plan.opt.on_note(n);
    }
  }
  uint64_t out_bytes = 0;
  std::string out_digest = sha256_file(run.file(RunFile::stdout_log), &out_bytes);
  ojson m = exec_manifest(plan, r, log.source);
  if (!framework.is_null()) {
    m["framework"] = framework;
  }
  if (ranks.world_size > 0) {
    // The list diff reads (never a glob): each rank's step log, relative to the run directory.
    ojson logs = ojson::object();
    logs["0"] = fs::relative(run.file(RunFile::steps), run.path()).string();
    for (int rk : ranks.logged) {
      logs[std::to_string(rk)] = fs::relative(run.rank(rk).file(RunFile::steps), run.path()).string();
    }
    m["ranks"] = {{"world_size", ranks.world_size}, {"logs", logs}};
  }
  if (!inputs.is_null()) {
    m["inputs"] = inputs;
  }
  m["outputs"] = {{"exit_code", pr.exit_code}, {"stdout_sha256", out_digest}, {"stdout_bytes", out_bytes},
                  {"artifacts", artifacts}};
  run.write_manifest(m);
  RunSummary summary;
  summary.status = pr.stopped     ? "interrupted"
                   : pr.timed_out ? fmt::format("failed: ran past the time limit ({}) and was ended",
                                                duration_text(plan.opt.time_limit))
                   : pr.exit_code == 0 ? "complete"
                                       : "failed: " + pr.describe();
  summary.exit_code = pr.exit_code;
  summary.steps = log.records;
  summary.train_loss = log.last_loss;
  summary.has_eval_fields = false;
  summary.wall_seconds = pr.wall_seconds;
  summary.steps_log = run.log_facts(RunFile::steps);
  summary.inputs_log = inputs_facts;
  std::error_code trace_ec;
  if (plan.opt.trace_steps > 0 && !r.replay && fs::is_regular_file(run.file(RunFile::op_trace), trace_ec)) {
    summary.op_trace_log = run.log_facts(RunFile::op_trace);
  }
  if (ranks.world_size > 1) {
    for (int rk : ranks.logged) {
      summary.rank_logs[rk] = run.rank(rk).log_facts(RunFile::steps);
    }
  }
  run.write_summary(summary);
  r.res.exit_code = pr.exit_code;
  r.res.status = summary.status;
  if (pr.stopped) {
    return r.res; // interrupted: not a failure of the program (stop_if_interrupted says what it was)
  }
  if (pr.timed_out || pr.exit_code != 0) {
    r.res.failure = failure_block(r.label, pr, run);
    r.res.timed_out = pr.timed_out;
    if (plan.opt.on_failure) {
      plan.opt.on_failure(r.res.failure);
    }
  }
  if (pr.timed_out) {
    failures.push_back(fmt::format("{}: ran past the time limit ({}) and was ended with its process group; {}",
                                   r.label, duration_text(plan.opt.time_limit),
                                   r.still_running.empty() ? "nothing of it was running any more"
                                                           : "still running then: " + r.still_running));
  } else if (pr.exit_code != 0) {
    failures.push_back(fmt::format("{}: the program failed ({}); its output is in {}", r.label, pr.describe(),
                                   run.file(RunFile::stderr_log)));
  } else {
    // An artifact a run that succeeded did not leave is nothing to compare: an error of the setup (a
    // path the program does not write, {run_dir} where it writes elsewhere), never a PASS.
    for (const auto& a : artifacts) {
      if (a.value("missing", false)) {
        failures.push_back(fmt::format("{}: --artifact {}: the program exited 0 but left no such file ({}); give the "
                                       "path the program writes (with {{run_dir}} for a file in the run's own folder)",
                                       r.label, a["path"].get<std::string>(),
                                       expand_run_dir({a["path"].get<std::string>()}, run.path()).front()));
      }
    }
  }
  if (!log.error.empty()) {
    failures.push_back(log.error + " (the valid prefix is kept)");
  }
  failures.insert(failures.end(), ranks.errors.begin(), ranks.errors.end());
  return r.res;
}

CheckRun exec_run(const ExecPlan& plan, int i, const std::string& dir, std::vector<std::string>& failures,
                  bool& any_step_log, const ReplaySpec& replay, const ProcessPlan& process) {
  RunInProgress r = begin_run(plan, i, dir, replay);
  const ProcessResult pr = run_program(plan, r, process, r.run, replay);
  const StepLogFacts log = collect_step_log(plan, r.run, r.run.file(RunFile::steps));
  any_step_log = any_step_log || log.source != "none";
  std::vector<std::string> notes;
  ojson framework = take_framework_facts(r.run, notes);
  const RankLogs ranks = collect_rank_logs(r.run, framework, notes);
  for (const auto& n : notes) {
    if (plan.opt.on_note) {
      plan.opt.on_note(n);
    }
  }
  CheckRun run = finish_run(plan, r, pr, log, framework, failures, ranks);
  stop_if_interrupted(plan, r, pr);
  return run;
}

long line_step(std::string_view line) {
  const long s = quick_step(line);
  if (s >= 0) {
    return s;
  }
  try {
    return parse_step_line(line, "", 0).step;
  } catch (const Error&) {
    return -1;
  }
}

std::vector<ProcessEvents> run_events(const RunDir& run) {
  std::vector<ProcessEvents> out;
  const auto numbers = run.processes();
  if (numbers.empty()) {
    out.push_back(read_events(run.file(RunFile::events)));
  }
  for (int n : numbers) {
    out.push_back(read_events(run.process(n).file(RunFile::events)));
  }
  return out;
}

} // namespace reprun
