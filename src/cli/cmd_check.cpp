// `reprun check CONFIG.json [-o WORK_DIR] [--runs N] [--vary DIM=V1,V2,...]... [--set KEY=VALUE]...
//  [--format F] [--junit FILE] [--markdown FILE] [--html FILE] [--quiet]`
#include "cli/cli.hpp"

#include "reprun/atomic_file.hpp"
#include "reprun/check.hpp"
#include "reprun/error.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace fs = std::filesystem;

namespace {
struct CheckFlags {
  std::string config;
  std::string work;
  int runs = 0;
  std::vector<std::string> vary;
  std::vector<std::string> sets;
  std::string format = "text";
  std::string junit, markdown, html;
  bool quiet = false;
};

int run(const CheckFlags& f) {
  ReportFormat format = parse_report_format(f.format);
  CheckOptions opt;
  opt.config = f.config;
  opt.runs = f.runs;
  opt.vary = f.vary;
  opt.sets = f.sets;
  bool temporary = f.work.empty();
  if (temporary) {
    std::string tmpl = (fs::temp_directory_path() / "reprun-check.XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) {
      throw Error(tmpl, "cannot create a temporary work directory");
    }
    opt.work_dir = tmpl;
  } else {
    opt.work_dir = f.work;
  }
  if (!f.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun check: " << s << "\n"; };
  }
  CheckResult r;
  try {
    r = run_check(opt);
  } catch (const Error&) {
    // The error line names the failing run's log inside the work directory; an empty one goes.
    std::error_code ec;
    if (temporary && fs::is_empty(opt.work_dir, ec)) {
      fs::remove(opt.work_dir, ec);
    }
    throw;
  }
  std::cout << render_check(r, format, format == ReportFormat::text && want_color());
  if (!f.junit.empty()) {
    write_file_atomic(f.junit, render_check(r, ReportFormat::junit, false));
  }
  if (!f.markdown.empty()) {
    write_file_atomic(f.markdown, render_check(r, ReportFormat::markdown, false));
  }
  if (!f.html.empty()) {
    write_file_atomic(f.html, render_check(r, ReportFormat::html, false));
  }
  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
    std::ofstream out(summary, std::ios::app);
    out << render_check(r, ReportFormat::markdown, false) << "\n";
  }
  if (temporary && r.identical) {
    std::error_code ec;
    fs::remove_all(opt.work_dir, ec);
  } else if (temporary) {
    std::cerr << "reprun check: runs kept in " << opt.work_dir << "\n";
  }
  return r.identical ? 0 : 1;
}
} // namespace

Action add_check(CLI::App& sub) {
  auto f = std::make_shared<CheckFlags>();
  sub.add_option("config", f->config, "Training config (JSON)")->required();
  sub.add_option("-o,--out", f->work, "Work directory for run-1..run-N (default: a temporary one, kept on failure)");
  sub.add_option("--runs", f->runs, "Number of runs (default 2, or as many as --vary needs)")->check(CLI::Range(2, 64));
  sub.add_option("--vary", f->vary,
                 "Vary a dimension across runs: threads=1,2,4 | accumulation=1,2,4 | resume=STEP (run i uses value i)");
  sub.add_option("--set", f->sets, "Override a config key in every run: KEY=VALUE");
  sub.add_option("--format", f->format, "Report format on stdout: text, json, markdown, junit, html");
  sub.add_option("--junit", f->junit, "Also write a JUnit XML report to FILE");
  sub.add_option("--markdown", f->markdown, "Also write a Markdown report to FILE");
  sub.add_option("--html", f->html, "Also write a self-contained HTML report to FILE");
  sub.add_flag("-q,--quiet", f->quiet, "No progress notes on stderr");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
