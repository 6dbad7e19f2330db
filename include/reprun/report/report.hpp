// Reports of a diff or a check: text (colour only on a terminal, NO_COLOR honoured), JSON (stable
// schema, docs/report-format.md), Markdown (pull-request comments, $GITHUB_STEP_SUMMARY), JUnit XML
// (one test case per compared pair), and one self-contained HTML page with an SVG loss plot.
#pragma once

#include "reprun/audit/diff.hpp"
#include "reprun/gate/gate.hpp"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace reprun {

enum class ReportFormat { text, json, markdown, junit, html };

// Throws Error for an unknown name (with "did you mean").
ReportFormat parse_report_format(const std::string& name);

nlohmann::ordered_json diff_to_json(const DiffResult& r);
nlohmann::ordered_json check_to_json(const CheckResult& r);

std::string render_diff(const DiffResult& r, ReportFormat f, bool color);
std::string render_check(const CheckResult& r, ReportFormat f, bool color);
// The report of a check or exec that could not give a verdict (exit 2): `kind` ("check"), what it
// checked (the config, or the program's command line) and the error line, so that a CI test view
// shows the error rather than nothing. JUnit: one test case with an <error>.
std::string render_check_error(const std::string& kind, const std::string& subject, const std::string& error,
                               ReportFormat f);

// Colour on when stdout is a terminal and NO_COLOR is unset.
bool want_color();

} // namespace reprun
