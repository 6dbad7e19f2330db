// Search directories read back and compared: see include/reprun/audit/search.hpp.
#include "reprun/audit/search.hpp"

#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/search_dir.hpp"
#include "reprun/record/steplog.hpp"
#include "reprun/train/settings.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

std::optional<double> finite_number(const ojson& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number() || !std::isfinite(it->get<double>())) {
    return std::nullopt;
  }
  return it->get<double>();
}

std::string number_text(const std::optional<double>& v) { return v ? ojson(*v).dump() : "none"; }

// The record of `step` in evals.jsonl, or null.
ojson eval_record(const RunDir& run, long step) {
  const std::string path = run.file(RunFile::evals);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return nullptr;
  }
  StepLogReader r(path);
  std::string_view line;
  while (r.next(line)) {
    if (quick_step(line) == step) {
      ojson j = ojson::parse(line, nullptr, false);
      return j.is_object() ? j : ojson(nullptr);
    }
  }
  return nullptr;
}

// (step, metric) of every evaluation with a finite metric.
std::vector<std::pair<long, double>> eval_curve(const RunDir& run, const std::string& metric) {
  std::vector<std::pair<long, double>> c;
  const std::string path = run.file(RunFile::evals);
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return c;
  }
  StepLogReader r(path);
  std::string_view line;
  while (r.next(line)) {
    ojson j = ojson::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer()) {
      if (auto v = finite_number(j, metric.c_str())) {
        c.emplace_back(j["step"].get<long>(), *v);
      }
    }
  }
  return c;
}

// The facts of trial k from its run's manifest and summary (read_trial below).
void read_trial_facts(const RunDir& run, const ojson& m, const std::string& mpath, long k, const std::string& metric,
                      const std::vector<long>& rungs, TrialEntry& t) {
  if (!m.contains("search") || !m["search"].is_object() || m["search"].value("trial", -1L) != k) {
    throw Error(mpath, fmt::format("not trial {} of a search (its \"search\" section is missing or names another "
                                   "trial)", k));
  }
  const ojson& s = m["search"];
  t.seed = s.value("seed", 0ull);
  t.sampler = s.value("sampler", "");
  if (s.contains("values") && s["values"].is_object()) {
    for (auto it = s["values"].begin(); it != s["values"].end(); ++it) {
      t.values.emplace_back(it.key(), it->dump());
    }
  }
  if (m.contains("config") && m["config"].contains("training")) {
    t.epochs = m["config"]["training"].value("epochs", 0L);
  }
  for (size_t i = 0; i < rungs.size(); ++i) {
    if (rungs[i] == t.epochs) {
      t.rung = static_cast<int>(i);
    }
  }
  ojson sum = run.read_summary();
  t.status = sum.value("status", "unknown");
  t.steps = sum.value("steps", 0L);
  t.train_loss = finite_number(sum, "train_loss");
  t.val_loss = finite_number(sum, "val_loss");
  t.val_accuracy = finite_number(sum, "val_accuracy");
  if (t.status == "complete") {
    t.metric = metric == "val_accuracy" ? t.val_accuracy : t.val_loss;
  }
  if (sum.contains("steps_log") && sum["steps_log"].is_object()) {
    t.steps_xxh3 = sum["steps_log"].value("xxh3", "");
  }
}

TrialEntry read_trial(const SearchDir& sd, long k, const std::string& metric, const std::vector<long>& rungs) {
  TrialEntry t;
  t.k = k;
  const std::string dir = sd.trial_dir(k);
  t.name = std::filesystem::path(dir).filename().string();
  t.status = "not started";
  if (!RunDir::holds_run(dir)) {
    return t;
  }
  t.exists = true;
  RunDir run = RunDir::open(dir);
  const ojson m = run.read_manifest();
  const std::string mpath = run.file(RunFile::manifest);
  try {
    read_trial_facts(run, m, mpath, k, metric, rungs, t);
  } catch (const ojson::exception& e) { // a hand-edited field of another type: name the file
    const std::string what = e.what();
    const auto b = what.find("] ");
    throw Error(mpath, "corrupt trial manifest: " + (b == std::string::npos ? what : what.substr(b + 2)));
  }
  return t;
}

} // namespace

std::optional<double> eval_metric_at(const RunDir& run, long step, const std::string& metric) {
  ojson r = eval_record(run, step);
  return r.is_object() ? finite_number(r, metric.c_str()) : std::nullopt;
}

bool has_eval_at(const RunDir& run, long step) { return eval_record(run, step).is_object(); }

std::vector<long> rank_trials(const SearchRecord& s) {
  std::vector<long> order;
  for (const auto& t : s.trials) {
    order.push_back(t.k);
  }
  std::stable_sort(order.begin(), order.end(), [&](long x, long y) {
    const TrialEntry& a = s.trials[static_cast<size_t>(x)];
    const TrialEntry& b = s.trials[static_cast<size_t>(y)];
    if (a.metric.has_value() != b.metric.has_value()) {
      return a.metric.has_value();
    }
    if (a.rung != b.rung) {
      return a.rung > b.rung;
    }
    if (a.metric && *a.metric != *b.metric) {
      return s.maximize ? *a.metric > *b.metric : *a.metric < *b.metric;
    }
    return false; // stable: the lower trial index first
  });
  return order;
}

SearchRecord read_search(const std::string& dir) {
  SearchDir sd = SearchDir::open(dir);
  ojson m = sd.read_manifest();
  const std::string mpath = sd.file(SearchFile::manifest);
  SearchRecord s;
  s.dir = dir;
  if (!m.contains("search") || !m["search"].is_object() || !m.contains("experiment_seed")) {
    throw Error(mpath, "incomplete search manifest (no \"search\" or \"experiment_seed\")");
  }
  const ojson& spec = m["search"];
  // A hand-edited field of another type is named here, not met below as a type error naming no file.
  auto check = [&](const ojson& obj, const char* key, bool ok, const char* want, const char* prefix) {
    if (obj.contains(key) && !ok) {
      throw Error(mpath, fmt::format("corrupt search manifest: {}{} is {}, expected {}", prefix, key,
                                     obj[key].dump(), want));
    }
  };
  for (const char* key : {"method", "metric", "direction"}) {
    check(spec, key, spec.value(key, ojson()).is_string(), "a string", "search.");
  }
  check(spec, "trials", spec.value("trials", ojson()).is_number_integer(), "an integer", "search.");
  const ojson rungs = spec.value("rungs", ojson::array());
  check(spec, "rungs", rungs.is_array() && std::all_of(rungs.begin(), rungs.end(), [](const ojson& r) {
          return r.is_number_integer();
        }), "a list of integers", "search.");
  check(m, "experiment_seed", m["experiment_seed"].is_number_unsigned(), "a non-negative integer", "");
  check(m, "base_config", m.value("base_config", ojson()).is_object(), "an object", "");
  if (m.contains("config_file") && m["config_file"].is_object()) {
    check(m["config_file"], "path", m["config_file"].value("path", ojson()).is_string(), "a string", "config_file.");
  }
  s.method = spec.value("method", "");
  s.metric = spec.value("metric", "");
  s.maximize = spec.value("direction", "") == "max";
  s.trial_count = spec.value("trials", 0L);
  if (s.trial_count < 0 || s.trial_count > 100'000) {
    throw Error(mpath, "search.trials out of range");
  }
  if (spec.contains("rungs")) {
    s.rungs = spec["rungs"].get<std::vector<long>>();
  }
  if (spec.contains("space") && spec["space"].is_object()) {
    for (auto it = spec["space"].begin(); it != spec["space"].end(); ++it) {
      s.keys.push_back(it.key());
    }
  }
  s.experiment_seed = m.value("experiment_seed", 0ull);
  s.spec_json = spec.dump();
  s.base_json = m.value("base_config", ojson::object()).dump();
  if (m.contains("config_file") && m["config_file"].is_object()) {
    s.config_path = m["config_file"].value("path", "");
  }
  s.complete = true;
  for (long k = 0; k < s.trial_count; ++k) {
    s.trials.push_back(read_trial(sd, k, s.metric, s.rungs));
    const std::string& st = s.trials.back().status;
    s.complete = s.complete && (st == "complete" || st.rfind("failed", 0) == 0);
  }
  s.ranking = rank_trials(s);
  for (size_t i = 0; i < s.ranking.size() && i < k_curve_trials; ++i) {
    TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    if (t.exists) {
      t.curve = eval_curve(RunDir::open(sd.trial_dir(t.k)), s.metric);
    }
  }
  return s;
}

SearchDiff diff_searches(const std::string& a, const std::string& b, const DiffOptions& opt) {
  SearchDiff d;
  d.a = a;
  d.b = b;
  const SearchRecord x = read_search(a), y = read_search(b);
  if (x.spec_json != y.spec_json) {
    d.differences.push_back(fmt::format("search section: {} vs {}", x.spec_json, y.spec_json));
  }
  if (x.experiment_seed != y.experiment_seed) {
    d.differences.push_back(fmt::format("experiment seed: {} vs {}", x.experiment_seed, y.experiment_seed));
  }
  if (x.base_json != y.base_json) {
    auto first = first_result_difference(x.base_json, y.base_json);
    d.differences.push_back(first ? fmt::format("base config: {} is {} vs {}", first->key, first->a, first->b)
                                  : std::string("base config: execution settings differ (not counted)"));
    if (!first) {
      d.differences.pop_back();
    }
  }
  const long n = std::max(x.trial_count, y.trial_count);
  for (long k = 0; k < n && d.trial < 0; ++k) {
    ++d.trials_compared;
    if (k >= x.trial_count || k >= y.trial_count) {
      d.trial = k;
      d.trial_differences.push_back(fmt::format("present only in {}", k >= x.trial_count ? b : a));
      break;
    }
    const TrialEntry& p = x.trials[static_cast<size_t>(k)];
    const TrialEntry& q = y.trials[static_cast<size_t>(k)];
    auto differ = [&](const std::string& what, const std::string& u, const std::string& v) {
      if (u != v) {
        d.trial_differences.push_back(fmt::format("{}: {} vs {}", what, u, v));
      }
    };
    if (p.exists != q.exists) {
      // A trial one search has not started has no seed, values or results yet (not seed 0): its
      // status is the difference.
      differ("status", p.status, q.status);
    } else {
      differ("seed", std::to_string(p.seed), std::to_string(q.seed));
      const size_t nv = std::max(p.values.size(), q.values.size());
      for (size_t i = 0; i < nv; ++i) {
        const std::string key = i < p.values.size() ? p.values[i].first : q.values[i].first;
        differ(key, i < p.values.size() ? p.values[i].second : "(absent)",
               i < q.values.size() ? q.values[i].second : "(absent)");
      }
      differ("status", p.status, q.status);
      differ("epochs", std::to_string(p.epochs), std::to_string(q.epochs));
      differ("steps", std::to_string(p.steps), std::to_string(q.steps));
      differ(x.metric.empty() ? "metric" : x.metric, number_text(p.metric), number_text(q.metric));
      differ("steps.jsonl digest", p.steps_xxh3.empty() ? "none" : p.steps_xxh3,
             q.steps_xxh3.empty() ? "none" : q.steps_xxh3);
    }
    if (p.exists && q.exists) {
      SearchDir sa = SearchDir::open(a), sb = SearchDir::open(b);
      DiffResult r = diff_runs(sa.trial_dir(k), sb.trial_dir(k), opt);
      if (!r.identical || !d.trial_differences.empty()) {
        d.run_diff = std::move(r);
      }
    }
    if (!d.trial_differences.empty() || d.run_diff) {
      d.trial = k;
    }
  }
  d.identical = d.differences.empty() && d.trial < 0;
  if (d.identical) {
    // Equal statuses on both sides: trials neither search has finished are said, not counted as compared.
    const auto unfinished = std::count_if(x.trials.begin(), x.trials.end(), [](const TrialEntry& t) {
      return t.status != "complete" && t.status.rfind("failed", 0) != 0;
    });
    d.verdict = unfinished == 0
                    ? fmt::format("IDENTICAL: {} trials with the same values and bitwise identical runs; the same "
                                  "ranking",
                                  x.trial_count)
                    : fmt::format("IDENTICAL: {} trials with the same values and bitwise identical runs, {} of them "
                                  "not finished in either search (both incomplete); the same ranking so far",
                                  x.trial_count, unfinished);
  } else if (d.trial >= 0) {
    std::string what = d.trial_differences.empty() ? (d.run_diff ? d.run_diff->verdict : std::string("differs"))
                                                   : d.trial_differences.front();
    // a difference of the searches themselves is the cause; the first trial that differs its effect
    d.verdict = d.differences.empty()
                    ? fmt::format("DIFFERENT: trial {} is the first that differs ({})", d.trial, what)
                    : fmt::format("DIFFERENT: {}; trial {} is the first that differs", d.differences.front(), d.trial);
  } else {
    d.verdict = "DIFFERENT: " + d.differences.front();
  }
  return d;
}

} // namespace reprun
