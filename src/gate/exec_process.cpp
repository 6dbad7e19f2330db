// The process-running part of one run of `reprun exec` (private to src/gate/): the program's
// environment (the capture's files, a replay's trace), its launch through core/process, the kill of
// a program without the capture once its own log shows a step, and the block that shows a failure.
// What the run records of the process is exec_run.cpp's.
#include "gate/exec_run.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fmt/format.h>
#include <sstream>
#include <thread>

namespace reprun {

namespace {

// Kills the process once its own step log (or its stdout through --loss-regex) shows `step`: a
// program without reprun's capture, preempted after a step. Polls every 20 ms until `done`.
class LogWatch {
public:
  LogWatch(const ExecPlan& plan, std::string path, long step, std::atomic<bool>& kill)
      : m_plan(plan), m_path(std::move(path)), m_step(step), m_kill(kill) {
    m_thread = std::thread([this] { watch(); });
  }
  ~LogWatch() {
    m_done = true;
    m_thread.join();
  }
  LogWatch(const LogWatch&) = delete;
  LogWatch& operator=(const LogWatch&) = delete;

private:
  void watch() {
    while (!m_done && !m_kill) {
      if (last_step() >= m_step) {
        m_kill = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  long last_step() const {
    std::string text;
    try {
      text = read_file(m_path);
    } catch (const Error&) {
      return -1;
    }
    long last = -1;
    size_t pos = 0, count = 0;
    while (pos < text.size()) {
      const size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) {
        break; // a line being written
      }
      const std::string line = text.substr(pos, nl - pos);
      pos = nl + 1;
      if (m_plan.loss_re) {
        std::smatch m;
        if (std::regex_search(line, m, *m_plan.loss_re) && m.size() >= 3) {
          last = std::max(last, std::strtol(m[1].str().c_str(), nullptr, 10));
        } else if (std::regex_search(line, m, *m_plan.loss_re)) {
          last = static_cast<long>(++count);
        }
      } else {
        last = std::max(last, line_step(line));
      }
    }
    return last;
  }
  const ExecPlan& m_plan;
  std::string m_path;
  long m_step;
  std::atomic<bool>& m_kill;
  std::atomic<bool> m_done{false};
  std::thread m_thread;
};

} // namespace

// The program's arguments with {run_dir} replaced by the run's directory.
std::vector<std::string> expand_run_dir(std::vector<std::string> args, const std::string& run_dir) {
  static const std::string k_token = "{run_dir}";
  for (auto& a : args) {
    for (size_t at = a.find(k_token); at != std::string::npos; at = a.find(k_token, at + run_dir.size())) {
      a.replace(at, k_token.size(), run_dir);
    }
  }
  return args;
}

ProcessResult run_program(const ExecPlan& plan, RunInProgress& r, const ProcessPlan& p, const RunDir& files,
                          const ReplaySpec& replay) {
  std::map<std::string, std::string> env = r.env;
  env["REPRUN_RUN_DIR"] = r.run.path();
  env["REPRUN_STEP_LOG"] = files.file(RunFile::steps);
  if (!plan.capture_dir.empty()) {
    auto pp = env.find("PYTHONPATH");
    env["PYTHONPATH"] = plan.capture_dir + (pp == env.end() || pp->second.empty() ? "" : ":" + pp->second);
    env["REPRUN_CAPTURE"] = "1";
    env["REPRUN_AUTO_STEP_LOG"] = files.file(RunFile::capture_steps);
    env["REPRUN_FRAMEWORK_FILE"] = files.file(RunFile::framework_facts);
    env["REPRUN_EVENTS"] = files.file(RunFile::events);
    // The ranks of a data-parallel program but rank 0 keep their records in ranks/<r>/.
    env["REPRUN_RANK_STEP_LOG"] = files.rank_file_template(RunFile::capture_steps);
    env["REPRUN_RANK_FRAMEWORK_FILE"] = files.rank_file_template(RunFile::framework_facts);
    if (replay.trace_steps > 0) {
      env["REPRUN_OP_TRACE"] = files.file(RunFile::op_trace);
      env["REPRUN_RANK_OP_TRACE"] = files.rank_file_template(RunFile::op_trace);
      env["REPRUN_OP_TRACE_STEPS"] = std::to_string(replay.trace_steps);
    }
    if (replay.trace_from >= 0) {
      env["REPRUN_OP_TRACE_FROM"] = std::to_string(replay.trace_from); // ops counted from the resume boundary
    }
    if (replay.compile_off) {
      // Compiled code runs kernels no dispatch mode sees: the replay runs the program eagerly, and
      // localize_ops checks that its numbers are the compiled runs' before it trusts what it finds.
      env["TORCHDYNAMO_DISABLE"] = "1";
    }
    if (replay.save_index >= 0) {
      env["REPRUN_OP_SAVE"] = std::to_string(replay.save_index);
      env["REPRUN_OP_SAVE_DIR"] = replay.save_dir;
      env["REPRUN_OP_FIX"] = replay.fix_kind;
      env["REPRUN_OP_THREADS"] = replay.threads;
    }
    for (const auto& [k, v] : p.env) {
      env[k] = v;
    }
  }
  std::vector<std::string> argv = r.argv;
  const auto extra = expand_run_dir(p.extra_args, r.run.path());
  argv.insert(argv.end(), extra.begin(), extra.end());
  if (plan.opt.on_note) {
    std::string what = replay.trace_steps > 0 ? fmt::format("replay of run-{} with an op trace up to step {}", r.res.index,
                                                            replay.trace_steps)
                       : replay.save_index >= 0 ? fmt::format("replay of run-{} to save the inputs of op {}",
                                                              r.res.index, replay.save_index)
                                                : fmt::format("run-{}", r.res.index);
    if (p.number == 1) {
      what += ", to be killed";
    } else if (p.number > 1) {
      what += ", resumed";
    }
    std::string command = plan.command;
    for (const auto& a : p.extra_args) {
      command += " " + a;
    }
    plan.opt.on_note(fmt::format("{}: {}{}", what, command, r.res.variation.empty() ? "" : " (" + r.res.variation + ")"));
  }
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = env;
  spec.stdout_path = r.run.file(RunFile::stdout_log);
  spec.stderr_path = r.run.file(RunFile::stderr_log);
  spec.append = p.append_output;
  spec.tee_fd = plan.opt.quiet ? -1 : 2;
  std::atomic<bool> kill{false};
  std::optional<LogWatch> watch;
  if (p.kill_when_log_reaches > 0) {
    spec.stop = &kill;
    spec.stop_signal = SIGKILL;
    watch.emplace(plan, plan.loss_re ? spec.stdout_path : files.file(RunFile::steps), p.kill_when_log_reaches, kill);
  }
  ProcessResult pr = run_process(spec);
  watch.reset();
  return pr;
}

std::string failure_block(const std::string& label, const ProcessResult& pr, const RunDir& files) {
  constexpr size_t k_tail = 20;
  std::string shown = files.file(RunFile::stderr_log);
  std::string tail = tail_lines(shown, k_tail);
  if (tail.empty()) {
    shown = files.file(RunFile::stdout_log);
    tail = tail_lines(shown, k_tail);
  }
  std::string block = tail.empty()
                          ? fmt::format("{} failed ({}); it wrote nothing to stderr or stdout", label, pr.describe())
                          : fmt::format("{} failed ({}); the last lines of {}:", label, pr.describe(), shown);
  std::istringstream in(tail);
  for (std::string l; std::getline(in, l);) {
    block += "\n  | " + l;
  }
  return block;
}

} // namespace reprun
