// Reports of a search: the leaderboard (text, JSON, Markdown, and an HTML page with the metric
// against each hyperparameter and the learning curves of the best trials), and the comparison of
// two searches. No timings in any of them: two leaderboards of the same search compare byte for
// byte (timings go to the search directory's timings.json).
#pragma once

#include "reprun/audit/search.hpp"
#include "reprun/report/report.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace reprun {

nlohmann::ordered_json leaderboard_to_json(const SearchRecord& s);
// text, json, markdown or html (junit: Error).
std::string render_leaderboard(const SearchRecord& s, ReportFormat f, bool color);

nlohmann::ordered_json search_diff_to_json(const SearchDiff& d);
std::string render_search_diff(const SearchDiff& d, ReportFormat f, bool color);

} // namespace reprun
