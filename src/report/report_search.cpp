// The leaderboard and the search comparison as JSON and text (the Markdown and HTML renderings are
// in report_search_markup.cpp). See include/reprun/report/search_report.hpp.
#include "reprun/report/search_report.hpp"

#include "report_internal.hpp"

#include "reprun/core/error.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

ojson optional_json(const std::optional<double>& v) { return v ? ojson(*v) : ojson(nullptr); }

ojson trial_json(const SearchRecord& s, const TrialEntry& t, long rank) {
  ojson j;
  j["rank"] = rank;
  j["trial"] = t.k;
  j["dir"] = t.name;
  j["seed"] = t.seed;
  j["sampler"] = t.sampler;
  ojson v = ojson::object();
  for (const auto& [key, text] : t.values) {
    v[key] = ojson::parse(text);
  }
  j["values"] = v;
  j["status"] = t.status;
  j["epochs"] = t.epochs;
  if (s.method == "asha") {
    j["rung"] = t.rung;
  }
  j["steps"] = t.steps;
  j["metric"] = optional_json(t.metric);
  j["val_loss"] = optional_json(t.val_loss);
  j["val_accuracy"] = optional_json(t.val_accuracy);
  j["train_loss"] = optional_json(t.train_loss);
  j["steps_xxh3"] = t.steps_xxh3;
  return j;
}

std::string metric_text(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : "-"; }

std::string clip(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

} // namespace

ojson leaderboard_to_json(const SearchRecord& s) {
  ojson j;
  j["format"] = "reprun.leaderboard/1";
  j["search"] = {{"method", s.method},
                 {"metric", s.metric},
                 {"direction", s.maximize ? "max" : "min"},
                 {"trials", s.trial_count},
                 {"experiment_seed", s.experiment_seed},
                 {"space", s.keys}};
  if (s.method == "asha") {
    j["search"]["rungs"] = s.rungs;
  }
  j["complete"] = s.complete;
  j["best"] = nullptr;
  ojson trials = ojson::array();
  for (size_t i = 0; i < s.ranking.size(); ++i) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    trials.push_back(trial_json(s, t, static_cast<long>(i) + 1));
    if (i == 0 && t.metric) {
      j["best"] = trials.back();
    }
  }
  j["trials"] = trials;
  return j;
}

std::string render_leaderboard_text(const SearchRecord& s, bool color) {
  auto bold = [&](const std::string& x) { return color ? "\033[1m" + x + "\033[0m" : x; };
  std::string o;
  o += bold(fmt::format("SEARCH {}: {} trial{}, {} ({}), experiment seed {}{}", s.method, s.trial_count,
                        s.trial_count == 1 ? "" : "s", s.metric,
                        s.maximize ? "max" : "min", s.experiment_seed, s.complete ? "" : " (incomplete)")) +
       "\n";
  if (s.method == "asha") {
    std::string r;
    for (long b : s.rungs) {
      r += (r.empty() ? "" : ", ") + std::to_string(b);
    }
    o += fmt::format("rungs (epochs): {}\n", r);
  }
  if (!s.ranking.empty() && s.trials[static_cast<size_t>(s.ranking[0])].metric) {
    const TrialEntry& b = s.trials[static_cast<size_t>(s.ranking[0])];
    std::string values;
    for (const auto& [k, v] : b.values) {
      values += fmt::format("  {}={}", k, v);
    }
    o += fmt::format("best: trial {} ({}): {} {}{}\n", b.k, b.name, s.metric, metric_text(b.metric), values);
  } else {
    o += "best: none (no trial has a finite metric yet)\n";
  }
  std::vector<size_t> width;
  for (const auto& key : s.keys) {
    width.push_back(std::clamp<size_t>(key.size(), 6, 22));
  }
  std::string head = fmt::format("{:>4}  {:>5}  {:>11}  {:>11}  {:>8}", "rank", "trial", s.metric,
                                 s.metric == "val_loss" ? "val_acc" : "val_loss", "steps");
  for (size_t i = 0; i < s.keys.size(); ++i) {
    head += fmt::format("  {:<{}}", clip(s.keys[i], width[i]), width[i]);
  }
  o += "\n" + head + "  status\n";
  for (size_t i = 0; i < s.ranking.size(); ++i) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    const auto other = s.metric == "val_loss" ? t.val_accuracy : t.val_loss;
    std::string line = fmt::format("{:>4}  {:>5}  {:>11}  {:>11}  {:>8}", i + 1, t.k, metric_text(t.metric),
                                   metric_text(other), t.steps);
    for (size_t c = 0; c < s.keys.size(); ++c) {
      std::string v = c < t.values.size() ? t.values[c].second : "-";
      line += fmt::format("  {:<{}}", clip(v, width[c]), width[c]);
    }
    std::string status = t.status;
    if (s.method == "asha" && t.rung >= 0) {
      status += fmt::format(" (rung {})", t.rung);
    }
    o += line + "  " + status + "\n";
  }
  return o;
}

std::string render_leaderboard(const SearchRecord& s, ReportFormat f, bool color) {
  switch (f) {
  case ReportFormat::json:
    return leaderboard_to_json(s).dump(2) + "\n";
  case ReportFormat::text:
    return render_leaderboard_text(s, color);
  case ReportFormat::markdown:
    return render_leaderboard_markdown(s);
  case ReportFormat::html:
    return render_leaderboard_html(s);
  case ReportFormat::junit:
    break;
  }
  throw Error("--format", "a leaderboard is text, json, markdown or html");
}

ojson search_diff_to_json(const SearchDiff& d) {
  ojson j;
  j["format"] = "reprun.search-diff/1";
  j["identical"] = d.identical;
  j["verdict"] = d.verdict;
  j["a"] = d.a;
  j["b"] = d.b;
  j["differences"] = d.differences;
  j["trials_compared"] = d.trials_compared;
  j["trial"] = d.trial >= 0 ? ojson(d.trial) : ojson(nullptr);
  j["trial_differences"] = d.trial_differences;
  j["run_diff"] = d.run_diff ? diff_to_json(*d.run_diff) : ojson(nullptr);
  return j;
}

std::string render_search_diff_text(const SearchDiff& d, bool color) {
  auto bold = [&](const std::string& x) { return color ? "\033[1m" + x + "\033[0m" : x; };
  std::string o = bold(d.verdict) + "\n";
  o += fmt::format("  A: {}\n  B: {}\n", d.a, d.b);
  for (const auto& x : d.differences) {
    o += "  search differs: " + x + "\n";
  }
  if (d.trial >= 0) {
    o += fmt::format("\n== trial {}\n", d.trial);
    for (const auto& x : d.trial_differences) {
      o += "  " + x + "\n";
    }
    if (d.run_diff) {
      o += "\n" + render_diff_text(*d.run_diff, color);
    }
  }
  return o;
}

std::string render_search_diff(const SearchDiff& d, ReportFormat f, bool color) {
  switch (f) {
  case ReportFormat::json:
    return search_diff_to_json(d).dump(2) + "\n";
  case ReportFormat::text:
    return render_search_diff_text(d, color);
  case ReportFormat::markdown:
    return render_search_diff_markdown(d);
  case ReportFormat::html:
    return render_search_diff_html(d);
  case ReportFormat::junit:
    break;
  }
  throw Error("--format", "a search comparison is text, json, markdown or html");
}

} // namespace reprun
