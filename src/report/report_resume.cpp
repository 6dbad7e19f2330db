// The resume audit of an exec pair (audit/resume.hpp) in every report format: where the run was
// killed and from which checkpoint it resumed, and the boundary table, state by state.
#include "report_internal.hpp"

#include <algorithm>
#include <fmt/format.h>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

const char* verdict_key(BoundaryRow::Verdict v) {
  switch (v) {
  case BoundaryRow::Verdict::restored: return "restored";
  case BoundaryRow::Verdict::unused: return "unused";
  case BoundaryRow::Verdict::at_save: return "restored_to_save";
  case BoundaryRow::Verdict::by_program: return "restored_by_program";
  case BoundaryRow::Verdict::never_restored: return "never_restored";
  case BoundaryRow::Verdict::not_restored: return "not_restored";
  case BoundaryRow::Verdict::missing: return "missing";
  }
  return "";
}

constexpr long k_rank_columns = 4; // a job of up to this many ranks: one column per rank in the text table

// "torch CPU generator (rank 1)": a row's name with its rank, where a table has no column per rank.
std::string row_name(const BoundaryRow& r) {
  return r.rank >= 0 ? fmt::format("{} (rank {})", r.name, r.rank) : r.name;
}

std::string checkpoint_phrase(const ResumeAudit& a) {
  if (a.world_size > 1) {
    std::string s = fmt::format("every rank of the job ({} ranks) stopped at its first training forward after step "
                                "{}, then the ranks and the launcher killed at once (SIGKILL), resumed from the "
                                "checkpoint of step {}",
                                a.world_size, a.killed_after, a.resumed_from);
    std::string each;
    for (const auto& r : a.ranks) {
      each += fmt::format("{}rank {}: {}", each.empty() ? "" : "; ", r.rank, r.checkpoint);
      if (!r.saved_at.empty()) {
        each += ", saved at " + r.saved_at;
      }
      if (!r.loaded_at.empty()) {
        each += ", loaded at " + r.loaded_at;
      }
    }
    return each.empty() ? s : s + " (" + each + ")";
  }
  if (!a.captured) {
    return fmt::format("killed (SIGKILL) once its step log showed step {} or later (it had logged step {}), resumed "
                       "at step {} (the resumed process's first logged step)",
                       a.killed_after, a.killed_log_step, a.resumed_from + 1);
  }
  std::string s = fmt::format("killed after step {} (SIGKILL at its first training forward after it), resumed from "
                              "the checkpoint of step {}",
                              a.killed_after, a.resumed_from);
  if (!a.checkpoint.empty()) {
    s += fmt::format(" ({}", a.checkpoint);
    if (!a.saved_at.empty()) {
      s += ", saved at " + a.saved_at;
    }
    if (!a.loaded_at.empty()) {
      s += ", loaded at " + a.loaded_at;
    }
    s += ")";
  }
  return s;
}

std::string table_title(const ResumeAudit& a) {
  return fmt::format("State at the resume boundary (the first training forward after step {}), {} against the "
                     "resumed {}:",
                     a.resumed_from, a.reference, a.world_size > 1 ? "job, rank by rank" : "process");
}

// The text table of a job of a few ranks: a row per state, a column per rank; then each state that a
// rank did not restore, with its detail, consequence and fix.
std::string rank_columns_text(const ResumeAudit& a) {
  std::vector<std::string> names;
  size_t width = 5;
  for (const auto& r : a.rows) {
    if (std::find(names.begin(), names.end(), r.name) == names.end()) {
      names.push_back(r.name);
      width = std::max(width, r.name.size());
    }
  }
  size_t col = 6;
  for (const auto& r : a.rows) {
    col = std::max(col, r.verdict_words().size());
  }
  std::string o = fmt::format("    {:<{}}", "state", width);
  for (long k = 0; k < a.world_size; ++k) {
    o += fmt::format("  {:<{}}", fmt::format("rank {}", k), col);
  }
  while (!o.empty() && o.back() == ' ') {
    o.pop_back();
  }
  o += "\n";
  for (const auto& name : names) {
    std::string line = fmt::format("    {:<{}}", name, width);
    for (long k = 0; k < a.world_size; ++k) {
      auto it = std::find_if(a.rows.begin(), a.rows.end(), [&](const BoundaryRow& r) { return r.name == name && r.rank == k; });
      line += fmt::format("  {:<{}}", it == a.rows.end() ? "-" : it->verdict_words(), col);
    }
    while (!line.empty() && line.back() == ' ') {
      line.pop_back();
    }
    o += line + "\n";
  }
  // Each state not restored, once for the ranks where it is the same.
  std::vector<bool> said(a.rows.size(), false);
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const BoundaryRow& r = a.rows[i];
    if (r.restored() || said[i]) {
      continue;
    }
    std::vector<long> ranks;
    for (size_t j = i; j < a.rows.size(); ++j) {
      const BoundaryRow& q = a.rows[j];
      if (!said[j] && q.name == r.name && q.verdict == r.verdict && q.detail == r.detail && q.fix == r.fix) {
        said[j] = true;
        ranks.push_back(q.rank);
      }
    }
    o += fmt::format("    {} {} on {}{}\n      {}; fix: {}\n", r.name, r.verdict_words(), ranks_phrase(ranks),
                     r.detail.empty() ? "" : ": " + r.detail, r.consequence, r.fix);
  }
  return o;
}

} // namespace

std::string resume_text(const ResumeAudit& a) {
  std::string o = "Resume: " + checkpoint_phrase(a) + "\n";
  if (a.nondeterminism_step > 0) {
    o += fmt::format("  the killed process parted from run-1 at step {}, before the kill: run-to-run "
                     "nondeterminism, not the resume\n",
                     a.nondeterminism_step);
  }
  if (!a.has_table) {
    o += "  no boundary table: " + a.no_table + "\n";
  } else {
    o += "  " + table_title(a) + "\n";
  }
  if (a.has_table && a.world_size > 1 && a.world_size <= k_rank_columns) {
    o += rank_columns_text(a);
  } else if (a.has_table) {
    size_t width = 0;
    for (const auto& r : a.rows) {
      width = std::max(width, row_name(r).size());
    }
    for (const auto& r : a.rows) {
      o += fmt::format("    {:<{}}  {}{}\n", row_name(r), width, r.verdict_words(), r.shows_detail() ? ": " + r.detail : "");
      if (!r.restored()) {
        o += fmt::format("    {:<{}}    {}; fix: {}\n", "", width, r.consequence, r.fix);
      }
    }
  }
  if (a.numbers_part > 0) {
    o += fmt::format("  the numbers part at step {}\n", a.numbers_part);
  } else if (a.nondeterminism_step < 0 && a.state_not_restored()) {
    o += "  the numbers did not part before the run ended; the state above will make them part later\n";
  }
  for (const auto& n : a.notes) {
    o += "  note: " + n + "\n";
  }
  return o;
}

ojson resume_json(const ResumeAudit& a) {
  ojson rows = ojson::array();
  for (const auto& r : a.rows) {
    rows.push_back({{"state", r.name},
                    {"rank", r.rank >= 0 ? ojson(r.rank) : ojson(nullptr)},
                    {"kind", r.kind},
                    {"verdict", verdict_key(r.verdict)},
                    {"restored", r.restored()},
                    {"detail", r.detail},
                    {"consequence", r.restored() ? ojson(nullptr) : ojson(r.consequence)},
                    {"fix", r.restored() ? ojson(nullptr) : ojson(r.fix)}});
  }
  auto opt_text = [](const std::string& s) { return s.empty() ? ojson(nullptr) : ojson(s); };
  auto opt_step = [](long s) { return s >= 0 ? ojson(s) : ojson(nullptr); };
  ojson ranks = ojson::array();
  for (const auto& r : a.ranks) {
    ranks.push_back({{"rank", r.rank},
                     {"resumed_from", r.resumed_from},
                     {"checkpoint", opt_text(r.checkpoint)},
                     {"saved_at", opt_text(r.saved_at)},
                     {"loaded_at", opt_text(r.loaded_at)}});
  }
  return {{"killed_after", a.killed_after},
          {"world_size", a.world_size > 1 ? ojson(a.world_size) : ojson(nullptr)},
          {"ranks", a.world_size > 1 ? ranks : ojson(nullptr)},
          {"reference", a.reference},
          {"captured", a.captured},
          {"killed_log_step", a.captured ? ojson(nullptr) : ojson(a.killed_log_step)},
          {"resumed_from", a.resumed_from},
          {"checkpoint", opt_text(a.checkpoint)},
          {"saved_at", opt_text(a.saved_at)},
          {"loaded_at", opt_text(a.loaded_at)},
          {"saved_after_backward", a.saved_after_backward},
          {"nondeterminism_step", a.nondeterminism_step > 0 ? ojson(a.nondeterminism_step) : ojson(nullptr)},
          {"numbers_part", opt_step(a.numbers_part)},
          {"boundary", a.has_table ? rows : ojson(nullptr)},
          {"no_boundary", a.has_table ? ojson(nullptr) : ojson(a.no_table)},
          {"not_restored", a.not_restored_names(100)},
          {"notes", a.notes}};
}

std::string resume_markdown(const ResumeAudit& a) {
  std::string o = "**Resume:** " + esc_md(checkpoint_phrase(a)) + "\n\n";
  if (a.nondeterminism_step > 0) {
    o += fmt::format("The killed process parted from run-1 at step {}, before the kill: run-to-run nondeterminism, "
                     "not the resume.\n\n",
                     a.nondeterminism_step);
  }
  if (!a.has_table) {
    return o + "No boundary table: " + esc_md(a.no_table) + "\n\n";
  }
  o += esc_md(table_title(a)) + "\n\n| state | at the resume | what follows | fix |\n|---|---|---|---|\n";
  for (const auto& r : a.rows) {
    const std::string words = r.restored() ? r.verdict_words() : "**" + r.verdict_words() + "**";
    const std::string v = words + (r.shows_detail() ? ": " + r.detail : "");
    o += fmt::format("| {} | {} | {} | {} |\n", esc_md(row_name(r)), esc_md(v), r.restored() ? "" : esc_md(r.consequence),
                     r.restored() ? "" : esc_md(r.fix));
  }
  o += "\n";
  for (const auto& n : a.notes) {
    o += "- " + esc_md(n) + "\n";
  }
  return a.notes.empty() ? o : o + "\n";
}

std::string resume_html(const ResumeAudit& a) {
  std::string o = "<p><b>Resume:</b> " + esc_xml(checkpoint_phrase(a)) + "</p>\n";
  if (a.nondeterminism_step > 0) {
    o += fmt::format("<p>The killed process parted from run-1 at step {}, before the kill: run-to-run "
                     "nondeterminism, not the resume.</p>\n",
                     a.nondeterminism_step);
  }
  if (!a.has_table) {
    return o + "<p>No boundary table: " + esc_xml(a.no_table) + "</p>\n";
  }
  o += "<p>" + esc_xml(table_title(a)) +
       "</p>\n<div class=\"scroll\"><table><tr><th>state</th><th>at the resume</th><th>what follows</th><th>fix</th></tr>\n";
  for (const auto& r : a.rows) {
    o += fmt::format("<tr><td>{}</td><td class=\"{}\">{}{}</td><td>{}</td><td>{}</td></tr>\n", esc_xml(row_name(r)),
                     r.restored() ? "ok" : "bad", esc_xml(r.verdict_words()),
                     r.shows_detail() ? ": " + esc_xml(r.detail) : "",
                     r.restored() ? "" : esc_xml(r.consequence), r.restored() ? "" : esc_xml(r.fix));
  }
  o += "</table></div>\n";
  for (const auto& n : a.notes) {
    o += "<p>Note: " + esc_xml(n) + "</p>\n";
  }
  return o;
}

} // namespace reprun
