// The process-running part of one run of `reprun exec` (private to src/gate/): the program's
// environment (the capture's files, a replay's trace), its launch through core/process, the kill of
// a program without the capture once its own log shows a step, and the block that shows a failure.
// What the run records of the process is exec_run.cpp's.
#include "gate/exec_inputs.hpp"
#include "gate/exec_run.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <csignal>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

namespace reprun {

namespace {

// Kills the process once its own step log (or its stdout through --loss-regex) shows `step`: a
// program without reprun's capture, preempted after a step. Polls every 20 ms until `done`.
class LogWatch {
public:
  // `captured`: the framework facts file of reprun's capture, there once the capture has stepped.
  LogWatch(const ExecPlan& plan, std::string path, std::string captured, long step, std::atomic<bool>& kill)
      : m_plan(plan), m_path(std::move(path)), m_captured(std::move(captured)), m_step(step), m_kill(kill) {
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
      // Once the capture has stepped in a process of the program, it kills the program itself at its
      // first training forward after the step, when the program has saved that step's checkpoint:
      // this watch then waits a step more, lest it cut the save short.
      const long last = last_step();
      std::error_code ec;
      if (last >= m_step && (last > m_step || !std::filesystem::exists(m_captured, ec))) {
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
  std::string m_captured;
  long m_step;
  std::atomic<bool>& m_kill;
  std::atomic<bool> m_done{false};
  std::thread m_thread;
};

// The stop of a data-parallel job (ProcessPlan::stop_world): polls the events file every 50 ms for
// the ranks' "rank" and "stop" events; once `world` ranks stopped, or `deadline` seconds after the
// first one did, SIGKILLs every pid a rank reported (a rank may have left the group) and sets `kill`,
// which ends the program's whole process group at once (the launcher cannot restart or tear down
// its ranks first).
class StopWatch {
public:
  StopWatch(const RunDir& files, int world, double deadline, std::atomic<bool>& kill, JobStop& out)
      : m_files(files), m_world(world), m_deadline(deadline), m_kill(kill), m_out(out) {
    m_thread = std::thread([this] { watch(); });
  }
  ~StopWatch() {
    m_done = true;
    m_thread.join();
  }
  StopWatch(const StopWatch&) = delete;
  StopWatch& operator=(const StopWatch&) = delete;

private:
  void watch() {
    std::optional<std::chrono::steady_clock::time_point> first;
    while (!m_done && !m_kill) {
      ProcessEvents ev;
      try {
        ev = read_events(m_files.file(RunFile::events));
      } catch (const Error&) {
        // a line being written is not complete yet (read_events skips it); any other error: try again
      }
      std::set<long> stopped;
      std::set<long> pids;
      for (const auto& r : ev.ranks) {
        pids.insert(r.pid);
        if (r.stopped) {
          stopped.insert(r.rank);
        }
      }
      if (!stopped.empty() && !first) {
        first = std::chrono::steady_clock::now();
      }
      const bool all = static_cast<int>(stopped.size()) >= m_world;
      const bool late = first && std::chrono::duration<double>(std::chrono::steady_clock::now() - *first).count() >= m_deadline;
      if (all || late) {
        m_out.stopped.assign(stopped.begin(), stopped.end());
        m_out.deadline = !all;
        for (long pid : pids) {
          if (pid > 1) {
            ::kill(static_cast<pid_t>(pid), SIGKILL);
          }
        }
        m_kill = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  const RunDir& m_files;
  int m_world;
  double m_deadline;
  std::atomic<bool>& m_kill;
  JobStop& m_out;
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
    // A replay's trace ends its process; a run recorded with --trace-steps keeps its trace as a run
    // file and runs on untraced.
    const long trace_steps = replay.trace_steps > 0 ? replay.trace_steps : replay.any() ? 0 : plan.opt.trace_steps;
    if (trace_steps > 0) {
      env["REPRUN_OP_TRACE"] = files.file(RunFile::op_trace);
      env["REPRUN_RANK_OP_TRACE"] = files.rank_file_template(RunFile::op_trace);
      env["REPRUN_OP_TRACE_STEPS"] = std::to_string(trace_steps);
      if (!replay.any()) {
        env["REPRUN_OP_TRACE_KEEP"] = "1";
      }
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
  if (!replay.any()) { // a replay re-runs what was recorded: it records nothing more
    add_recording_env(plan, files, env);
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
  // The program and every process it starts (a launcher's ranks, DataLoader workers, torch's
  // resource tracker) in a group of their own: a terminal's Ctrl-C reaches reprun alone, and reprun
  // ends the whole group however the program ends (a stop, the time limit, or a launcher that exits
  // before its workers), so that nothing of it outlives reprun.
  spec.own_process_group = true;
  spec.die_with_parent = true;
  spec.stop = plan.opt.stop;
  spec.stop_signal = SIGTERM;
  spec.grace_seconds = 3;
  spec.time_limit_seconds = plan.opt.time_limit;
  std::atomic<int> pgid{0};
  spec.on_time_limit = [&] { r.still_running = still_running(files, pgid.load()); };
  std::atomic<bool> kill{false};
  std::optional<LogWatch> watch;
  if (p.kill_when_log_reaches > 0) {
    spec.kill = &kill;
    watch.emplace(plan, plan.loss_re ? spec.stdout_path : files.file(RunFile::steps), files.file(RunFile::framework_facts),
                  p.kill_when_log_reaches, kill);
  }
  r.job_stop = {};
  std::optional<StopWatch> job;
  if (p.stop_world > 0) {
    spec.kill = &kill;
    job.emplace(files, p.stop_world, p.stop_deadline, kill, r.job_stop);
  }
  spec.on_start = [&](int pid) { pgid.store(pid); };
  ProcessResult pr = run_process(spec);
  watch.reset();
  job.reset();
  return pr;
}

void stop_if_interrupted(const ExecPlan& plan, const RunInProgress& r, const ProcessResult& pr) {
  if (!pr.stopped && !(plan.opt.stop && plan.opt.stop->load())) {
    return;
  }
  if (!pr.stopped) { // the program had ended: reprun was reading what it read
    throw Error(fmt::format("{} had ended ({}); reprun was fingerprinting what it read: the run is kept without that "
                            "record",
                            r.label, plan.command),
                ExitCode::interrupted);
  }
  throw Error(fmt::format("{} was running ({}); it was ended with every process it started", r.label, plan.command),
              ExitCode::interrupted);
}

std::string still_running(const RunDir& files, int pgid) {
  if (pgid <= 0) {
    return "";
  }
  // Which rank each process is: the one that holds the rank's automatic step log open.
  std::map<std::string, int> logs = {{files.file(RunFile::capture_steps), 0}};
  for (int rank : files.ranks()) {
    logs[files.rank(rank).file(RunFile::capture_steps)] = rank;
  }
  std::map<int, int> ranks; // rank -> pid
  int others = 0;
  for (int pid : process_group_members(pgid)) {
    int rank = -1;
    for (const auto& f : open_files(pid)) {
      if (auto it = logs.find(f); it != logs.end()) {
        rank = it->second;
      }
    }
    if (rank >= 0) {
      ranks[rank] = pid;
    } else {
      ++others;
    }
  }
  auto last_step_of = [](const std::string& path) {
    long last = -1;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
      last = std::max(last, line_step(line));
    }
    return last;
  };
  const bool ranked = !files.ranks().empty() || ranks.size() > 1;
  std::string out;
  for (const auto& [rank, pid] : ranks) {
    const std::string path = rank == 0 ? files.file(RunFile::capture_steps) : files.rank(rank).file(RunFile::capture_steps);
    const long step = last_step_of(path);
    const std::string after = step > 0 ? fmt::format("after step {}", step) : "before its first step";
    out += (out.empty() ? "" : ", ") + (ranked ? fmt::format("rank {} ({})", rank, after) : "the program (" + after + ")");
  }
  if (others > 0) {
    out += fmt::format("{}{} {}process{}{}", out.empty() ? "" : " and ", others, ranks.empty() ? "" : "other ",
                       others == 1 ? "" : "es", ranked ? " (no rank: a launcher, workers, helpers)" : "");
  }
  return out;
}

std::string failure_block(const std::string& label, const ProcessResult& pr, const RunDir& files) {
  constexpr size_t k_tail = 20;
  std::string shown = files.file(RunFile::stderr_log);
  std::string tail = tail_lines(shown, k_tail);
  if (tail.empty()) {
    shown = files.file(RunFile::stdout_log);
    tail = tail_lines(shown, k_tail);
  }
  const std::string what = pr.timed_out ? fmt::format("ran past the time limit and was ended ({})", pr.describe())
                                        : fmt::format("failed ({})", pr.describe());
  std::string block = tail.empty() ? fmt::format("{} {}; it wrote nothing to stderr or stdout", label, what)
                                   : fmt::format("{} {}; the last lines of {}:", label, what, shown);
  std::istringstream in(tail);
  for (std::string l; std::getline(in, l);) {
    block += "\n  | " + l;
  }
  return block;
}

std::string duration_text(double seconds) {
  const long s = std::lround(seconds);
  if (static_cast<double>(s) != seconds) {
    return fmt::format("{:g}s", seconds);
  }
  return s % 3600 == 0 ? fmt::format("{}h", s / 3600) : s % 60 == 0 ? fmt::format("{}m", s / 60) : fmt::format("{}s", s);
}

double parse_time_limit(const std::string& text, const std::string& option) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  const std::string unit = end ? std::string(end) : "";
  const double scale = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : 0;
  if (text.empty() || end == text.c_str() || scale == 0 || !(v > 0) || !std::isfinite(v)) {
    throw Error(option + " " + text, "expected a duration such as 90, 90s, 20m or 2h (greater than 0)");
  }
  if (v * scale > 1e9) { // about 31 years: past what the timers take, and surely a typo
    throw Error(option + " " + text, "too large: at most 1000000000s (about 31 years)");
  }
  return v * scale;
}

} // namespace reprun
