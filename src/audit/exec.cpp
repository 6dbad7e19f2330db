// run_exec: run an external training program N times with pinned determinism variables, record
// each run like a built-in one (manifest, steps.jsonl, summary, output, artifacts), then diff.
#include "reprun/exec.hpp"

#include "reprun/atomic_file.hpp"
#include "reprun/diff.hpp"
#include "reprun/error.hpp"
#include "reprun/hash.hpp"
#include "reprun/process.hpp"
#include "reprun/record.hpp"
#include "reprun/snapshot.hpp"
#include "reprun/steplog.hpp"
#include "reprun/world.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <fmt/format.h>
#include <regex>

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

// The real world, except that the environment is the child's.
class ChildWorld : public World {
public:
  explicit ChildWorld(std::map<std::string, std::string> env) : m_env(std::move(env)) {}
  std::map<std::string, std::string> environment() const override { return m_env; }
  std::optional<std::string> read_system_file(const std::string& p) const override {
    return real_world().read_system_file(p);
  }
  std::map<std::string, std::string> uname() const override { return real_world().uname(); }
  std::string libc_version() const override { return real_world().libc_version(); }
  unsigned logical_cores() const override { return real_world().logical_cores(); }
  std::string now_iso8601() const override { return real_world().now_iso8601(); }
  std::optional<std::string> run_command(const std::vector<std::string>& argv, const std::string& cwd) const override {
    return real_world().run_command(argv, cwd);
  }
  std::string current_directory() const override { return real_world().current_directory(); }
  CudaFacts cuda() const override { return real_world().cuda(); }

private:
  std::map<std::string, std::string> m_env;
};

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
ojson interpreter_of(const std::string& exe) {
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
  auto v = real_world().run_command({interp, "--version"}, "");
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
    out += fmt::format("{{\"step\":{},\"loss\":{}}}\n", step, json_number(loss));
    ++n;
  }
  write_file_atomic(steps_path, out);
  return n;
}

} // namespace

CheckResult run_exec(const ExecOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.on_note) {
      opt.on_note(s);
    }
  };
  if (opt.argv.empty()) {
    throw Error("exec: give the program to run after --, e.g. reprun exec -- python3 train.py");
  }
  const std::string exe = resolve_executable(opt.argv[0]);
  std::optional<std::regex> loss_re;
  if (!opt.loss_regex.empty()) {
    try {
      loss_re.emplace(opt.loss_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error("--loss-regex " + opt.loss_regex, std::string("invalid regular expression: ") + e.what());
    }
    if (loss_re->mark_count() < 1) {
      throw Error("--loss-regex " + opt.loss_regex, "needs a capture group for the loss, e.g. 'loss=([0-9.eE+-]+)'");
    }
  }
  std::vector<VaryEnv> vary = parse_vary(opt.vary);
  std::vector<std::pair<std::string, std::string>> user_pins;
  for (const auto& p : opt.pins) {
    user_pins.push_back(split_assignment(p, "--pin"));
  }
  int runs = opt.runs > 0 ? opt.runs : 2;
  if (opt.runs == 0) {
    for (const auto& v : vary) {
      runs = std::max(runs, static_cast<int>(v.values.size()));
    }
  }
  if (runs < 2 || runs > 64) {
    throw Error("--runs", fmt::format("must be between 2 and 64, got {}", runs));
  }
  // Argument files (the script itself): hashed once, before the runs.
  ojson argv_files = ojson::array();
  for (size_t i = 0; i < opt.argv.size(); ++i) {
    std::error_code ec;
    const std::string path = i == 0 ? exe : opt.argv[i];
    if (fs::is_regular_file(path, ec)) {
      argv_files.push_back({{"index", i}, {"path", opt.argv[i]}, {"sha256", sha256_file(path)}});
    }
  }
  ojson interpreter = interpreter_of(exe);
  const auto base_env = real_world().environment();

  CheckResult res;
  res.kind = "exec";
  res.work_dir = opt.work_dir;
  res.vary = opt.vary;
  for (const auto& a : opt.argv) {
    res.config += (res.config.empty() ? "" : " ") + a;
  }
  fs::create_directories(opt.work_dir);
  std::vector<std::string> failures;
  bool any_step_log = false;
  for (int i = 1; i <= runs; ++i) {
    CheckRun run;
    run.index = i;
    run.dir = fs::absolute(fs::path(opt.work_dir) / fmt::format("run-{}", i)).string();
    std::error_code ec;
    if (fs::exists(fs::path(run.dir) / "manifest.json", ec)) {
      throw Error(run.dir, "already holds a run; give exec an empty -o WORK_DIR");
    }
    fs::create_directories(run.dir);
    RunLock lock(run.dir);
    const std::string steps_path = run.dir + "/steps.jsonl";
    std::error_code rm_ec;
    fs::remove(steps_path, rm_ec);
    // The child's environment: ours, the pins, --pin, --vary, and the run's own paths.
    auto env = base_env;
    std::vector<Pin> pins;
    if (opt.pin) {
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
    for (const auto& user_pin : user_pins) {
      const std::string& name = user_pin.first;
      env[name] = user_pin.second;
      pins.erase(std::remove_if(pins.begin(), pins.end(), [&](const Pin& p) { return p.name == name; }), pins.end());
      pins.push_back({name, user_pin.second, "--pin"});
    }
    std::vector<std::string> parts;
    for (const auto& v : vary) {
      const std::string& value = v.values[static_cast<size_t>(i - 1) % v.values.size()];
      env[v.name] = value;
      pins.erase(std::remove_if(pins.begin(), pins.end(), [&](const Pin& p) { return p.name == v.name; }), pins.end());
      pins.push_back({v.name, value, "vary"});
      parts.push_back(v.name + "=" + (looks_secret(v.name) ? std::string("(redacted)") : value));
    }
    for (const auto& p : parts) {
      run.variation += (run.variation.empty() ? "" : "; ") + p;
    }
    env["REPRUN_RUN_DIR"] = run.dir;
    env["REPRUN_STEP_LOG"] = steps_path;

    note(fmt::format("run-{}: {}{}", i, res.config, run.variation.empty() ? "" : " (" + run.variation + ")"));
    const std::string created = real_world().now_iso8601();
    ProcessSpec spec;
    spec.argv = opt.argv;
    spec.argv[0] = exe;
    spec.env = env;
    spec.stdout_path = run.dir + "/stdout.txt";
    spec.stderr_path = run.dir + "/stderr.txt";
    spec.tee_fd = opt.quiet ? -1 : 2;
    ProcessResult pr = run_process(spec);

    // What the run produced.
    std::string log_source = "program";
    std::string log_error;
    long records = 0;
    double last_loss = 0;
    bool has_loss = false;
    if (fs::exists(steps_path, ec)) {
      log_error = validate_step_log(steps_path, records, last_loss, has_loss);
    } else if (loss_re) {
      log_source = "loss-regex";
      records = steps_from_stdout(spec.stdout_path, *loss_re, steps_path);
    } else {
      log_source = "none";
      write_file_atomic(steps_path, "");
    }
    any_step_log = any_step_log || log_source != "none";
    ojson artifacts = ojson::array();
    for (const auto& a : opt.artifacts) {
      if (!fs::is_regular_file(a, ec)) {
        artifacts.push_back({{"path", a}, {"missing", true}});
        continue;
      }
      fs::create_directories(fs::path(run.dir) / "artifacts");
      std::string copy = (fs::path(run.dir) / "artifacts" / fs::path(a).filename()).string();
      fs::copy_file(a, copy, fs::copy_options::overwrite_existing, ec);
      uint64_t size = 0;
      std::string digest = sha256_file(copy, &size);
      artifacts.push_back({{"path", a}, {"size", size}, {"sha256", digest}});
    }
    uint64_t out_bytes = 0;
    std::string out_digest = sha256_file(spec.stdout_path, &out_bytes);

    ojson m;
    m["format"] = k_run_format;
    m["kind"] = "exec";
    m["created"] = created;
    m["command_line"] = opt.argv;
    m["working_directory"] = real_world().current_directory();
    ojson pin_json = ojson::object();
    for (const auto& p : pins) {
      // The value reaches the program, but a secret-looking name is never written down.
      pin_json[p.name] = {{"value", looks_secret(p.name) ? "(redacted)" : p.value}, {"source", p.source}};
    }
    m["program"] = {{"argv", opt.argv},
                    {"executable", exe},
                    {"argv_files", argv_files},
                    {"interpreter", interpreter},
                    {"run_dir", run.dir},
                    {"step_log", log_source}};
    m["pins"] = pin_json;
    ChildWorld child(env);
    SnapshotOptions so;
    so.env_allow = opt.env_allow;
    for (const auto& p : pins) {
      so.env_allow.push_back(p.name);
    }
    ojson snap = machine_snapshot(child, so);
    for (auto it = snap.begin(); it != snap.end(); ++it) {
      m[it.key()] = *it;
    }
    m["outputs"] = {{"exit_code", pr.exit_code}, {"stdout_sha256", out_digest}, {"stdout_bytes", out_bytes},
                    {"artifacts", artifacts}};
    write_file_atomic(run.dir + "/manifest.json", m.dump(2) + "\n");
    std::string status = pr.exit_code == 0 ? "complete" : "failed: " + pr.describe();
    ojson summary;
    summary["format"] = k_run_format;
    summary["status"] = status;
    summary["exit_code"] = pr.exit_code;
    summary["steps"] = records;
    summary["train_loss"] = has_loss ? ojson(last_loss) : ojson(nullptr);
    summary["wall_seconds"] = pr.wall_seconds;
    write_file_atomic(run.dir + "/summary.json", summary.dump(2) + "\n");
    run.exit_code = pr.exit_code;
    run.status = status;
    res.runs.push_back(run);
    if (pr.exit_code != 0) {
      failures.push_back(fmt::format("run-{}: the program failed ({}); its output is in {}/stderr.txt", i,
                                     pr.describe(), run.dir));
    }
    if (!log_error.empty()) {
      failures.push_back(log_error + " (the valid prefix is kept)");
    }
  }
  if (!failures.empty()) {
    throw Error(failures.front());
  }
  DiffOptions dopt;
  for (const auto& v : vary) {
    dopt.varied.push_back("env." + v.name);
    dopt.varied.push_back("pins." + v.name);
  }
  res.identical = true;
  long differing = 0;
  for (int i = 2; i <= runs; ++i) {
    CheckPair pair;
    pair.run = i;
    pair.diff = diff_runs(res.runs[0].dir, res.runs[static_cast<size_t>(i - 1)].dir, dopt);
    if (!opt.pin && !pair.diff.identical && !base_env.count("PYTHONHASHSEED")) {
      pair.diff.notes.push_back("pins were off (--no-pin) and PYTHONHASHSEED is unset: Python randomizes string "
                                "hashing per process, so set and dict order of strings differ between runs");
    }
    if (!any_step_log) {
      pair.diff.notes.push_back("no step log (write REPRUN_STEP_LOG, or give --loss-regex): compared the exit status, "
                                "stdout and --artifact files only, so the difference cannot be localized by step");
    }
    res.identical = res.identical && pair.diff.identical;
    differing += pair.diff.identical ? 0 : 1;
    res.pairs.push_back(std::move(pair));
  }
  if (res.identical) {
    res.verdict = fmt::format("PASS: {} runs of the program identical{}", runs,
                              any_step_log ? "" : " (exit status, stdout and artifacts; no step log)");
  } else {
    const auto& first = *std::find_if(res.pairs.begin(), res.pairs.end(), [](const CheckPair& p) { return !p.diff.identical; });
    res.verdict = fmt::format("FAIL: {} of {} runs differ from run-1; run-{}: {}", differing, runs - 1, first.run,
                              first.diff.verdict);
  }
  return res;
}

} // namespace reprun
