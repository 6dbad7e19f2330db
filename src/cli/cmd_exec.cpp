// `reprun exec [-o WORK_DIR] [--keep] [--runs N] [--no-pin] [--pin NAME=VALUE]... [--vary env:NAME=V1,V2]...
//  [--vary resume=N1,N2] [--resume-arg ARG]... [--resume-deadline DURATION] [--time-limit DURATION]
//  [--artifact PATH]... [--loss-regex REGEX] [--format F] [--junit FILE] [--markdown FILE]
//  [--html FILE] [--json FILE] [--quiet] [--no-capture] [--no-localize] [--trace-steps N] [--ignore-meta KEY]...
//  -- PROGRAM ARGS...`
#include "cli/cli.hpp"

#include "reprun/core/error.hpp"
#include "reprun/gate/exec.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace reprun::cli {

namespace {

// `s` as one word of a POSIX shell's command line: as it is when it holds only characters no shell
// reads specially, else in single quotes (a quote in it as '\''); `always`: quoted in any case.
std::string shell_word(const std::string& s, bool always = false) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                       "0123456789_@%+=:,./-") == std::string::npos;
  if (plain && !always) {
    return s;
  }
  std::string out = "'";
  for (const char c : s) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// `reprun exec -- prog < data.csv`: the shell gave reprun the file as stdin, but each run's program
// reads /dev/null (docs/commands.md), so the program would run on no input and the record would not
// name the file. Said even under --quiet, before anything runs.
void warn_stdin_file(const std::vector<std::string>& argv) {
  struct stat in {};
  if (::fstat(0, &in) != 0 || !S_ISREG(in.st_mode)) {
    return;
  }
  std::error_code ec;
  std::string name = std::filesystem::read_symlink("/proc/self/fd/0", ec).string();
  if (ec || name.empty()) {
    name = "FILE";
  } else {
    const std::string rel = std::filesystem::path(name).lexically_relative(std::filesystem::current_path(ec)).string();
    if (!ec && !rel.empty() && rel.rfind("..", 0) != 0) {
      name = rel;
    }
  }
  std::string cmd;
  for (const auto& a : argv) {
    cmd += (cmd.empty() ? "" : " ") + shell_word(a);
  }
  std::cerr << fmt::format("reprun exec: warning: stdin is the file {}, which the program will not read: each run "
                           "reads its stdin from /dev/null; to give every run the file (and record it), redirect in "
                           "the command: reprun exec ... -- sh -c {}\n",
                           name, shell_word(cmd + " < " + shell_word(name), true));
}

struct ExecFlags {
  CLI::App* app = nullptr;
  ExecOptions opt;
  std::string work;
  bool keep = false;
  bool no_pin = false;
  std::string format = "text";
  std::string time_limit;
  std::string resume_deadline;
  ReportFiles files;
};

// The first word CLI11 left unparsed starts the program, unless it looks like an option: a
// mistyped exec option (`--run 3`) is refused with the option it was likely meant to be, never run
// as the program.
void refuse_unknown_option(const CLI::App& app, const std::vector<std::string>& remaining) {
  if (remaining.empty() || remaining.front().size() < 2 || remaining.front()[0] != '-') {
    return;
  }
  const std::string word = remaining.front().substr(0, remaining.front().find('='));
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& n : o->get_lnames()) {
      names.push_back("--" + n);
    }
    for (const auto& n : o->get_snames()) {
      names.push_back("-" + n);
    }
  }
  throw Error(word, fmt::format("unknown option of reprun exec{}; the program and its arguments go after --, e.g. "
                                "reprun exec --runs 3 -- python3 train.py",
                                did_you_mean(word, names)));
}

int run(ExecFlags& f) {
  ExecOptions& opt = f.opt;
  refuse_unknown_option(*f.app, f.app->remaining());
  parse_report_format(f.format);
  check_report_paths({f.files.junit, f.files.markdown, f.files.html, f.files.json});
  if (!f.time_limit.empty()) {
    opt.time_limit = parse_time_limit(f.time_limit);
  }
  if (!f.resume_deadline.empty()) {
    opt.resume_deadline = parse_time_limit(f.resume_deadline, "--resume-deadline");
  }
  for (const auto& extra : f.app->remaining()) { // program arguments when no "--" was given
    opt.argv.push_back(extra);
  }
  const auto& after = args_after_dashes();
  opt.argv.insert(opt.argv.end(), after.begin(), after.end());
  if (opt.argv.empty()) {
    throw Error("exec: give the program to run after --, e.g. reprun exec -- python3 train.py");
  }
  opt.pin = !f.no_pin;
  if (opt.trace_steps > 0 && !opt.capture) {
    throw Error("exec: --trace-steps records the op trace through reprun's capture package: it cannot go with "
                "--no-capture");
  }
  // One run recorded as a reference is kept, wherever it is: it is there to be compared later.
  WorkDir work(f.work, "reprun-exec", f.keep || opt.runs == 1);
  opt.work_dir = work.path;
  if (!opt.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun exec: " << s << "\n"; };
  }
  warn_stdin_file(opt.argv);
  // Even under --quiet: a crash must say why.
  opt.on_failure = [](const std::string& s) { std::cerr << "reprun exec: " << s << "\n"; };
  // SIGINT and SIGTERM end the program with its whole process group; the exec ends interrupted.
  opt.stop = install_stop_handler();
  CheckResult r;
  try {
    r = run_exec(opt);
  } catch (const Error& e) {
    if (e.code() != ExitCode::interrupted) {
      work.discard_if_empty();
      throw;
    }
    // What was recorded stays in a work directory the user named (or --keep); a temporary one goes.
    const std::string kept = work.after_interrupt();
    throw Error(fmt::format("{}; {}", e.what(), kept), ExitCode::interrupted);
  }
  const int code = finish_runs(r, f.format, f.files, work);
  if (!r.error.empty()) {
    // A run failed: the report on stdout compared what ran up to it; the error is the exit status.
    throw Error(r.error);
  }
  return code;
}
} // namespace

Action add_exec(CLI::App& sub) {
  auto f = std::make_shared<ExecFlags>();
  f->app = &sub;
  add_work_options(sub, f->work, f->keep);
  sub.add_option("--runs", f->opt.runs,
                 "Number of runs (default 2); 1 records run-1 as a reference and compares nothing")
      ->check(CLI::Range(1, 64));
  sub.add_flag("--no-pin", f->no_pin, "Run the program as it is, without the determinism pins");
  sub.add_option("--pin", f->opt.pins, "Set NAME=VALUE in every run's environment (recorded as a pin)");
  sub.add_option("--vary", f->opt.vary,
                 "env:NAME=V1,V2,...: run i gets the i-th value; resume=N1,N2,...: run i+1 is killed (SIGKILL) after "
                 "optimizer step N_i and resumed through the program's own code");
  sub.add_option("--resume-arg", f->opt.resume_args,
                 "With --vary resume: an argument added to the resumed process's command ({run_dir} allowed), for a "
                 "script that resumes only when told")
      ->allow_extra_args(false);
  sub.add_option("--artifact", f->opt.artifacts, "A file the program writes (model, predictions): compared by SHA-256");
  sub.add_option("--loss-regex", f->opt.loss_regex,
                 "Without a step log: a regular expression whose group 1 is the loss (or group 1 the step, 2 the loss)");
  sub.add_flag("--no-capture", [f](int64_t) { f->opt.capture = false; },
               "Python programs: do not put reprun's capture package on PYTHONPATH (no automatic step log, "
               "framework facts or op trace)");
  sub.add_flag("--no-localize", [f](int64_t) { f->opt.localize = false; },
               "Do not replay differing PyTorch runs with an op trace to name the operation where they part");
  sub.add_option("--trace-steps", f->opt.trace_steps,
                 "Keep each run's op trace of its first N optimizer steps (ops.jsonl in the run) and let the "
                 "program run on untraced: reprun diff of two such runs, from one machine or two, names the op "
                 "where they part")
      ->check(CLI::Range(1L, 1000000L));
  sub.add_option("--time-limit", f->time_limit,
                 "End a run (its program with every process it started) that runs longer than DURATION: 90, 90s, "
                 "20m, 2h; the exec then fails (exit 2) naming the ranks still running and their last steps");
  sub.add_option("--resume-deadline", f->resume_deadline,
                 "--vary resume=N on a data-parallel program: how long after its first rank stopped after step N "
                 "the job is killed even if some rank has not stopped (default 3m); the exec then fails (exit 2) "
                 "naming those ranks");
  sub.add_option("--env-allow", f->opt.env_allow, "Also record environment variables matching PATTERN (glob)");
  sub.add_flag("--no-inputs", [f](int64_t) { f->opt.record_inputs = false; },
               "Do not record the files the program's processes open (no preload library, no audit hook)");
  sub.add_option("--data-dir", f->opt.data_dirs,
                 "A folder whose files are the program's data wherever it is (files under the current directory and "
                 "those the arguments name are already)");
  sub.add_option("--stat-only", f->opt.stat_only_dirs,
                 "A folder too large to read at every record: its files' sizes and times only, no content digest");
  sub.add_option("--ignore-meta", f->opt.ignore_meta,
                 "Do not fail on this manifest field (and its sub-fields), as reprun diff --ignore-meta");
  add_report_options(sub, f->format, f->files);
  sub.add_flag("-q,--quiet", f->opt.quiet, "Do not show the program's output (it is saved in each run directory; a failed run still shows the end of its stderr)");
  // PROGRAM ARGS...: after "--" (taken out before parsing, see app.cpp), or without "--" everything
  // from the first positional argument on, in order (CLI11's prefix command).
  sub.prefix_command();
  sub.footer("Usage: reprun exec [OPTIONS] -- PROGRAM ARGS...");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
