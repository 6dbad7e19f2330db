// Shared between the report renderers (not part of the public API).
#pragma once

#include "reprun/audit/search.hpp"
#include "reprun/report/report.hpp"

#include <string>
#include <vector>

namespace reprun {

// `loc` is a check's localization of this pair (null for a plain diff).
std::string render_diff_text(const DiffResult& r, bool color, const Localization* loc = nullptr);
std::string render_check_text(const CheckResult& r, bool color);
// "dataset differs: 1 file added (part-004.csv, 8,120 bytes), 0 removed, 0 changed"
std::string dataset_sentence(const DatasetDelta& d);

// Each file an exec'd program read is a delta of its own, and a folder of 100,000 images re-encoded
// would be 100,000 lines: the text, markdown and HTML reports show the first k_input_rows of those
// counted and of those not, then how many more (JSON keeps every one).
inline constexpr size_t k_input_rows = 20;
bool is_input_file(const MetaDelta& m);
// "... and 280 more files the program read differ (every one: --format json)"
std::string more_inputs(size_t n, bool counted);

// Where the divergence starts: the check's replay localization when it found one, else what the
// diff's own trace shows (found is false when neither knows).
Localization divergence_origin(const DiffResult& r, const Localization* loc);
// The first differing tensor in model order, in the terms of the origin: its effect when an origin
// is known, else with why it may not be where the difference starts. "" when there is none.
// `manifest` (run A's) tells an exec run, whose origin the op-level localization finds, from a built-in one.
std::string first_tensor_sentence(const Divergence& d, const Localization& origin, const nlohmann::ordered_json& manifest);

// "relative error 0.000296 (2,900 float32 ulp)": the relative error first, then the ULP count in
// the value's own format where it is under a million (a larger count says nothing more).
std::string ulp_phrase(uint64_t ulps, double rel, FloatFormat format);

// The resume audit of an exec pair (report_resume.cpp): text lines, JSON, Markdown, HTML.
std::string resume_text(const ResumeAudit& a);
nlohmann::ordered_json resume_json(const ResumeAudit& a);
std::string resume_markdown(const ResumeAudit& a);
std::string resume_html(const ResumeAudit& a);

// The gap table's rows: the growth points and the peak, in step order.
struct GapRow {
  GapPoint point;
  bool peak = false;
};
std::vector<GapRow> gap_rows(const DiffResult& r);

// Markup pieces shared by the run and search renderings (report_markup.cpp).
// Text for HTML or XML (element content and quoted attribute values); control characters become spaces.
std::string esc_xml(const std::string& s);
// Text for a Markdown table cell or line: `|` escaped, newlines folded.
std::string esc_md(const std::string& s);
// A run diff as Markdown under `heading` ("### reprun diff"), and as an HTML <section> titled
// `title`; `loc` as for render_diff_text.
std::string diff_markdown(const DiffResult& r, const std::string& heading, const Localization* loc);
std::string html_section(const DiffResult& r, const std::string& title, const Localization* loc);
// One self-contained HTML page (inline styles, no script, nothing fetched): the report styles, then
// `extra_css`.
std::string html_page(const std::string& title, const std::string& body, const std::string& extra_css = "");
// Ticks at round steps (1, 2 or 5 times a power of ten apart, at least 1) between x0 and x1, both
// ends included.
std::vector<double> x_ticks(double x0, double x1);

// Search reports (report_search.cpp: text and JSON; report_search_markup.cpp: Markdown and HTML).
std::string render_leaderboard_text(const SearchRecord& s, bool color);
std::string render_leaderboard_markdown(const SearchRecord& s);
std::string render_leaderboard_html(const SearchRecord& s);
std::string render_search_diff_text(const SearchDiff& d, bool color);
std::string render_search_diff_markdown(const SearchDiff& d);
std::string render_search_diff_html(const SearchDiff& d);

} // namespace reprun
