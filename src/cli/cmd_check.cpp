// `reprun check CONFIG.json [-o WORK_DIR] [--keep] [--runs N] [--vary DIM=V1,V2,...]... [--set KEY=VALUE]... [--device D]
//  [--format F] [--junit FILE] [--markdown FILE] [--html FILE] [--json FILE] [--quiet]`
#include "cli/cli.hpp"

#include "reprun/gate/check.hpp"
#include "reprun/core/error.hpp"

#include <fmt/format.h>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace {
struct CheckFlags {
  std::string config;
  std::string work;
  bool keep = false;
  int runs = 0;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string device;
  std::string format = "text";
  ReportFiles files;
  bool quiet = false;
};

int run(const CheckFlags& f) {
  parse_report_format(f.format); // a bad --format or report path fails before any training
  check_report_paths({f.files.junit, f.files.markdown, f.files.html, f.files.json});
  CheckOptions opt;
  opt.config = f.config;
  opt.runs = f.runs;
  opt.vary = f.vary;
  opt.sets = f.sets;
  if (!f.device.empty()) {
    opt.sets.push_back("determinism.device=" + f.device); // every run, its replays and resumes included
  }
  WorkDir work(f.work, "reprun-check", f.keep);
  opt.work_dir = work.path;
  if (!f.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun check: " << s << "\n"; };
  }
  // SIGINT and SIGTERM stop the training that runs (it checkpoints), and the check ends interrupted.
  opt.stop = install_stop_handler();
  CheckResult r;
  try {
    r = run_check(opt);
  } catch (const Error& e) {
    if (e.code() == ExitCode::interrupted) {
      // What was recorded stays in a work directory the user named (or --keep); a temporary one goes.
      const std::string kept = work.after_interrupt();
      const std::string what = fmt::format("{}; {}", e.what(), kept);
      write_error_reports("check", f.config, "interrupted: " + what, f.files);
      throw Error(what, ExitCode::interrupted);
    }
    work.discard_if_empty(); // the error line names the failing run's log inside it otherwise
    write_error_reports("check", f.config, e.what(), f.files);
    throw;
  }
  return finish_runs(r, f.format, f.files, work);
}
} // namespace

Action add_check(CLI::App& sub) {
  auto f = std::make_shared<CheckFlags>();
  sub.add_option("config", f->config, "Training config (JSON)")->required();
  add_work_options(sub, f->work, f->keep);
  sub.add_option("--runs", f->runs, "Number of runs (default 2, or as many as --vary needs)")->check(CLI::Range(2, 64));
  sub.add_option("--vary", f->vary,
                 "Vary a dimension across runs: threads=1,2,4 | device=cpu,cuda | accumulation=1,2,4 | "
                 "eval_batch_size=1,7,256 | resume=STEP (run i uses value i)");
  sub.add_option("--device", f->device, "Train every run on this device: cpu or cuda (sets determinism.device)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  sub.add_option("--set", f->sets, "Override a config key in every run: KEY=VALUE");
  add_report_options(sub, f->format, f->files);
  sub.add_flag("-q,--quiet", f->quiet, "No progress notes on stderr");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
