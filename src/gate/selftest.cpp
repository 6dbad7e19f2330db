// run_selftest: train a config in child processes with faults injected through the trainer's
// internal selftest variable, and require the gate to catch each one; then require the true runs
// to pass. It does not test reprun's unit behaviour (the test suites do); it shows, on this
// machine and build, that diff and check can say "different".
#include "reprun/gate/selftest.hpp"

#include "reprun/audit/diff.hpp"
#include "reprun/audit/localize.hpp"
#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"
#include "reprun/gate/gate.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/trainer.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// Every run is this long, with a checkpoint every k_every steps (all kept, so that any of them can
// be forked); the other numbers are chosen from these.
constexpr long k_steps = 24;
constexpr long k_every = 4;
constexpr long k_flip_step = 7;   // replayed from the checkpoint of step 4
constexpr long k_kill_after = 9;  // check --vary resume=9
constexpr long k_atomic_rows = 32; // 4 chunks of 8 per micro-batch: the order of the sums can change

// Lets the runs of a selftest go: named here, not by the user's config.
const std::vector<std::string> k_sets = {
    "training.epochs=null",
    fmt::format("training.steps={}", k_steps),
    fmt::format("training.checkpoint_every={}", k_every),
    "training.checkpoint_keep=1000",
    "training.eval_every=1000000",
    "determinism.trace=weights",
};

// Only the e2e test that proves the selftest can fail sets this (a comma list of flip, resume,
// atomic): the named faults are then not injected, so their controls must come out "MISSED".
constexpr const char* k_disarm_variable = "REPRUN_SELFTEST_DISARM";

struct Context {
  std::string exe;
  std::string work;
  std::string config; // absolute
  std::map<std::string, std::string> env; // ours, without any fault
  std::vector<std::string> disarmed;
  std::function<void(const std::string&)> note;

  bool armed(const std::string& fault) const {
    return std::find(disarmed.begin(), disarmed.end(), fault) == disarmed.end();
  }
  std::string path(const std::string& name) const { return (fs::path(work) / name).string(); }
};

std::vector<std::string> with_sets(std::vector<std::string> args) {
  for (const auto& s : k_sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// Runs reprun with `args` (output to `log`, stdout also into `out`), the fault `fault` ("" none)
// in its environment. Returns its exit code; 2, a signal or a failed start is an Error.
int run_reprun(const Context& c, const std::vector<std::string>& args, const std::string& log,
               const std::string& fault, std::string* out = nullptr) {
  ProcessSpec spec;
  spec.argv.push_back(c.exe);
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.env = c.env;
  if (!fault.empty()) {
    (*spec.env)[k_selftest_fault_variable] = fault;
  }
  spec.stdout_path = log;
  spec.stderr_path = log;
  spec.append = true;
  spec.capture_stdout = out;
  const ProcessResult r = run_process(spec);
  if (r.exit_code == 2 || r.exit_code == 127 || r.signal != 0) {
    const std::string why = last_line(log);
    throw Error(fmt::format("selftest: reprun {} failed ({}): {} (log: {})", args.empty() ? "" : args[0],
                            r.describe(), why.empty() ? "no output" : why, log));
  }
  return r.exit_code;
}

void train(const Context& c, const std::string& dir, const std::string& fault) {
  if (run_reprun(c, with_sets({"train", c.config, "-o", dir, "--quiet"}), dir + ".log", fault) != 0) {
    throw Error(dir, "selftest: training did not complete (log: " + dir + ".log)");
  }
}

// Forks `src` at checkpoint `from` and trains it to `until` with trace full, as check replays.
void replay(const Context& c, const std::string& src, const std::string& dir, long from, long until,
            const std::string& fault) {
  const std::vector<std::string> args = {
      "train", "--resume", src, "-o", dir, "--from-step", std::to_string(from), "--quiet",
      "--set", "determinism.trace=full",
      "--set", "training.epochs=null",
      "--set", fmt::format("training.steps={}", until)};
  if (run_reprun(c, args, dir + ".log", fault) != 0) {
    throw Error(dir, "selftest: the replay did not complete (log: " + dir + ".log)");
  }
}

// `reprun check` with `args` and `fault`; returns its exit code (0 or 1) and its JSON report.
int check(const Context& c, const std::string& dir, std::vector<std::string> extra, const std::string& fault,
          ojson& report) {
  std::vector<std::string> args = {"check", c.config, "-o", dir, "--quiet", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::string out;
  const int rc = run_reprun(c, with_sets(args), dir + ".log", fault, &out);
  try {
    report = ojson::parse(out);
  } catch (const std::exception& e) {
    throw Error(dir + ".log", std::string("selftest: check's JSON report cannot be read: ") + e.what());
  }
  return rc;
}

// The first word of a control's line: a fault is "caught" or "MISSED", the true runs "pass" or "FAIL".
std::string mark(bool ok, bool must_fail) {
  if (must_fail) {
    return ok ? "caught  " : "MISSED  ";
  }
  return ok ? "pass    " : "FAIL    ";
}

// The weight tensor in the middle of the model (dense_2.weight for two hidden layers): a flip
// there reaches the loss only through later steps, so only the tensor checksums can see it.
std::string middle_weight(const std::string& run) {
  std::vector<std::string> weights;
  const ojson manifest = RunDir::open(run).read_manifest();
  for (const auto& t : manifest["model"]["tensors"]) {
    const std::string name = t.value("name", "");
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) {
      weights.push_back(name);
    }
  }
  if (weights.empty()) {
    throw Error(run, "selftest: the model has no weight tensor");
  }
  return weights[weights.size() / 2];
}

// (a) The lowest bit of one weight flipped after the update of step k_flip_step, in a second run:
// diff must name that step and tensor, and a replay with trace full (as check localizes) the
// update phase.
SelftestControl bit_flip(const Context& c) {
  SelftestControl ctl{"bit flip", true, false, ""};
  const std::string base = c.path("base"), flip = c.path("flip");
  c.note("training the clean run");
  train(c, base, "");
  const std::string tensor = middle_weight(base);
  const std::string fault = c.armed("flip") ? fmt::format("flip:{}:{}", k_flip_step, tensor) : "";
  c.note(fmt::format("training a copy with the lowest bit of {} flipped at step {}", tensor, k_flip_step));
  train(c, flip, fault);
  const std::string what = fmt::format("bit flip at step {}", k_flip_step);
  const DiffResult d = diff_runs(base, flip, {});
  const Divergence& dv = d.divergence;
  if (!dv.found) {
    ctl.line = mark(false, true) + what + ": diff finds no difference in the numbers";
    return ctl;
  }
  const long from = ((dv.step - 1) / k_every) * k_every;
  c.note(fmt::format("replaying both from step {} with trace full", from));
  const std::string rbase = c.path("replay/base"), rflip = c.path("replay/flip");
  fs::create_directories(c.path("replay"));
  replay(c, base, rbase, from, dv.step, "");
  replay(c, flip, rflip, from, dv.step, fault);
  const Localization loc = localize(dv, diff_runs(rbase, rflip, {}), from, 1);
  const std::string phase = loc.found ? loc.phase : "no phase";
  const std::string entry = loc.found ? loc.entry : dv.first_tensor;
  ctl.ok = dv.step == k_flip_step && dv.first_tensor == tensor && loc.found && loc.step == k_flip_step &&
           loc.phase == "update" && loc.entry == tensor;
  ctl.line = mark(ctl.ok, true) + fmt::format("{}: diff names step {}, {}, {}", what, dv.step, phase, entry);
  if (!ctl.ok) {
    ctl.line += fmt::format(" (injected: step {}, update, {})", k_flip_step, tensor);
  }
  return ctl;
}

// (b) A resume whose restore drops the optimizer state: check --vary resume must fail at the first
// step after the checkpoint the resumed run restarted from.
SelftestControl broken_resume(const Context& c) {
  SelftestControl ctl{"broken resume", true, false, ""};
  const std::string dir = c.path("resume-broken");
  c.note(fmt::format("check --vary resume={} with a restore that drops the optimizer state", k_kill_after));
  ojson report;
  const std::string fault = c.armed("resume") ? "drop-state" : "";
  const int rc = check(c, dir, {"--vary", fmt::format("resume={}", k_kill_after)}, fault, report);
  const std::string what = fmt::format("broken resume (optimizer state dropped): check --vary resume={}", k_kill_after);
  long resumed_from = -1;
  const ojson manifest = RunDir::open((fs::path(dir) / "run-2").string()).read_manifest();
  const ojson resumes = manifest.value("resumes", ojson::array());
  if (!resumes.empty()) {
    resumed_from = resumes.back().value("from_step", -1L);
  }
  const long step = report.value(ojson::json_pointer("/pairs/0/diff/divergence/step"), -1L);
  ctl.ok = rc == 1 && resumed_from > 0 && step == resumed_from + 1;
  if (rc == 0) {
    ctl.line = mark(false, true) + what + " passes";
  } else {
    ctl.line = mark(ctl.ok, true) + fmt::format("{} fails at step {}, the first step after the resume from step {}",
                                                what, step, resumed_from);
  }
  return ctl;
}

// (c) Gradients summed in completion order on two threads: check must fail. Each process draws the
// order in which it issues the chunks of 8 samples (train/backend_cpu.cpp), and a micro-batch of at
// least 32 rows has 4 chunks, so two runs add the same partials in the same order only if they
// drew the same order in every one of their hundreds of reductions: never in practice. (Two
// chunks would not do: a + b == b + a exactly.)
SelftestControl atomic_reduction(const Context& c) {
  SelftestControl ctl{"atomic reduction", true, false, ""};
  const std::string dir = c.path("atomic");
  c.note("check --vary threads=2,2 with determinism.reduction=atomic");
  ojson report;
  const int rc = check(c, dir,
                       {"--vary", "threads=2,2", "--set",
                        c.armed("atomic") ? "determinism.reduction=atomic" : "determinism.reduction=ordered", "--set",
                        "training.accumulation=1"},
                       "", report);
  const std::string what = "atomic reduction with 2 threads: check";
  ctl.ok = rc == 1;
  if (!ctl.ok) {
    ctl.line = mark(false, true) + what + " passes";
    return ctl;
  }
  using ptr = ojson::json_pointer;
  std::string where;
  if (report.value(ptr("/pairs/0/localization/found"), false)) {
    where = fmt::format("step {}, {}, layer {}, {}", report.value(ptr("/pairs/0/localization/step"), 0L),
                        report.value(ptr("/pairs/0/localization/phase"), ""),
                        report.value(ptr("/pairs/0/localization/layer"), ""),
                        report.value(ptr("/pairs/0/localization/tensor"), ""));
  } else if (const long step = report.value(ptr("/pairs/0/diff/divergence/step"), -1L); step >= 0) {
    where = fmt::format("step {}", step);
  }
  ctl.line = mark(true, true) + what + " fails" + (where.empty() ? "" : " at " + where);
  return ctl;
}

// (d) The true runs: a rerun, another thread count, a kill and resume must all be identical.
SelftestControl true_runs(const Context& c) {
  SelftestControl ctl{"true runs", false, true, ""};
  const std::vector<std::pair<std::string, std::vector<std::string>>> checks = {
      {"check", {}},
      {"check --vary threads=1,2", {"--vary", "threads=1,2"}},
      {fmt::format("check --vary resume={}", k_kill_after), {"--vary", fmt::format("resume={}", k_kill_after)}},
  };
  std::vector<std::string> names, failed;
  int i = 0;
  for (const auto& [name, extra] : checks) {
    c.note(name + " (no fault)");
    ojson report;
    const int rc = check(c, c.path(fmt::format("true-{}", ++i)), extra, "", report);
    names.push_back(name);
    if (rc != 0) {
      failed.push_back(name + ": " + report.value("verdict", "fails"));
    }
  }
  ctl.ok = failed.empty();
  ctl.line = mark(ctl.ok, false) + "true runs: " +
             (ctl.ok ? fmt::format("{}, {} and {} are identical", names[0], names[1], names[2]) : failed.front());
  return ctl;
}

// The config the controls can use, or an Error saying why not.
void require_usable(const std::string& path) {
  const Config cfg = load_config_file(path, k_sets);
  if (cfg.seed_drawn) {
    throw Error(path, "selftest needs a config with a seed (without one, every run draws its own)");
  }
  const bool has_state = cfg.optimizer.name == "adam" || cfg.optimizer.momentum != 0.0;
  if (!has_state) {
    throw Error(path, "selftest needs an optimizer with state (sgd with momentum > 0, or adam) to break a "
                      "resume; optimizer.momentum is 0");
  }
  if (cfg.training.batch_size < k_atomic_rows) {
    throw Error(path, fmt::format("selftest needs training.batch_size >= {} (atomic mode must have chunks to "
                                  "reorder); it is {}",
                                  k_atomic_rows, cfg.training.batch_size));
  }
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      out.push_back(item);
    }
    if (comma == std::string::npos) {
      break;
    }
    start = comma + 1;
  }
  return out;
}

} // namespace

bool SelftestResult::all_ok() const {
  return std::all_of(controls.begin(), controls.end(), [](const SelftestControl& c) { return c.ok; });
}

const char* selftest_builtin_config() {
  return R"({
  "description": "reprun selftest: a small MLP on synthetic data; each run takes a fraction of a second",
  "seed": 11,
  "data": {"kind": "synthetic", "samples": 1600, "features": 16, "classes": 4, "noise": 1.5,
           "validation_fraction": 0.2},
  "model": {"hidden": [32, 32], "activation": "relu"},
  "optimizer": {"name": "sgd", "lr": 0.05, "momentum": 0.9},
  "training": {"batch_size": 64, "steps": 24, "checkpoint_every": 4, "checkpoint_keep": 1000},
  "determinism": {"threads": 1, "reduction": "ordered", "trace": "weights"}
}
)";
}

SelftestResult run_selftest(const SelftestOptions& opt) {
  Context c;
  c.exe = opt.self_exe.empty() ? fs::read_symlink("/proc/self/exe").string() : opt.self_exe;
  c.work = fs::absolute(opt.work_dir).string();
  c.note = [&](const std::string& s) {
    if (opt.on_note) {
      opt.on_note(s);
    }
  };
  c.env = real_world().environment();
  if (auto it = c.env.find(k_disarm_variable); it != c.env.end()) {
    c.disarmed = split_list(it->second);
  }
  c.env.erase(k_selftest_fault_variable); // the clean runs must be clean whatever our caller set
  c.env.erase(k_disarm_variable);
  if (opt.config.empty()) {
    c.config = c.path("selftest.json");
    write_file_atomic(c.config, selftest_builtin_config());
  } else {
    std::error_code ec;
    if (!fs::is_regular_file(opt.config, ec)) {
      throw Error(opt.config, "no such file");
    }
    c.config = fs::absolute(opt.config).string();
  }
  require_usable(c.config);
  SelftestResult res;
  res.controls.push_back(bit_flip(c));
  res.controls.push_back(broken_resume(c));
  res.controls.push_back(atomic_reduction(c));
  res.controls.push_back(true_runs(c));
  return res;
}

} // namespace reprun
