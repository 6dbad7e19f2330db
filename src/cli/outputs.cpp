// What check and exec share at the command line: the work directory (given, or temporary and
// kept only when something differs) and the reports (stdout, --junit/--markdown/--html files,
// $GITHUB_STEP_SUMMARY).
#include "cli/cli.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>

namespace reprun::cli {

namespace fs = std::filesystem;

WorkDir::WorkDir(const std::string& given, const std::string& prefix, bool keep_it) : keep(keep_it) {
  if (!given.empty()) {
    path = given;
    return;
  }
  std::string tmpl = (fs::temp_directory_path() / (prefix + ".XXXXXX")).string();
  if (!::mkdtemp(tmpl.data())) {
    throw Error(tmpl, "cannot create a temporary work directory");
  }
  path = tmpl;
  temporary = true;
}

void WorkDir::discard_if_empty() const {
  std::error_code ec;
  if (temporary && fs::is_empty(path, ec)) {
    fs::remove(path, ec);
  }
}

std::string WorkDir::after_interrupt() const {
  if (temporary && !keep) {
    std::error_code ec;
    fs::remove_all(path, ec);
    return "the temporary work directory was removed (-o WORK_DIR or --keep keeps it)";
  }
  return "what was recorded is in " + path;
}

int finish_runs(CheckResult r, const std::string& format_name, const ReportFiles& files, const WorkDir& work) {
  ReportFormat format = parse_report_format(format_name);
  // Decided before the reports are written, so that none names a folder that is gone. An exec run
  // ended at its time limit left partial runs: the temporary folder goes too (--keep keeps it).
  r.work_dir_removed = work.temporary && !work.keep && (r.identical || r.timed_out);
  std::cout << render_check(r, format, format == ReportFormat::text && want_color());
  if (!files.junit.empty()) {
    write_file_atomic(files.junit, render_check(r, ReportFormat::junit, false));
  }
  if (!files.markdown.empty()) {
    write_file_atomic(files.markdown, render_check(r, ReportFormat::markdown, false));
  }
  if (!files.html.empty()) {
    write_file_atomic(files.html, render_check(r, ReportFormat::html, false));
  }
  if (!files.json.empty()) {
    write_file_atomic(files.json, render_check(r, ReportFormat::json, false));
  }
  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
    std::ofstream(summary, std::ios::app) << render_check(r, ReportFormat::markdown, false) << "\n";
  }
  if (r.work_dir_removed) {
    std::error_code ec;
    fs::remove_all(work.path, ec);
  } else if (work.temporary) {
    std::cerr << "reprun " << r.kind << ": runs kept in " << work.path << "\n";
  }
  return !r.error.empty() ? static_cast<int>(ExitCode::input_error) : r.identical ? 0 : 1;
}

void write_error_reports(const std::string& kind, const std::string& subject, const std::string& error,
                         const ReportFiles& files) {
  const std::pair<const std::string*, ReportFormat> reports[] = {
      {&files.junit, ReportFormat::junit}, {&files.markdown, ReportFormat::markdown}, {&files.html, ReportFormat::html},
      {&files.json, ReportFormat::json}};
  for (const auto& [path, format] : reports) {
    if (path->empty()) {
      continue;
    }
    try {
      write_file_atomic(*path, render_check_error(kind, subject, error, format));
    } catch (const Error&) {
    }
  }
  if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && *summary) {
    std::ofstream(summary, std::ios::app) << render_check_error(kind, subject, error, ReportFormat::markdown) << "\n";
  }
}

void check_report_paths(const std::vector<std::string>& paths) {
  for (const auto& p : paths) {
    if (p.empty()) {
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      throw Error(p, "is a directory; give the report a file name");
    }
    const fs::path folder = fs::path(p).parent_path();
    if (!folder.empty() && !fs::is_directory(folder, ec)) {
      throw Error(p, fmt::format("cannot write the report there: {} is not a directory", folder.string()));
    }
  }
}

void add_work_options(CLI::App& sub, std::string& work, bool& keep) {
  sub.add_option("-o,--out", work, "Work directory for run-1..run-N (default: a temporary one, removed when all runs "
                                   "agree)");
  sub.add_flag("--keep", keep, "Keep the temporary work directory even when all runs agree");
}

void add_report_options(CLI::App& sub, std::string& format, ReportFiles& files) {
  sub.add_option("--format", format, "Report format on stdout: text, json, markdown, junit, html");
  sub.add_option("--junit", files.junit, "Also write a JUnit XML report to FILE");
  sub.add_option("--markdown", files.markdown, "Also write a Markdown report to FILE");
  sub.add_option("--html", files.html, "Also write a self-contained HTML report to FILE");
  sub.add_option("--json", files.json, "Also write the JSON report to FILE (the text report stays on stdout)");
}

} // namespace reprun::cli
