// `reprun train CONFIG.json [-o RUN_DIR] [--threads N] [--device D] [--set KEY=VALUE]... [--resume RUN_DIR [-o NEW_RUN_DIR --from-step S]] [--quiet]`
#include "cli/cli.hpp"

#include "reprun/train/trainer.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace {

struct TrainFlags {
  std::string config;
  std::string out;
  std::string resume;
  long from_step = -1;
  int threads = 0;
  int ranks = 0;
  std::string device;
  int kill_rank = -1;
  std::vector<std::string> sets;
  bool quiet = false;
  long kill_after = 0;
  bool kill_after_save = false;
  std::vector<std::string> env_allow;
  std::string search_trial;
};

std::string bar(long step, long total) {
  const int width = 24;
  int filled = total > 0 ? static_cast<int>(width * step / total) : width;
  return std::string(static_cast<size_t>(filled), '#') + std::string(static_cast<size_t>(width - filled), '.');
}

int run(const TrainFlags& f) {
  TrainOptions opt;
  opt.config_path = f.config;
  opt.overrides = f.sets;
  opt.out_dir = f.out;
  opt.resume_dir = f.resume;
  opt.from_step = f.from_step;
  opt.threads = f.threads;
  opt.ranks = f.ranks;
  opt.device = f.device;
  opt.kill_rank = f.kill_rank;
  opt.command_line = command_line();
  opt.kill_after_step = f.kill_after;
  opt.kill_after_save = f.kill_after_save;
  if (!f.search_trial.empty()) {
    if (!nlohmann::ordered_json::accept(f.search_trial)) {
      throw Error("--search-trial", "expected a JSON object");
    }
    opt.search_trial = f.search_trial;
  }
  opt.env_allow = f.env_allow;
  opt.stop = install_stop_handler();
  if (f.config.empty() && f.resume.empty()) {
    throw Error("train: give a CONFIG.json, or --resume RUN_DIR");
  }
  const bool tty = stderr_is_terminal();
  auto last_print = std::chrono::steady_clock::now();
  if (!f.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun: " << s << "\n"; };
    opt.on_progress = [&](const Progress& p) {
      auto now = std::chrono::steady_clock::now();
      bool final = p.step == p.total;
      if (tty) {
        if (!final && now - last_print < std::chrono::milliseconds(100)) {
          return;
        }
        double eta = p.steps_per_second > 0 ? static_cast<double>(p.total - p.step) / p.steps_per_second : 0.0;
        std::cerr << fmt::format("\r[{}] {}/{} loss {:.4f} {:.1f} steps/s ETA {:.0f}s   ", bar(p.step, p.total),
                                 p.step, p.total, p.loss, p.steps_per_second, eta)
                  << (final ? "\n" : "") << std::flush;
      } else {
        if (!final && !p.eval && now - last_print < std::chrono::seconds(5)) {
          return;
        }
        std::string ev = p.eval ? fmt::format(" val_loss {:.4f} val_acc {:.4f}", p.val_loss, p.val_accuracy) : "";
        std::cerr << fmt::format("step {}/{} epoch {} loss {:.6f} {:.1f} steps/s{}\n", p.step, p.total, p.epoch,
                                 p.loss, p.steps_per_second, ev);
      }
      last_print = now;
    };
  }
  TrainResult r = run_training(opt);
  if (tty && !f.quiet && r.status != "complete") {
    std::cerr << "\n";
  }
  if (r.other_rank || (r.launched && r.code == ExitCode::different)) {
    return static_cast<int>(r.code); // rank 0 reports (under --ranks, its lines are ours)
  }
  if (r.code == ExitCode::different) {
    std::cerr << "reprun: error: " << r.run_dir << ": " << r.status << "\n";
  } else if (!f.quiet && !r.launched) {
    std::cout << fmt::format("run: {}\nstatus: {}{}\nsteps: {}\ntrain_loss: {}\n", r.run_dir, r.status,
                             r.already_complete ? " (already; nothing was trained, the metrics are the run's own)" : "",
                             r.steps, r.train_loss);
    if (r.has_val) {
      std::cout << fmt::format("val_loss: {}\nval_accuracy: {:.4f}\n", r.val_loss, r.val_accuracy);
    }
    std::cout << fmt::format("steps_per_second: {:.1f}{}\n", r.steps_per_second,
                             r.already_complete ? " (when it was trained)" : "");
  }
  return static_cast<int>(r.code);
}

} // namespace

Action add_train(CLI::App& sub) {
  auto f = std::make_shared<TrainFlags>();
  sub.add_option("config", f->config, "Training config (JSON); optional with --resume");
  sub.add_option("-o,--out", f->out, "Run directory to create (default: runs/<config>-<time>)");
  sub.add_option("--threads", f->threads, "Worker threads (overrides determinism.threads)")->check(CLI::Range(1, 1024));
  sub.add_option("--ranks", f->ranks,
                 "Train data-parallel on this many MPI ranks on this machine (runs mpirun; overrides "
                 "determinism.ranks); the bits are those of one process")
      ->check(CLI::Range(1, 4096));
  sub.add_option("--device", f->device,
                 "Compute on cpu or cuda (overrides determinism.device); the bits are the same on both")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub.add_option("--set", f->sets, "Override a config key: KEY=VALUE (value parsed as JSON, else a string)");
  sub.add_option("--resume", f->resume,
                 "Continue a stopped run from its latest valid checkpoint; with -o, fork it into a new run "
                 "directory. --set may change execution settings only");
  sub.add_option("--from-step", f->from_step, "With --resume and -o: fork from the checkpoint of this step (0: "
                                              "the start)")
      ->check(CLI::Range(0L, 1'000'000'000L));
  sub.add_flag("-q,--quiet", f->quiet, "Print only errors");
  sub.add_option("--env-allow", f->env_allow, "Also record environment variables matching PATTERN (glob)");
  sub.add_option("--kill-after-step", f->kill_after,
                 "Testing aid: SIGKILL this process right after logging the given step")
      ->group("");
  sub.add_flag("--kill-after-save", f->kill_after_save,
               "Testing aid: with --kill-after-step, kill once the step's checkpoint (when it has one) is written")
      ->group("");
  sub.add_option("--search-trial", f->search_trial, "Internal: reprun search's facts of the trial (JSON)")
      ->group("");
  sub.add_option("--kill-rank", f->kill_rank, "Testing aid: with --kill-after-step, only this MPI rank")
      ->group("");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
