// run_check: plan the runs from --vary, train each in a child process, diff against run 1, and
// localize a divergence by replaying from a checkpoint with trace "full".
#include "reprun/check.hpp"

#include "reprun/atomic_file.hpp"
#include "reprun/checkpoint.hpp"
#include "reprun/diff.hpp"
#include "reprun/error.hpp"
#include "reprun/process.hpp"
#include "reprun/record.hpp"

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

struct Dim {
  std::string name;
  std::vector<long> values;
};

std::vector<Dim> parse_vary(const std::vector<std::string>& vary) {
  std::vector<Dim> dims;
  for (const auto& v : vary) {
    auto eq = v.find('=');
    std::string name = v.substr(0, eq);
    if (eq == std::string::npos || eq + 1 >= v.size()) {
      throw Error("--vary " + v, "expected DIM=V1,V2,... (threads, accumulation or resume)");
    }
    if (name != "threads" && name != "accumulation" && name != "resume") {
      throw Error("--vary " + v, "unknown dimension '" + name + "'; expected threads, accumulation or resume" +
                                     did_you_mean(name, {"threads", "accumulation", "resume"}));
    }
    Dim d{name, {}};
    size_t start = eq + 1;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      std::string tok = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      char* end = nullptr;
      errno = 0;
      long x = std::strtol(tok.c_str(), &end, 10);
      if (tok.empty() || *end != '\0' || errno != 0 || x < 1 || x > 1'000'000'000) {
        throw Error("--vary " + v, "'" + tok + "' is not a positive integer");
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

// Runs reprun itself with `args`, both output streams appended to `log`.
ChildResult run_child(const std::string& exe, const std::vector<std::string>& args, const std::string& log) {
  ProcessSpec spec;
  spec.argv.push_back(exe);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.stdout_path = log;
  spec.stderr_path = log;
  spec.append = true; // a resumed run adds to the log of its first process
  ProcessResult r = run_process(spec);
  return {r.exit_code, r.signal != 0};
}

std::string last_line(const std::string& path) {
  std::string text;
  try {
    text = read_file(path);
  } catch (const Error&) {
    return "";
  }
  while (!text.empty() && text.back() == '\n') {
    text.pop_back();
  }
  auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

long value_for(const Dim* d, int run) {
  if (!d) {
    return 0;
  }
  return d->values[static_cast<size_t>(run - 1) % d->values.size()];
}

// Latest checkpoint step <= max_step present in the run directory, or 0.
std::vector<long> checkpoint_steps(const std::string& dir) {
  std::vector<long> steps;
  for (const auto& p : list_checkpoints(dir)) {
    try {
      steps.push_back(checkpoint_step(p));
    } catch (const Error&) {
    }
  }
  return steps;
}

// Prepares REPLAY as a copy of RUN stopped at checkpoint `from`, set to run to `until` with trace
// "full".
void prepare_replay(const std::string& run, const std::string& replay, long from, long until) {
  fs::create_directories(fs::path(replay) / "checkpoints");
  ojson m = read_manifest(run);
  m["config"]["determinism"]["trace"] = "full";
  m["config"]["training"].erase("epochs");
  m["config"]["training"]["steps"] = until;
  write_file_atomic((fs::path(replay) / "manifest.json").string(), m.dump(2) + "\n");
  write_file_atomic((fs::path(replay) / "summary.json").string(),
                    ojson{{"format", k_run_format}, {"status", "interrupted"}}.dump(2) + "\n");
  if (from > 0) {
    fs::copy_file(checkpoint_path(run, from), checkpoint_path(replay, from), fs::copy_options::overwrite_existing);
  }
  std::error_code ec;
  fs::copy_file(fs::path(run) / "steps.jsonl", fs::path(replay) / "steps.jsonl", fs::copy_options::overwrite_existing,
                ec);
}

} // namespace

void describe_trace_entry(const std::string& entry, std::string& layer, std::string& tensor) {
  static const std::vector<std::pair<std::string, std::string>> k_suffix = {
      {".weight.grad", "weight gradient"}, {".bias.grad", "bias gradient"},
      {".act.grad", "activation gradient"}, {".z.grad", "pre-activation gradient"},
      {".logits", "logits"},               {".z", "pre-activation (x W + b)"},
      {".act", "activation"},              {".dlogits", "gradient of the loss w.r.t. the logits"},
      {".weight", "weight after the update"}, {".bias", "bias after the update"}};
  for (const auto& [suffix, what] : k_suffix) {
    if (entry.size() > suffix.size() && entry.compare(entry.size() - suffix.size(), suffix.size(), suffix) == 0) {
      layer = entry.substr(0, entry.size() - suffix.size());
      tensor = what;
      return;
    }
  }
  layer = entry == "input" ? "input" : entry;
  tensor = entry == "input" ? "batch input" : entry;
}

CheckResult run_check(const CheckOptions& opt) {
  auto note = [&](const std::string& s) {
    if (opt.on_note) {
      opt.on_note(s);
    }
  };
  std::vector<Dim> dims = parse_vary(opt.vary);
  const Dim* threads = nullptr;
  const Dim* accumulation = nullptr;
  const Dim* resume = nullptr;
  for (const auto& d : dims) {
    (d.name == "threads" ? threads : d.name == "accumulation" ? accumulation : resume) = &d;
  }
  int runs = opt.runs > 0 ? opt.runs : 2;
  if (opt.runs == 0) {
    for (const auto& d : dims) {
      runs = std::max(runs, static_cast<int>(d.values.size()) + (d.name == "resume" ? 1 : 0));
    }
  }
  if (runs < 2 || runs > 64) {
    throw Error("--runs", fmt::format("must be between 2 and 64, got {}", runs));
  }
  std::error_code ec;
  if (!fs::exists(opt.config, ec)) {
    throw Error(opt.config, "no such file");
  }
  const std::string exe = opt.self_exe.empty() ? fs::read_symlink("/proc/self/exe").string() : opt.self_exe;
  const std::string config = fs::absolute(opt.config).string();

  CheckResult res;
  res.config = opt.config;
  res.vary = opt.vary;
  res.work_dir = opt.work_dir;
  fs::create_directories(res.work_dir, ec);
  if (ec) {
    throw Error(res.work_dir, "cannot create work directory: " + ec.message());
  }
  for (int i = 1; i <= runs; ++i) {
    std::string dir = (fs::path(res.work_dir) / fmt::format("run-{}", i)).string();
    if (fs::exists(dir, ec)) {
      throw Error(dir, "already exists; give check an empty -o WORK_DIR");
    }
  }

  std::vector<std::string> diff_varied;
  if (accumulation) {
    diff_varied.push_back("config.training.accumulation");
  }
  for (int i = 1; i <= runs; ++i) {
    CheckRun run;
    run.index = i;
    run.dir = (fs::path(res.work_dir) / fmt::format("run-{}", i)).string();
    std::vector<std::string> args = {"train", config, "-o", run.dir, "--quiet"};
    std::vector<std::string> parts;
    if (threads) {
      args.push_back("--threads");
      args.push_back(std::to_string(value_for(threads, i)));
      parts.push_back(fmt::format("threads={}", value_for(threads, i)));
    }
    if (accumulation) {
      args.push_back("--set");
      args.push_back(fmt::format("training.accumulation={}", value_for(accumulation, i)));
      parts.push_back(fmt::format("accumulation={}", value_for(accumulation, i)));
    }
    for (const auto& s : opt.sets) {
      args.push_back("--set");
      args.push_back(s);
    }
    long kill_at = 0;
    if (resume && i >= 2 && static_cast<size_t>(i - 2) < resume->values.size()) {
      kill_at = resume->values[static_cast<size_t>(i - 2)];
      args.push_back("--kill-after-step");
      args.push_back(std::to_string(kill_at));
      parts.push_back(fmt::format("killed after step {} and resumed", kill_at));
    }
    for (const auto& p : parts) {
      run.variation += (run.variation.empty() ? "" : "; ") + p;
    }
    const std::string log = run.dir + ".log";
    note(fmt::format("run-{}: training{}", i, run.variation.empty() ? "" : " (" + run.variation + ")"));
    ChildResult c = run_child(exe, args, log);
    if (kill_at > 0) {
      if (!c.killed) {
        note(fmt::format("run-{}: finished before step {}, so it was not killed", i, kill_at));
        run.variation += " (run ended before that step: not killed)";
      } else {
        std::vector<std::string> rargs = {"train", "--resume", run.dir, "--quiet"};
        if (threads) {
          rargs.push_back("--threads");
          rargs.push_back(std::to_string(value_for(threads, i)));
        }
        c = run_child(exe, rargs, log);
      }
    }
    run.exit_code = c.exit_code;
    if (c.exit_code == 2 || c.exit_code == 127 || c.killed) {
      std::string why = last_line(log);
      throw Error(fmt::format("run-{}", i), fmt::format("training failed (exit {}): {} (log: {})", c.exit_code,
                                                        why.empty() ? "no output" : why, log));
    }
    try {
      run.status = read_summary(run.dir).value("status", "unknown");
    } catch (const Error& e) {
      run.status = std::string("unreadable: ") + e.what();
    }
    res.runs.push_back(run);
  }

  DiffOptions dopt;
  dopt.varied = diff_varied;
  res.identical = true;
  for (int i = 2; i <= runs; ++i) {
    CheckPair pair;
    pair.run = i;
    pair.diff = diff_runs(res.runs[0].dir, res.runs[static_cast<size_t>(i - 1)].dir, dopt);
    const Divergence& d = pair.diff.divergence;
    if (d.found && d.classification != "run ended early" && d.classification != "steps differ") {
      pair.localization = Localization{};
      Localization& loc = *pair.localization;
      note(fmt::format("run-{} differs from run-1 at step {}: replaying with trace full to localize", i, d.step));
      auto ca = checkpoint_steps(res.runs[0].dir);
      auto cb = checkpoint_steps(res.runs[static_cast<size_t>(i - 1)].dir);
      long from = 0;
      for (long s : ca) {
        if (s < d.step && std::find(cb.begin(), cb.end(), s) != cb.end()) {
          from = std::max(from, s);
        }
      }
      loc.replay_from = from;
      auto replay = [&](const std::string& dir, int run_index) {
        std::vector<std::string> args = {"train", "--resume", dir, "--quiet"};
        if (threads) {
          args.push_back("--threads");
          args.push_back(std::to_string(value_for(threads, run_index)));
        }
        ChildResult c = run_child(exe, args, dir + ".log");
        if (c.exit_code != 0 && c.exit_code != 1) {
          throw Error(dir, fmt::format("replay failed (exit {}): {}", c.exit_code, last_line(dir + ".log")));
        }
      };
      // Replay past the original divergence: a non-deterministic cause may not recur at exactly
      // that step. It may not recur at all in one replay, so try up to three times.
      const long until = std::max(1L, std::min(pair.diff.a.last_step, d.step + 100));
      DiffResult rd;
      int attempts = 0;
      for (attempts = 1; attempts <= 3; ++attempts) {
        std::string base = (fs::path(res.work_dir) / fmt::format("replay-1-vs-{}", i)).string() +
                           (attempts > 1 ? fmt::format("-try{}", attempts) : "");
        std::string ra = base + "/a", rb = base + "/b";
        prepare_replay(res.runs[0].dir, ra, from, until);
        prepare_replay(res.runs[static_cast<size_t>(i - 1)].dir, rb, from, until);
        replay(ra, 1);
        replay(rb, i);
        rd = diff_runs((fs::path(ra) / "steps.jsonl").string(), (fs::path(rb) / "steps.jsonl").string(), dopt);
        if (rd.divergence.found) {
          break;
        }
      }
      const Divergence& x = rd.divergence;
      loc.loss_differs_from = d.loss_differs_from;
      if (x.found && !x.trace_phase.empty()) {
        loc.found = true;
        loc.step = x.step;
        loc.phase = x.trace_phase;
        loc.entry = x.trace_entry;
        describe_trace_entry(x.trace_entry, loc.layer, loc.tensor);
        long loss_from = d.loss_differs_from > 0 ? d.loss_differs_from : x.loss_differs_from;
        loc.sentence = fmt::format("step {}, {}, layer {}, {}: first difference{}", loc.step, loc.phase, loc.layer,
                                   loc.tensor, loss_from > 0 ? fmt::format("; loss differs from step {}", loss_from) : "");
        if (x.step != d.step || attempts > 1) {
          loc.note = fmt::format("the replay (attempt {}) parted at step {} while the original runs parted at step {}: "
                                 "the computation is not deterministic, so where it parts varies",
                                 attempts, x.step, d.step);
        }
      } else {
        loc.note = fmt::format("three replays from step {} with trace full did not reproduce the divergence (it is not "
                               "deterministic); original runs part at step {} ({})",
                               from, d.step, d.first_tensor.empty() ? d.detail : d.first_tensor);
      }
    }
    res.identical = res.identical && pair.diff.identical;
    res.pairs.push_back(std::move(pair));
  }
  long differing = 0;
  for (const auto& p : res.pairs) {
    differing += p.diff.identical ? 0 : 1;
  }
  if (res.identical) {
    res.verdict = fmt::format("PASS: {} runs bitwise identical", runs);
  } else {
    const auto& first = *std::find_if(res.pairs.begin(), res.pairs.end(), [](const CheckPair& p) { return !p.diff.identical; });
    std::string where = first.localization && first.localization->found ? first.localization->sentence : first.diff.verdict;
    res.verdict = fmt::format("FAIL: {} of {} runs differ from run-1; run-{}: {}", differing, runs - 1, first.run, where);
  }
  return res;
}

} // namespace reprun
