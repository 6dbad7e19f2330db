// `reprun diff RUN_A RUN_B [--format F] [-o FILE] [--rtol X] [--atol X] [--max-ulps N] [--ignore-meta FIELD]...`
#include "cli/cli.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/audit/diff.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/search_dir.hpp"
#include "reprun/report/report.hpp"
#include "reprun/report/search_report.hpp"

#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fmt/format.h>

#include <iostream>
#include <memory>
#include <unistd.h>

namespace reprun::cli {

namespace {
struct DiffFlags {
  std::string a, b;
  std::string format = "text";
  std::string out;
  double rtol = -1, atol = -1;
  long long max_ulps = -1;
  std::vector<std::string> ignore;
};

// CLI11's NonNegativeNumber spells its bound (DBL_MAX) in 309 digits, and lets "nan" through.
const CLI::Validator k_tolerance(
    [](std::string& s) -> std::string {
      double v = 0;
      const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0) {
        return "expected a finite number >= 0, got " + s;
      }
      return "";
    },
    "NUMBER >= 0");

// A progress line on stderr, for a diff of long logs on a terminal: shown once the diff has taken
// a second (a short one stays silent), rewritten in place, and erased when the diff ends, so the
// report alone remains. Never where stderr is a file or a pipe: logs and CI output stay clean.
class ProgressLine {
public:
  explicit ProgressLine(DiffOptions& opt) : m_opt(opt) {
    if (::isatty(STDERR_FILENO) == 0) {
      return;
    }
    opt.progress = [this](uint64_t done, uint64_t total) { show(done, total); };
  }
  ~ProgressLine() {
    m_opt.progress = nullptr;
    if (m_shown) {
      std::fputs("\r\033[K", stderr);
    }
  }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

private:
  void show(uint64_t done, uint64_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    if (s < 1.0 || total == 0) {
      return;
    }
    m_shown = true;
    std::fputs(fmt::format("\rdiff: reading the step logs, {:.1f} of {:.1f} GB ({:.0f}%)", done / 1e9, total / 1e9,
                           100.0 * static_cast<double>(done) / static_cast<double>(total))
                   .c_str(),
               stderr);
  }
  DiffOptions& m_opt;
  std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now();
  bool m_shown = false;
};

int run(const DiffFlags& f) {
  ReportFormat fmt = parse_report_format(f.format);
  DiffOptions opt;
  if (f.rtol >= 0) {
    opt.rtol = f.rtol;
  }
  if (f.atol >= 0) {
    opt.atol = f.atol;
  }
  if (f.max_ulps >= 0) {
    opt.max_ulps = static_cast<uint64_t>(f.max_ulps);
  }
  opt.ignore_meta = f.ignore;
  opt.stored_traces = true; // runs that kept op traces (exec --trace-steps): the op where they part
  const bool sa = SearchDir::holds_search(f.a), sb = SearchDir::holds_search(f.b);
  if (sa || sb) {
    if (!(sa && sb)) {
      throw Error(sa ? f.b : f.a, fmt::format("not a search directory (no search.json), but {} is one: compare two "
                                              "searches, or two trials (SEARCH/trial-0007)",
                                              sa ? f.a : f.b));
    }
    if (fmt == ReportFormat::junit) {
      throw Error("--format", "two searches compare as text, json, markdown or html");
    }
    SearchDiff d = diff_searches(f.a, f.b, opt);
    if (f.out.empty()) {
      std::cout << render_search_diff(d, fmt, fmt == ReportFormat::text && want_color());
    } else {
      write_file_atomic(f.out, render_search_diff(d, fmt, false));
      std::cout << d.verdict << "\n";
    }
    return d.identical ? 0 : 1;
  }
  namespace fs = std::filesystem;
  for (const std::string& p : {f.a, f.b}) {
    // A bare log named on the command line: an empty file is a wrong path or a copy that failed,
    // not a run that stopped before its first step (a run directory says that itself).
    std::error_code ec;
    if (fs::is_regular_file(p, ec) && fs::file_size(p, ec) == 0 && !ec) {
      throw Error(p, "an empty file (expected a run directory or a steps.jsonl file with at least one record)");
    }
  }
  DiffResult r;
  {
    ProgressLine progress(opt);
    r = diff_runs(f.a, f.b, opt);
  }
  if (f.out.empty()) {
    std::cout << render_diff(r, fmt, fmt == ReportFormat::text && want_color());
  } else {
    write_file_atomic(f.out, render_diff(r, fmt, false));
    std::cout << r.verdict << "\n";
  }
  return r.identical ? 0 : 1;
}
} // namespace

Action add_diff(CLI::App& sub) {
  auto f = std::make_shared<DiffFlags>();
  sub.add_option("RUN_A", f->a, "First run directory (or steps.jsonl file, or search directory)")->required();
  sub.add_option("RUN_B", f->b, "Second run directory (or steps.jsonl file, or search directory)")->required();
  sub.add_option("--format", f->format, "Report format: text, json, markdown, junit, html");
  sub.add_option("-o,--output", f->out, "Write the report to FILE (the verdict still goes to stdout)");
  sub.add_option("--rtol", f->rtol, "Tolerance mode: relative tolerance for losses and norms")->check(k_tolerance);
  sub.add_option("--atol", f->atol, "Tolerance mode: absolute tolerance")->check(k_tolerance);
  sub.add_option("--max-ulps", f->max_ulps, "Tolerance mode: units in the last place")->check(k_tolerance);
  sub.add_option("--ignore-meta", f->ignore, "Do not fail on this manifest field (and its sub-fields)");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
