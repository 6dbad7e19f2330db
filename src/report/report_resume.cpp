// The resume audit of an exec pair (audit/resume.hpp) in every report format: where the run was
// killed and from which checkpoint it resumed, and the boundary table, state by state.
#include "report_internal.hpp"

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

std::string checkpoint_phrase(const ResumeAudit& a) {
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
                     "resumed process:",
                     a.resumed_from, a.reference);
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
    size_t width = 0;
    for (const auto& r : a.rows) {
      width = std::max(width, r.name.size());
    }
    for (const auto& r : a.rows) {
      o += fmt::format("    {:<{}}  {}{}\n", r.name, width, r.verdict_words(), r.shows_detail() ? ": " + r.detail : "");
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
                    {"kind", r.kind},
                    {"verdict", verdict_key(r.verdict)},
                    {"restored", r.restored()},
                    {"detail", r.detail},
                    {"consequence", r.restored() ? ojson(nullptr) : ojson(r.consequence)},
                    {"fix", r.restored() ? ojson(nullptr) : ojson(r.fix)}});
  }
  auto opt_text = [](const std::string& s) { return s.empty() ? ojson(nullptr) : ojson(s); };
  auto opt_step = [](long s) { return s >= 0 ? ojson(s) : ojson(nullptr); };
  return {{"killed_after", a.killed_after},
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
    o += fmt::format("| {} | {} | {} | {} |\n", esc_md(r.name), esc_md(v), r.restored() ? "" : esc_md(r.consequence),
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
    o += fmt::format("<tr><td>{}</td><td class=\"{}\">{}{}</td><td>{}</td><td>{}</td></tr>\n", esc_xml(r.name),
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
