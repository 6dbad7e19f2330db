// The command-line layer: one file per subcommand declares its options and calls one library
// function. Only files under src/cli include CLI11.
#pragma once

#include "reprun/report/report.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace reprun::cli {

// A subcommand's run function: returns the process exit code.
using Action = std::function<int()>;

struct CommandSpec {
  const char* name;
  const char* help;
  Action (*add)(CLI::App& sub); // declares options, returns what to run once parsed
};

// The command table (cli_commands.cpp): every subcommand with its one-line description.
const std::vector<CommandSpec>& commands();

// Builds the app, parses, runs; maps every error to its exit code. The whole of main().
int run_main(int argc, char** argv);

// Shared helpers.
std::vector<std::string> command_line(); // reprun's own argv, as recorded in manifests
// The arguments after the first "--" (the program of `reprun exec`).
const std::vector<std::string>& args_after_dashes();
bool stderr_is_terminal();
// SIGINT, SIGTERM and SIGUSR1 set the returned flag (the command stops cleanly, exit 130); a second
// signal ends the process groups of the programs it runs (core/process) and the process at once.
const std::atomic<bool>* install_stop_handler();
// "SIGINT", "SIGTERM", "SIGUSR1": the first stop signal received ("a signal" when none).
const char* stop_signal_name();

// check and exec: where the runs go, and the reports they write.
struct WorkDir {
  WorkDir(const std::string& given, const std::string& prefix, bool keep); // given, or a new temporary one
  void discard_if_empty() const;                                // after an error
  // After an interrupt: removes a temporary one (unless --keep), and says where the runs are or
  // that they are gone.
  std::string after_interrupt() const;
  std::string path;
  bool temporary = false;
  bool keep = false; // --keep: a temporary one stays, whatever the result
};
struct ReportFiles {
  std::string junit, markdown, html, json;
};
void add_report_options(CLI::App& sub, std::string& format, ReportFiles& files);
// Refuses, before any training, a report file that cannot be written at the end: an existing
// directory, or a path whose folder does not exist. Empty paths are skipped.
void check_report_paths(const std::vector<std::string>& paths);
// -o WORK_DIR and --keep, for the commands that launch runs.
void add_work_options(CLI::App& sub, std::string& work, bool& keep);
// Prints and writes the reports, removes a temporary work directory when all runs agree or (exec)
// a run was ended at its time limit (else says where they are); returns the exit code (0
// identical, 1 different, 2 when a run failed: CheckResult::error).
int finish_runs(CheckResult r, const std::string& format, const ReportFiles& files, const WorkDir& work);
// After an error (exit 2): writes the error into the --junit, --markdown, --html and --json files and
// $GITHUB_STEP_SUMMARY, so that a CI view shows it; a report that cannot be written is skipped
// (the error line on stderr stays the one that counts).
void write_error_reports(const std::string& kind, const std::string& subject, const std::string& error,
                         const ReportFiles& files);

Action add_train(CLI::App& sub);
Action add_diff(CLI::App& sub);
Action add_check(CLI::App& sub);
Action add_env(CLI::App& sub);
Action add_hash(CLI::App& sub);
Action add_exec(CLI::App& sub);
Action add_selftest(CLI::App& sub);
Action add_search(CLI::App& sub);

} // namespace reprun::cli
