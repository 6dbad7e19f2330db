// The text report: what a person reads in a terminal or a CI log, in the order that answers
// "identical?", "what changed?", "where do they part?", "how much?", "how does it grow?".
#include "report/report_internal.hpp"

#include "reprun/audit/cause.hpp"

#include <algorithm>
#include <map>
#include <fmt/format.h>
#include <sstream>
#include <limits>

namespace reprun {

namespace {

struct Style {
  bool color;
  std::string bold(const std::string& s) const { return color ? "\033[1m" + s + "\033[0m" : s; }
  std::string red(const std::string& s) const { return color ? "\033[31m" + s + "\033[0m" : s; }
  std::string green(const std::string& s) const { return color ? "\033[32m" + s + "\033[0m" : s; }
  std::string dim(const std::string& s) const { return color ? "\033[2m" + s + "\033[0m" : s; }
};

std::string num(double v) { return fmt::format("{:.10g}", v); }

std::string bytes(uint64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) {
    s.insert(static_cast<size_t>(i), ",");
  }
  return s + " bytes";
}

std::string side_line(const char* tag, const RunSide& s) {
  std::string status = s.status.empty() ? "bare step log" : s.status;
  if (s.ranks_read > 1) { // the records the body counts: every rank's
    return fmt::format("  {}: {} ({}, {} records on {} ranks)\n", tag, s.label, status, s.rank_records, s.ranks_read);
  }
  return fmt::format("  {}: {} ({}, {} record{})\n", tag, s.label, status, s.lines, s.lines == 1 ? "" : "s");
}

// Every line of `text` with `prefix` before it.
std::string indent(const std::string& text, const std::string& prefix) {
  std::string out = prefix;
  for (char c : text) {
    out += c;
    if (c == '\n') {
      out += prefix;
    }
  }
  return out;
}


} // namespace

bool is_input_file(const MetaDelta& m) { return m.key.rfind("inputs.files.", 0) == 0; }

std::string more_inputs(size_t n, bool counted) {
  return fmt::format("... and {} more file{} the program read {} (every one: --format json)", n, n == 1 ? "" : "s",
                     counted ? "differ" : "not counted");
}

std::string dataset_sentence(const DatasetDelta& d) {
  auto list = [](const std::vector<DataFileDelta>& v, bool use_b) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < 5; ++i) {
      s += (i ? "; " : "") + v[i].path + ", " + bytes(use_b ? v[i].size_b : v[i].size_a);
    }
    if (v.size() > 5) {
      s += fmt::format(", and {} more", v.size() - 5);
    }
    return s;
  };
  std::string s = fmt::format("dataset differs: {} file{} added", d.added.size(), d.added.size() == 1 ? "" : "s");
  if (!d.added.empty()) {
    s += " (" + list(d.added, true) + ")";
  }
  s += fmt::format(", {} removed", d.removed.size());
  if (!d.removed.empty()) {
    s += " (" + list(d.removed, false) + ")";
  }
  s += fmt::format(", {} changed", d.changed.size());
  if (!d.changed.empty()) {
    s += " (" + list(d.changed, true) + ")";
  }
  return s;
}

Localization divergence_origin(const DiffResult& r, const Localization* loc) {
  if (loc && loc->found) {
    return *loc;
  }
  return origin_in_trace(r.divergence);
}

std::string first_tensor_sentence(const Divergence& d, const Localization& origin, const nlohmann::ordered_json& manifest) {
  if (d.first_tensor.empty()) {
    return "";
  }
  if (!origin.found) {
    const bool exec = manifest.is_object() && manifest.value("kind", "") == "exec";
    return fmt::format("first differing tensor in model order: {} (tensors are recorded after the update, so the "
                       "difference may start earlier in the step{})",
                       d.first_tensor, exec ? "" : "; trace full names its origin");
  }
  if (origin.effect.empty()) {
    return fmt::format("first differing tensor in model order: {} (the origin itself)", d.first_tensor);
  }
  return fmt::format("first differing tensor in model order: {}, an effect of the origin (tensors are recorded "
                     "after the update)",
                     d.first_tensor);
}

std::string ulp_phrase(uint64_t ulps, double rel, FloatFormat format) {
  if (ulps == std::numeric_limits<uint64_t>::max()) {
    return "no ulp distance (NaN)";
  }
  // The relative error leads; a ULP count only where it is small enough to read as "a few
  // roundings apart" (under a million), in the format the value was computed in.
  std::string s = fmt::format("relative error {:.3g}", rel);
  if (ulps < 1'000'000) {
    std::string count = std::to_string(ulps);
    for (int i = static_cast<int>(count.size()) - 3; i > 0; i -= 3) {
      count.insert(static_cast<size_t>(i), ",");
    }
    s += fmt::format(" ({} {}ulp)", count,
                     format == FloatFormat::float64 ? "" : std::string(float_format_name(format)) + " ");
  }
  return s;
}

std::vector<GapRow> gap_rows(const DiffResult& r) {
  std::vector<GapRow> rows;
  const bool peak = r.peak && r.peak->abs_diff > 0;
  bool placed = false;
  for (const auto& g : r.growth) {
    if (peak && !placed && r.peak->step < g.step) {
      rows.push_back({*r.peak, true});
      placed = true;
    }
    const bool here = peak && !placed && r.peak->step == g.step;
    placed = placed || here;
    rows.push_back({g, here});
  }
  if (peak && !placed) {
    rows.push_back({*r.peak, true});
  }
  return rows;
}

namespace {

void section(std::string& o, const Style& st, const char* title) { o += "\n" + st.bold(title) + "\n"; }

void metadata_text(std::string& o, const Style& st, const DiffResult& r) {
  bool any_material = false, any_info = false, any_vol = false;
  for (const auto& m : r.meta) {
    any_material = any_material || m.kind == MetaDelta::Kind::material;
    any_info = any_info || (m.kind != MetaDelta::Kind::material && m.kind != MetaDelta::Kind::volatile_field);
    any_vol = any_vol || m.kind == MetaDelta::Kind::volatile_field;
  }
  section(o, st, "Metadata differences (most likely explanation first)");
  if (!any_material) {
    o += "  none\n";
  }
  if (std::any_of(r.meta.begin(), r.meta.end(), [](const MetaDelta& m) {
        return m.key == "data.files" && m.kind == MetaDelta::Kind::material;
      })) {
    o += "  [dataset] " + dataset_sentence(r.dataset) + "\n";
  }
  size_t inputs_shown = 0, inputs_left = 0;
  for (const auto& m : r.meta) {
    if (m.kind == MetaDelta::Kind::material && m.key != "data.files") {
      if (is_input_file(m) && inputs_shown++ >= k_input_rows) {
        ++inputs_left;
        continue;
      }
      if (!m.detail.empty()) { // an input file: what changed in it, and for code the changed lines
        o += fmt::format("  [{}] {}: {}\n", m.category, is_input_file(m) ? m.key.substr(13) : m.key, m.detail);
        std::istringstream lines(m.lines);
        for (std::string l; std::getline(lines, l);) {
          o += "      " + l + "\n";
        }
        continue;
      }
      const auto [va, vb] = shown_difference(m.a, m.b);
      o += fmt::format("  [{}] {}: {} -> {}{}\n", m.category, m.key, va, vb,
                       is_effect(m) ? " (an effect, not a cause)" : !m.why.empty() ? " (" + m.why + ")" : "");
    }
  }
  if (inputs_left > 0) {
    o += "  " + more_inputs(inputs_left, true) + "\n";
  }
  if (any_info) {
    o += st.dim("  not counted:") + "\n";
    size_t quiet_shown = 0, quiet_left = 0;
    // Many lines for one reason (the 100 packages of another interpreter): the first few, then a
    // count (the files a program read have their own cap, k_input_rows).
    constexpr size_t k_same_reason_rows = 5, k_same_reason_fold = 12;
    std::map<std::string, size_t> reason_lines, same_reason;
    auto folds = [&](const MetaDelta& m) { return !m.why.empty() && !is_input_file(m); };
    for (const auto& m : r.meta) {
      if (folds(m) && m.kind != MetaDelta::Kind::material && m.kind != MetaDelta::Kind::volatile_field) {
        ++reason_lines[m.why];
      }
    }
    for (const auto& m : r.meta) {
      const char* why = !m.why.empty()                           ? m.why.c_str()
                        : m.kind == MetaDelta::Kind::informational ? "cannot change a result"
                        : m.kind == MetaDelta::Kind::varied      ? "varied on purpose"
                        : m.kind == MetaDelta::Kind::ignored     ? "ignored (--ignore-meta)"
                                                                 : nullptr;
      if (why && m.kind != MetaDelta::Kind::material && m.kind != MetaDelta::Kind::volatile_field) {
        if (is_input_file(m) && quiet_shown++ >= k_input_rows) {
          ++quiet_left;
          continue;
        }
        if (folds(m) && reason_lines[m.why] > k_same_reason_fold && ++same_reason[m.why] > k_same_reason_rows) {
          continue;
        }
        const bool files = m.key == "data.files" && r.dataset.any();
        o += st.dim(fmt::format("    {}: {} ({})", m.key,
                                files ? dataset_sentence(r.dataset).substr(std::string("dataset differs: ").size())
                                      : shown_difference(m.a, m.b).first + " -> " + shown_difference(m.a, m.b).second,
                                why)) +
             "\n";
      }
    }
    if (quiet_left > 0) {
      o += st.dim("    " + more_inputs(quiet_left, false)) + "\n";
    }
    for (const auto& [why, n] : reason_lines) {
      if (n > k_same_reason_fold) {
        o += st.dim(fmt::format("    ... and {} more ({}; --format json lists them)", n - k_same_reason_rows, why)) + "\n";
      }
    }
  }
  if (any_vol) {
    std::string keys;
    for (const auto& m : r.meta) {
      if (m.kind == MetaDelta::Kind::volatile_field) {
        keys += (keys.empty() ? "" : ", ") + m.key;
      }
    }
    o += st.dim("  expected to differ: " + keys) + "\n";
  }
}

void magnitude_text(std::string& o, const Style& st, const Divergence& d) {
  section(o, st, "Magnitude at that step");
  o += fmt::format("  loss: A {}  B {}  |diff| {:.3g}  {}\n", num(d.loss_a), num(d.loss_b),
                   std::fabs(d.loss_a - d.loss_b), ulp_phrase(d.loss_ulps, d.loss_rel, d.loss_format));
  for (size_t i = 0; i < d.tensors.size() && i < 12; ++i) {
    const auto& t = d.tensors[i];
    if (t.has_norm) {
      o += fmt::format("  {}: norm A {}  B {}  relative {:.3g}\n", t.name, num(t.norm_a), num(t.norm_b), t.rel);
    } else {
      o += fmt::format("  {}: checksum differs\n", t.name);
    }
  }
  if (d.tensors.size() > 12) {
    o += fmt::format("  ... and {} more tensors\n", d.tensors.size() - 12);
  }
}

void divergence_text(std::string& o, const Style& st, const DiffResult& r, const Localization* loc) {
  const Divergence& d = r.divergence;
  section(o, st, "First divergence");
  if (!d.found) {
    o += fmt::format("  none: {} step records compared\n", r.steps_compared);
    return;
  }
  o += fmt::format("  step {}{}{} (line {}): {}\n", d.step, d.epoch >= 0 ? fmt::format(", epoch {}", d.epoch) : "",
                   r.ranks.empty() ? "" : fmt::format(", rank {}", d.rank), d.line, st.bold(d.classification()));
  o += "  " + d.detail + "\n";
  if (!r.ranks.empty()) {
    // Rank by rank: which ranks' logs part, and where.
    std::string by_rank;
    for (const auto& rr : r.ranks) {
      by_rank += fmt::format("{}rank {}: {}", by_rank.empty() ? "" : "; ", rr.rank,
                             !rr.found ? "identical"
                                       : fmt::format("step {}{}", rr.step, rr.loss_differs ? " (loss differs)" : ""));
    }
    o += "  by rank: " + by_rank + "\n";
  }
  const Localization origin = divergence_origin(r, loc);
  if (origin.found && !origin.source.empty()) {
    o += fmt::format("  origin: step {}, {} at {}: the first operation whose outputs differ, in execution order; "
                     "found {}\n",
                     origin.step, origin_phrase(origin), origin.source,
                     origin.stored_traces ? "in the op traces the runs kept" : "by replays with an op trace");
  } else if (origin.found) {
    o += fmt::format("  origin: step {}, {}: the first differing value in computation order (forward, backward from "
                     "the last layer, update){}\n",
                     origin.step, origin_phrase(origin),
                     origin.replay_from >= 0 ? fmt::format("; found by replay from step {}", origin.replay_from) : "");
  }
  if (!d.first_tensor.empty()) {
    o += "  " + first_tensor_sentence(d, origin, r.a.manifest) + "\n";
  }
  if (d.loss_differs_from >= 0 && d.loss_differs_from != d.step) {
    o += fmt::format("  the loss differs from step {}\n", d.loss_differs_from);
  }
  if (d.has_loss) {
    magnitude_text(o, st, d);
  }
  if (r.growth.size() > 1) {
    section(o, st, "How the gap grows");
    o += fmt::format("  {:>10}  {:>22}  {:>22}  {:>10}\n", "step", "loss A", "loss B", "|diff|");
    for (const auto& row : gap_rows(r)) {
      const GapPoint& g = row.point;
      std::string mark = row.peak && g.is_end ? "  (peak, last common step)"
                         : row.peak           ? "  (peak)"
                         : g.is_end           ? "  (last common step)"
                                              : "";
      o += fmt::format("  {:>10}  {:>22}  {:>22}  {:>10.3g}{}\n", g.step, num(g.loss_a), num(g.loss_b), g.abs_diff,
                       mark);
    }
    if (r.peak && r.peak->abs_diff > 0) {
      o += fmt::format("  peak gap: |diff| {:.3g} at step {}\n", r.peak->abs_diff, r.peak->step);
    }
  }
}

void final_metrics_text(std::string& o, const Style& st, const DiffResult& r) {
  section(o, st, "Final metrics");
  o += fmt::format("  {:<14}  {:>22}  {:>22}\n", "", "A", "B");
  for (const char* k : {"status", "steps", "train_loss", "val_loss", "val_accuracy"}) {
    auto v = [&](const nlohmann::ordered_json& s) {
      if (!s.contains(k) || s[k].is_null()) {
        return std::string("-");
      }
      return s[k].is_string() ? s[k].get<std::string>() : s[k].dump();
    };
    o += fmt::format("  {:<14}  {:>22}  {:>22}\n", k, v(r.a.summary), v(r.b.summary));
  }
}

// The last section of a different result: its likely causes, most likely first, each with its fix.
void diagnosis_text(std::string& o, const Style& st, const DiffResult& r) {
  if (r.identical || r.diagnosis.empty()) {
    return;
  }
  section(o, st, "Likely cause and fix (most likely first)");
  for (size_t i = 0; i < r.diagnosis.size(); ++i) {
    o += fmt::format("  {}. {}\n     {} {}\n", i + 1, r.diagnosis[i].cause, st.bold("fix:"), r.diagnosis[i].fix);
  }
}

} // namespace

std::string render_diff_text(const DiffResult& r, bool color, const Localization* loc) {
  Style st{color};
  std::string o;
  o += (r.identical ? st.green(st.bold(r.verdict)) : st.red(st.bold(r.verdict))) + "\n";
  o += side_line("A", r.a);
  o += side_line("B", r.b);
  o += fmt::format("  mode: {}\n", r.mode);
  if (r.a.is_run_dir && r.b.is_run_dir) {
    metadata_text(o, st, r);
  }
  divergence_text(o, st, r, loc);
  if (r.localization) { // reprun diff of runs that kept op traces (exec puts its own above the diff)
    section(o, st, "Localization");
    o += "  " + (r.localization->found ? r.localization->sentence : r.localization->note) + "\n";
    if (r.localization->found && !r.localization->note.empty()) {
      o += "  " + r.localization->note + "\n";
    }
  }
  if (r.a.summary.is_object() && r.b.summary.is_object()) {
    final_metrics_text(o, st, r);
  }
  if (!r.notes.empty()) {
    section(o, st, "Notes");
    for (const auto& n : r.notes) {
      o += "  " + n + "\n";
    }
  }
  diagnosis_text(o, st, r);
  return o;
}

std::string render_check_text(const CheckResult& r, bool color) {
  Style st{color};
  std::string o;
  o += (r.identical ? st.green(st.bold(r.verdict)) : st.red(st.bold(r.verdict))) + "\n";
  o += fmt::format("  {}: {}\n  work dir: {}\n", r.kind == "exec" ? "program" : "config", r.config,
                   !r.work_dir_removed ? r.work_dir
                   : r.timed_out       ? "removed (temporary, a run was ended at its time limit; --keep keeps it)"
                                       : "removed (temporary, all runs agreed; --keep keeps it)");
  for (const auto& run : r.runs) {
    o += fmt::format("  run-{}: {} -> {}\n", run.index, run.variation.empty() ? "baseline" : run.variation, run.status);
  }
  if (!r.failure.empty()) {
    o += indent(r.failure, "  ") + "\n";
  }
  for (const auto& n : r.notes) {
    o += "  note: " + n + "\n";
  }
  for (const auto& p : r.pairs) {
    if (p.diff.identical) {
      o += fmt::format("  run-{} vs run-1: {}\n", p.run, p.diff.verdict);
      if (p.resume) {
        o += "\n" + st.bold(fmt::format("== run-{} against run-1", p.run)) + "\n" + resume_text(*p.resume);
      }
      continue;
    }
    o += "\n" + st.bold(fmt::format("== run-{} against run-1", p.run)) + "\n";
    if (p.localization) {
      const Localization& l = *p.localization;
      o += st.bold("Localization: ") + (l.found ? l.sentence : l.note) + "\n";
      if (l.found && !l.note.empty()) {
        o += "  " + l.note + "\n";
      }
    }
    if (p.resume) {
      o += resume_text(*p.resume);
    }
    o += render_diff_text(p.diff, color, p.localization ? &*p.localization : nullptr);
  }
  return o;
}

} // namespace reprun
