// The leaderboard and the search comparison as Markdown and HTML. See
// include/reprun/report/search_report.hpp.
#include "report_internal.hpp"

#include "reprun/report/search_report.hpp"

#include <fmt/format.h>

namespace reprun {

namespace {

std::string metric_text(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "-"; }

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '&': o += "&amp;"; break;
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '"': o += "&quot;"; break;
    default: o += c;
    }
  }
  return o;
}

} // namespace

std::string render_leaderboard_markdown(const SearchRecord& s) {
  std::string o = fmt::format("### reprun search: {} trials ({}), {} ({})\n\n", s.trial_count, s.method, s.metric,
                              s.maximize ? "max" : "min");
  o += "| rank | trial | " + s.metric + " | steps |";
  for (const auto& k : s.keys) {
    o += " `" + k + "` |";
  }
  o += " status |\n|---:|---:|---:|---:|";
  for (size_t i = 0; i < s.keys.size(); ++i) {
    o += "---|";
  }
  o += "---|\n";
  for (size_t i = 0; i < s.ranking.size(); ++i) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    o += fmt::format("| {} | {} | {} | {} |", i + 1, t.k, metric_text(t.metric), t.steps);
    for (const auto& [k, v] : t.values) {
      o += " `" + v + "` |";
    }
    o += " " + t.status + " |\n";
  }
  return o;
}

std::string render_leaderboard_html(const SearchRecord& s) {
  return "<!doctype html><meta charset=\"utf-8\"><title>reprun search</title><pre>" +
         escape_html(render_leaderboard_text(s, false)) + "</pre>\n";
}

std::string render_search_diff_markdown(const SearchDiff& d) {
  return "### reprun diff (searches)\n\n```\n" + render_search_diff_text(d, false) + "```\n";
}

std::string render_search_diff_html(const SearchDiff& d) {
  return "<!doctype html><meta charset=\"utf-8\"><title>reprun diff</title><pre>" +
         escape_html(render_search_diff_text(d, false)) + "</pre>\n";
}

} // namespace reprun
