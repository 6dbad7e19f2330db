// Reports of a diff or a check: text (colour only on a terminal, NO_COLOR honoured), JSON (stable
// schema, docs/report-format.md), Markdown (pull-request comments, $GITHUB_STEP_SUMMARY), JUnit XML
// (one test case per compared pair), and one self-contained HTML page with an SVG loss plot.
#pragma once

#include "reprun/diff.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace reprun {

enum class ReportFormat { text, json, markdown, junit, html };

// Throws Error for an unknown name (with "did you mean").
ReportFormat parse_report_format(const std::string& name);

// Where a divergence starts, found by replaying the pair with trace "full".
struct Localization {
  bool found = false;
  long step = 0;
  std::string phase;  // forward | backward | update
  std::string layer;  // dense_2
  std::string tensor; // "weight gradient", "activation", ...
  std::string entry;  // raw trace entry name
  long loss_differs_from = 0;
  long replay_from = 0; // checkpoint step the replay started from
  std::string sentence; // "step 37, backward, layer dense_2, weight gradient: first difference; ..."
  std::string note;
};

struct CheckRun {
  int index = 0;
  std::string dir;
  std::string variation; // "threads=2; killed after step 20 and resumed"
  int exit_code = 0;
  std::string status;
};

struct CheckPair {
  int run = 0; // compared against run 1
  DiffResult diff;
  std::optional<Localization> localization;
};

struct CheckResult {
  std::string kind = "check"; // "check" or "exec"
  bool identical = false;
  std::string verdict;
  std::string config;   // check: the config file; exec: the program's command line
  std::string work_dir;
  std::vector<std::string> vary; // as given
  std::vector<CheckRun> runs;
  std::vector<CheckPair> pairs;
};

nlohmann::ordered_json diff_to_json(const DiffResult& r);
nlohmann::ordered_json check_to_json(const CheckResult& r);

std::string render_diff(const DiffResult& r, ReportFormat f, bool color);
std::string render_check(const CheckResult& r, ReportFormat f, bool color);

// Colour on when stdout is a terminal and NO_COLOR is unset.
bool want_color();

} // namespace reprun
