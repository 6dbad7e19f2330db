// JSON reports: the stable, documented schema (docs/report-format.md) carrying everything the
// text report says. Version "reprun.report/1".
#include "reprun/core/error.hpp"
#include "reprun/report/report.hpp"
#include "report_internal.hpp"

#include <cmath>
#include <cstdlib>
#include <unistd.h>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

ojson number(double v) {
  if (std::isnan(v)) {
    return "NaN";
  }
  if (std::isinf(v)) {
    return v > 0 ? "Infinity" : "-Infinity";
  }
  return v;
}

const char* kind_name(MetaDelta::Kind k) {
  switch (k) {
  case MetaDelta::Kind::material: return "material";
  case MetaDelta::Kind::informational: return "informational";
  case MetaDelta::Kind::volatile_field: return "volatile";
  case MetaDelta::Kind::ignored: return "ignored";
  case MetaDelta::Kind::varied: return "varied";
  case MetaDelta::Kind::unrecorded: return "unrecorded";
  }
  return "material";
}

ojson side_json(const RunSide& s) {
  ojson j = {{"path", s.label},   {"steps_file", s.steps_path}, {"run_directory", s.is_run_dir},
             {"status", s.status.empty() ? ojson(nullptr) : ojson(s.status)},
             {"records", s.lines}, {"last_step", s.last_step}};
  if (s.ranks_read > 1) {
    j["records_all_ranks"] = s.rank_records; // a data-parallel program: every rank's log ("records": rank 0's)
  }
  return j;
}

ojson files_json(const std::vector<DataFileDelta>& v) {
  ojson a = ojson::array();
  for (const auto& f : v) {
    a.push_back({{"path", f.path}, {"size_a", f.size_a}, {"size_b", f.size_b}});
  }
  return a;
}

// Where a divergence starts, in computation order (audit/localize.hpp).
ojson origin_json(const Localization& l) {
  return {{"step", l.step}, {"phase", l.phase}, {"layer", l.layer}, {"tensor", l.tensor}, {"entry", l.entry},
          {"effect", l.effect.empty() ? ojson(nullptr) : ojson(l.effect)}};
}

ojson summary_metrics(const ojson& s) {
  ojson m = ojson::object();
  if (!s.is_object()) {
    return m;
  }
  for (const char* k : {"status", "steps", "train_loss", "val_loss", "val_accuracy"}) {
    if (s.contains(k)) {
      m[k] = s[k];
    }
  }
  return m;
}

} // namespace

ReportFormat parse_report_format(const std::string& name) {
  if (name == "text") {
    return ReportFormat::text;
  }
  if (name == "json") {
    return ReportFormat::json;
  }
  if (name == "markdown" || name == "md") {
    return ReportFormat::markdown;
  }
  if (name == "junit") {
    return ReportFormat::junit;
  }
  if (name == "html") {
    return ReportFormat::html;
  }
  throw Error("--format " + name, "unknown report format; expected text, json, markdown, junit or html" +
                                      did_you_mean(name, {"text", "json", "markdown", "junit", "html"}));
}

bool want_color() {
  const char* nc = std::getenv("NO_COLOR");
  return ::isatty(1) == 1 && (nc == nullptr || nc[0] == '\0');
}

// A localization (exec's replays, or the op traces two runs kept) as reports give it.
ojson localization_json(const Localization& l) {
  ojson j = {{"found", l.found},
             {"step", l.step},
             {"phase", l.phase},
             {"layer", l.layer},
             {"tensor", l.tensor},
             {"entry", l.entry},
             {"effect", l.effect.empty() ? ojson(nullptr) : ojson(l.effect)},
             {"loss_differs_from", l.loss_differs_from >= 0 ? ojson(l.loss_differs_from) : ojson(nullptr)},
             {"replay_from_step", l.replay_from},
             {"sentence", l.sentence},
             {"note", l.note},
             {"source", l.source.empty() ? ojson(nullptr) : ojson(l.source)},
             {"repro", l.repro.empty() ? ojson(nullptr) : ojson(l.repro)}};
  if (l.rank >= 0) {
    j["rank"] = l.rank; // a data-parallel program: the rank of the origin
  }
  return j;
}

ojson diff_to_json(const DiffResult& r) {
  ojson j;
  j["format"] = "reprun.report/1";
  j["kind"] = "diff";
  j["identical"] = r.identical;
  j["verdict"] = r.verdict;
  j["mode"] = r.mode;
  j["a"] = side_json(r.a);
  j["b"] = side_json(r.b);
  ojson meta = ojson::array();
  for (const auto& m : r.meta) {
    meta.push_back({{"key", m.key}, {"category", m.category}, {"rank", m.rank}, {"kind", kind_name(m.kind)},
                    {"a", m.a}, {"b", m.b}});
    if (!m.why.empty()) {
      meta.back()["why"] = m.why;
    }
    if (!m.detail.empty()) {
      meta.back()["detail"] = m.detail;
    }
    if (!m.lines.empty()) {
      meta.back()["lines"] = m.lines;
    }
  }
  j["metadata"] = meta;
  j["dataset"] = {{"added", files_json(r.dataset.added)},
                  {"removed", files_json(r.dataset.removed)},
                  {"changed", files_json(r.dataset.changed)}};
  const Divergence& d = r.divergence;
  if (d.found) {
    ojson tensors = ojson::array();
    for (const auto& t : d.tensors) {
      tensors.push_back({{"name", t.name},
                         {"norm_a", t.has_norm ? number(t.norm_a) : ojson(nullptr)},
                         {"norm_b", t.has_norm ? number(t.norm_b) : ojson(nullptr)},
                         {"norm_rel_diff", t.has_norm ? number(t.rel) : ojson(nullptr)}});
    }
    j["divergence"] = {{"step", d.step},
                       {"line", d.line},
                       {"epoch", d.epoch >= 0 ? ojson(d.epoch) : ojson(nullptr)},
                       {"classification", d.classification()},
                       {"detail", d.detail},
                       {"first_tensor", d.first_tensor.empty() ? ojson(nullptr) : ojson(d.first_tensor)},
                       {"trace_phase", d.trace_phase.empty() ? ojson(nullptr) : ojson(d.trace_phase)},
                       {"trace_entry", d.trace_entry.empty() ? ojson(nullptr) : ojson(d.trace_entry)},
                       {"loss_a", d.has_loss ? number(d.loss_a) : ojson(nullptr)},
                       {"loss_b", d.has_loss ? number(d.loss_b) : ojson(nullptr)},
                       {"loss_ulps", d.has_loss ? ojson(d.loss_ulps) : ojson(nullptr)},
                       {"loss_ulp_format", d.has_loss ? ojson(float_format_name(d.loss_format)) : ojson(nullptr)},
                       {"loss_rel_diff", d.has_loss ? number(d.loss_rel) : ojson(nullptr)},
                       {"loss_differs_from", d.loss_differs_from >= 0 ? ojson(d.loss_differs_from) : ojson(nullptr)},
                       {"tensors", tensors}};
    const Localization origin = r.localization && r.localization->found ? *r.localization : origin_in_trace(d);
    j["divergence"]["origin"] = origin.found ? origin_json(origin) : ojson(nullptr);
    if (d.rank >= 0) {
      j["divergence"]["rank"] = d.rank; // a data-parallel program: the root rank
    }
  } else {
    j["divergence"] = nullptr;
  }
  if (r.localization) {
    j["localization"] = localization_json(*r.localization); // reprun diff of runs that kept op traces
  }
  if (!r.ranks.empty()) {
    ojson ranks = ojson::array();
    for (const auto& rr : r.ranks) {
      ranks.push_back({{"rank", rr.rank},
                       {"identical", !rr.found},
                       {"step", rr.found ? ojson(rr.step) : ojson(nullptr)},
                       {"classification", rr.found ? ojson(divergence_kind_name(rr.kind)) : ojson(nullptr)},
                       {"loss_differs", rr.loss_differs},
                       {"steps_compared", rr.steps_compared}});
    }
    j["ranks"] = ranks;
  }
  ojson growth = ojson::array();
  for (const auto& g : r.growth) {
    growth.push_back({{"step", g.step}, {"loss_a", number(g.loss_a)}, {"loss_b", number(g.loss_b)},
                      {"abs_diff", number(g.abs_diff)}, {"end", g.is_end}});
  }
  j["growth"] = growth;
  if (r.peak) {
    j["gap_peak"] = {{"step", r.peak->step}, {"loss_a", number(r.peak->loss_a)}, {"loss_b", number(r.peak->loss_b)},
                     {"abs_diff", number(r.peak->abs_diff)}};
  } else {
    j["gap_peak"] = nullptr;
  }
  j["final"] = {{"a", summary_metrics(r.a.summary)}, {"b", summary_metrics(r.b.summary)}};
  j["steps_compared"] = r.steps_compared;
  j["notes"] = r.notes;
  ojson diagnosis = ojson::array();
  for (const auto& c : r.diagnosis) {
    diagnosis.push_back({{"cause", c.cause}, {"fix", c.fix}});
  }
  j["diagnosis"] = diagnosis;
  return j;
}

ojson check_to_json(const CheckResult& r) {
  ojson j;
  j["format"] = "reprun.report/1";
  j["kind"] = r.kind;
  j["identical"] = r.identical;
  j["verdict"] = r.verdict;
  if (r.recorded) {
    j["recorded"] = true; // exec --runs 1: run-1 recorded as a reference, nothing compared
  }
  j[r.kind == "exec" ? "program" : "config"] = r.config;
  j["work_dir"] = r.work_dir_removed ? ojson(nullptr) : ojson(r.work_dir); // null: removed
  j["vary"] = r.vary;
  ojson runs = ojson::array();
  for (const auto& run : r.runs) {
    runs.push_back({{"run", run.index}, {"dir", run.dir}, {"variation", run.variation},
                    {"exit_code", run.exit_code}, {"status", run.status}});
    if (run.resumed_from >= 0) {
      // check --vary resume: where the resumed process continued, and the checkpoint it had to
      runs.back()["resumed_from_step"] = run.resumed_from;
      runs.back()["resume_checkpoint_step"] = run.resume_checkpoint;
    }
  }
  j["runs"] = runs;
  ojson pairs = ojson::array();
  for (const auto& p : r.pairs) {
    ojson pj = {{"run", p.run}, {"against", 1}, {"diff", diff_to_json(p.diff)}};
    if (p.localization && p.localization->found && pj["diff"]["divergence"].is_object()) {
      pj["diff"]["divergence"]["origin"] = origin_json(*p.localization); // the replay's origin, as in the text
    }
    pj["localization"] = p.localization ? localization_json(*p.localization) : ojson(nullptr);
    if (p.resume) {
      pj["resume"] = resume_json(*p.resume);
    }
    pairs.push_back(pj);
  }
  j["pairs"] = pairs;
  if (!r.notes.empty()) {
    j["notes"] = r.notes;
  }
  if (!r.error.empty()) {
    // exec: a run failed (exit 2); the pairs compare what ran up to it.
    j["error"] = r.error;
    j["failure"] = r.failure;
  }
  return j;
}

} // namespace reprun
