// `reprun search CONFIG.json -o SEARCH_DIR [--jobs J] [--set KEY=VALUE]... [--format F] [--markdown FILE] [--html FILE] [-q]`
// `reprun search [CONFIG.json] --resume SEARCH_DIR [--jobs J]`
#include "cli/cli.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/gate/search.hpp"
#include "reprun/record/search_dir.hpp"
#include "reprun/report/search_report.hpp"

#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>

namespace reprun::cli {

namespace {

struct SearchFlags {
  std::string config;
  std::string out;
  std::string resume;
  int jobs = 1;
  std::vector<std::string> sets;
  std::string format = "text";
  std::string markdown, html;
  bool quiet = false;
};

int run(const SearchFlags& f) {
  const ReportFormat fmt = parse_report_format(f.format);
  if (fmt == ReportFormat::junit) {
    throw Error("--format", "a leaderboard is text, json, markdown or html");
  }
  check_report_paths({f.markdown, f.html}); // before any trial, not after the last
  SearchOptions opt;
  opt.config = f.config;
  opt.out_dir = f.out;
  opt.resume_dir = f.resume;
  opt.jobs = f.jobs;
  opt.sets = f.sets;
  opt.command_line = command_line();
  opt.stop = install_stop_handler();
  const bool tty = stderr_is_terminal();
  if (!f.quiet) {
    opt.on_note = [](const std::string& s) { std::cerr << "reprun search: " << s << "\n"; };
    if (tty) {
      opt.on_progress = [](const SearchProgress& p) {
        std::cerr << fmt::format("\r\033[K[{}/{}] {}", p.done, p.total, p.line) << std::flush;
        if (p.done == p.total) {
          std::cerr << "\n";
        }
      };
    }
  }
  SearchOutcome out = run_search(opt);
  const SearchRecord& s = out.record;
  const std::string dir = s.dir;
  if (tty && !f.quiet) {
    std::cerr << "\r\033[K";
  }
  if (out.interrupted || !s.complete) {
    std::cerr << fmt::format("reprun search: {}; continue it with: reprun search --resume {}\n",
                             out.interrupted ? "interrupted" : "incomplete", dir);
    return out.interrupted ? static_cast<int>(ExitCode::interrupted) : static_cast<int>(ExitCode::input_error);
  }
  SearchDir sd = SearchDir::open(dir);
  sd.write(SearchFile::leaderboard_json, render_leaderboard(s, ReportFormat::json, false));
  sd.write(SearchFile::leaderboard_text, render_leaderboard(s, ReportFormat::text, false));
  sd.write(SearchFile::leaderboard_markdown, render_leaderboard(s, ReportFormat::markdown, false));
  sd.write(SearchFile::report_html, render_leaderboard(s, ReportFormat::html, false));
  if (!f.markdown.empty()) {
    write_file_atomic(f.markdown, render_leaderboard(s, ReportFormat::markdown, false));
  }
  if (!f.html.empty()) {
    write_file_atomic(f.html, render_leaderboard(s, ReportFormat::html, false));
  }
  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
    std::ofstream(summary, std::ios::app) << render_leaderboard(s, ReportFormat::markdown, false) << "\n";
  }
  std::cout << render_leaderboard(s, fmt, fmt == ReportFormat::text && want_color());
  if (!f.quiet) {
    std::cerr << fmt::format("reprun search: {} (leaderboard.txt, leaderboard.json, leaderboard.md, report.html; "
                             "timings.json; {:.1f} s)\n",
                             dir, out.wall_seconds);
  }
  return 0;
}

} // namespace

Action add_search(CLI::App& sub) {
  auto f = std::make_shared<SearchFlags>();
  sub.add_option("config", f->config, "Config (JSON) with a \"search\" section; optional with --resume");
  sub.add_option("-o,--out", f->out, "Search directory to create (trials, leaderboard)");
  sub.add_option("--resume", f->resume, "Continue a stopped search in its directory; the result is the same as "
                                        "an uninterrupted search's");
  sub.add_option("-j,--jobs", f->jobs, "Trials trained at once (never changes a result)")->check(CLI::Range(1, 256));
  sub.add_option("--set", f->sets, "Override a config key, search keys too: KEY=VALUE");
  sub.add_option("--format", f->format, "Leaderboard on stdout: text, json, markdown, html");
  sub.add_option("--markdown", f->markdown, "Also write the leaderboard as Markdown to FILE");
  sub.add_option("--html", f->html, "Also write the HTML report to FILE");
  sub.add_flag("-q,--quiet", f->quiet, "No progress and notes");
  return [f] { return run(*f); };
}

} // namespace reprun::cli
