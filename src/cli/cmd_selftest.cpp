// `reprun selftest [CONFIG] [-o WORK_DIR] [--keep] [--quiet]`
#include "cli/cli.hpp"

#include "reprun/core/error.hpp"
#include "reprun/gate/selftest.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace {

namespace fs = std::filesystem;

struct SelftestFlags {
  std::string config;
  std::string work;
  bool keep = false;
  bool quiet = false;
};

int run(const SelftestFlags& f) {
  std::error_code ec;
  if (!f.work.empty() && fs::exists(f.work, ec) && !fs::is_empty(f.work, ec)) {
    throw Error(f.work, "is not empty; give selftest a new or empty -o WORK_DIR");
  }
  WorkDir work(f.work, "reprun-selftest", f.keep);
  fs::create_directories(work.path, ec);
  if (ec) {
    throw Error(work.path, "cannot create the work directory: " + ec.message());
  }
  // The runs go in a temporary folder that is removed, whatever happens, unless kept.
  const bool remove = work.temporary && !work.keep;
  struct Remover {
    std::string path;
    ~Remover() {
      std::error_code e;
      if (!path.empty()) {
        fs::remove_all(path, e);
      }
    }
  } remover{remove ? work.path : ""};

  SelftestOptions opt;
  opt.config = f.config;
  opt.work_dir = work.path;
  if (!f.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun selftest: " << s << "\n"; };
  }
  const SelftestResult r = run_selftest(opt);
  for (const auto& c : r.controls) {
    std::cout << c.line << "\n";
  }
  std::cout << (r.all_ok() ? "selftest: the gate caught every fault and passed the true runs\n"
                           : "selftest: FAILED: the gate cannot be trusted on this build and machine\n");
  if (!remove) {
    std::cerr << "reprun selftest: runs kept in " << work.path << "\n";
  } else if (!r.all_ok()) {
    std::cerr << "reprun selftest: run again with --keep to keep the runs and their logs\n";
  }
  return r.all_ok() ? 0 : 1;
}

} // namespace

Action add_selftest(CLI::App& sub) {
  auto f = std::make_shared<SelftestFlags>();
  sub.add_option("config", f->config, "Training config (JSON) to test with (default: a small built-in one)");
  sub.add_option("-o,--out", f->work, "Work directory for the runs, kept (default: a temporary one, removed)");
  sub.add_flag("--keep", f->keep, "Keep the temporary work directory (its path is printed)");
  sub.add_flag("-q,--quiet", f->quiet, "No progress notes on stderr");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
