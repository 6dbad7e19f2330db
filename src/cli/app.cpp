// The app: command table, parsing, and the one place where errors become exit codes.
#include "cli/cli.hpp"

#include "reprun/meta/buildinfo.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/process.hpp"
#include "reprun/train/exchange.hpp"

#include <fmt/format.h>
#include <iostream>
#include <csignal>
#include <unistd.h>

namespace reprun::cli {

namespace {
std::vector<std::string> g_argv;
std::vector<std::string> g_after_dashes;
} // namespace

const std::vector<std::string>& args_after_dashes() { return g_after_dashes; }

const std::vector<CommandSpec>& commands() {
  static const std::vector<CommandSpec> k_commands = {
      {"train", "Train the built-in MLP deterministically and write a run record", add_train},
      {"diff", "Compare two runs: identical or not, what changed, where they part", add_diff},
      {"check", "CI gate: train several times (varying threads, accumulation, resume) and require identical bits",
       add_check},
      {"search", "Hyperparameter search driven by the experiment seed: the same trials and winner for any --jobs",
       add_search},
      {"exec", "Audit any training program (PyTorch, TensorFlow, JAX, scripts): run it N times pinned, record, diff",
       add_exec},
      {"selftest", "Prove the gate can fail: inject faults it must catch, and require the true runs to pass",
       add_selftest},
      {"hash", "Content fingerprint of files and directory trees (SHA-256, cached)", add_hash},
      {"env", "Show what this machine would record: build, host, GPU, environment, git state", add_env},
  };
  return k_commands;
}

std::vector<std::string> command_line() { return g_argv; }

bool stderr_is_terminal() { return ::isatty(2) == 1; }

namespace {
std::atomic<bool> g_stop{false};
std::atomic<int> g_stop_signal{0};

extern "C" void on_stop_signal(int sig) {
  if (g_stop.exchange(true)) {
    // A second signal ends the process at once, and first the process groups of the programs it
    // runs (reprun exec's, check's trainings): nothing of theirs outlives it.
    signal_process_groups(SIGKILL);
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal.store(sig);
}
} // namespace

const char* stop_signal_name() {
  switch (g_stop_signal.load()) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGUSR1:
    return "SIGUSR1";
  default:
    return "a signal";
  }
}

const std::atomic<bool>* install_stop_handler() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  // mpirun forwards SIGUSR1 to every rank (reprun train --ranks stops its ranks so), and schedulers
  // send it ahead of a preemption (Slurm's --signal=USR1): a stop request like the others.
  sigaction(SIGUSR1, &sa, nullptr);
  return &g_stop;
}

int run_main(int argc, char** argv) {
  g_argv.assign(argv, argv + argc);
  // A file-size limit (ulimit -f) must be a write error we report, not a silent SIGXFSZ death.
  std::signal(SIGXFSZ, SIG_IGN);
  // `reprun exec [options] -- PROGRAM ARGS...`: everything after the first "--" belongs to the
  // program, so it is taken out before CLI11 parses (which would treat "--" as the end of a
  // multi-value option and then parse the program's own flags).
  g_after_dashes.clear();
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--") {
      g_after_dashes.assign(argv + i + 1, argv + argc);
      argc = i;
      break;
    }
  }
  CLI::App app{"reprun: reproducible ML training, and the auditor that says where two runs part"};
  app.set_version_flag("--version", "reprun " + reprun_version());
  app.require_subcommand(1);
  std::vector<std::string> names;
  Action action;
  std::vector<std::pair<CLI::App*, Action>> actions;
  for (const auto& c : commands()) {
    CLI::App* sub = app.add_subcommand(c.name, c.help);
    actions.emplace_back(sub, c.add(*sub));
    names.push_back(c.name);
  }
  try {
    if (argc >= 2 && argv[1][0] != '-') {
      std::string first = argv[1];
      bool known = false;
      for (const auto& n : names) {
        known = known || n == first;
      }
      if (!known) {
        throw Error(fmt::format("unknown command '{}'{}; run 'reprun --help' for the list", first,
                                did_you_mean(first, names)));
      }
    }
    app.parse(argc, argv);
    for (auto& [sub, act] : actions) {
      if (sub->parsed()) {
        return act();
      }
    }
    return 0;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      return app.exit(e); // --help, --version
    }
    std::cerr << "reprun: error: " << e.what() << " (see 'reprun --help')\n";
    return static_cast<int>(ExitCode::input_error);
  } catch (const Error& e) {
    if (e.code() == ExitCode::interrupted) {
      // Not an error of the input: what was stopped, and what was kept.
      std::cerr << "reprun: interrupted by " << stop_signal_name() << ": " << e.what() << "\n";
      return static_cast<int>(e.code());
    }
    // Before MPI starts, ranks other than 0 meet the same input errors as rank 0: said there once.
    if (launched_rank() <= 0 || mpi_started()) {
      std::cerr << "reprun: error: " << e.what() << "\n";
    }
    return static_cast<int>(e.code());
  } catch (const std::bad_alloc&) {
    std::cerr << "reprun: error: out of memory\n";
    return static_cast<int>(ExitCode::input_error);
  } catch (const std::exception& e) {
    std::cerr << "reprun: error: " << e.what() << "\n";
    return static_cast<int>(ExitCode::input_error);
  }
}

} // namespace reprun::cli
