// Markdown, JUnit XML and HTML renderings, and the dispatch from ReportFormat.
#include "report/report_internal.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <functional>

namespace reprun {

std::string esc_xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
    case '&': o += "&amp;"; break;
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '"': o += "&quot;"; break;
    case '\'': o += "&apos;"; break;
    default:
      // Control characters are not allowed in XML 1.0.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') {
        o += ' ';
      } else {
        o += c;
      }
    }
  }
  return o;
}

std::string esc_md(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|') {
      o += "\\|";
    } else if (c == '\n') {
      o += ' ';
    } else {
      o += c;
    }
  }
  return o;
}

namespace {
} // namespace

std::string diff_markdown(const DiffResult& r, const std::string& heading, const Localization* loc) {
  std::string o;
  o += fmt::format("{} {} {}\n\n", heading, r.identical ? "✅" : "❌", esc_md(r.verdict));
  o += fmt::format("- **A**: `{}` ({})\n- **B**: `{}` ({})\n- **mode**: {}\n\n", r.a.label,
                   r.a.status.empty() ? "bare log" : r.a.status, r.b.label, r.b.status.empty() ? "bare log" : r.b.status,
                   r.mode);
  const Divergence& d = r.divergence;
  if (d.found) {
    o += fmt::format("**First divergence:** step {}{} — **{}**: {}\n\n", d.step,
                     r.ranks.empty() ? "" : fmt::format(", rank {}", d.rank), d.classification(), esc_md(d.detail));
    const Localization origin = divergence_origin(r, loc);
    if (origin.found) {
      o += fmt::format("**Origin:** step {}, {}: the first differing value in computation order\n\n", origin.step,
                       esc_md(origin_phrase(origin)));
    }
    if (!d.first_tensor.empty()) {
      std::string s = first_tensor_sentence(d, origin, r.a.manifest);
      s[0] = 'F';
      o += esc_md(s) + "\n\n";
    }
    if (d.has_loss) {
      o += fmt::format("Loss at that step: A `{}`, B `{}`: {}\n\n", d.loss_a, d.loss_b,
                       ulp_phrase(d.loss_ulps, d.loss_rel, d.loss_format));
    }
  }
  bool header = false;
  size_t inputs_shown = 0, inputs_left = 0;
  for (const auto& m : r.meta) {
    if (m.kind != MetaDelta::Kind::material) {
      continue;
    }
    if (is_input_file(m) && inputs_shown++ >= k_input_rows) {
      ++inputs_left;
      continue;
    }
    if (!header) {
      o += "| rank | category | field | A | B |\n|---|---|---|---|---|\n";
      header = true;
    }
    const auto shown = shown_difference(m.a, m.b, 60);
    // An input file: what changed in it, in A's column (its digests say nothing to a reader).
    const bool said = m.key == "data.files" || !m.detail.empty();
    std::string a = m.key == "data.files" ? dataset_sentence(r.dataset) : !m.detail.empty() ? m.detail : shown.first;
    o += fmt::format("| {} | {} | `{}` | {} | {} |\n", m.rank, m.category, esc_md(m.key), esc_md(a),
                     esc_md(said ? "" : shown.second));
  }
  if (inputs_left > 0) {
    o += "| | | " + esc_md(more_inputs(inputs_left, true)) + " | | |\n";
  }
  if (header) {
    o += "\n";
  }
  if (r.growth.size() > 1) {
    o += "| step | loss A | loss B | abs diff |\n|---:|---:|---:|---:|\n";
    for (const auto& row : gap_rows(r)) {
      const GapPoint& g = row.point;
      o += fmt::format("| {}{}{} | {} | {} | {:.3g} |\n", g.step, row.peak ? " (peak)" : "", g.is_end ? " (end)" : "",
                       g.loss_a, g.loss_b, g.abs_diff);
    }
    o += "\n";
  }
  for (const auto& n : r.notes) {
    o += "> " + esc_md(n) + "\n";
  }
  if (!r.identical && !r.diagnosis.empty()) {
    o += fmt::format("{}**Likely cause:** {}  \n**Fix:** {}\n", r.notes.empty() ? "" : "\n",
                     esc_md(r.diagnosis.front().cause), esc_md(r.diagnosis.front().fix));
    for (size_t i = 1; i < r.diagnosis.size(); ++i) {
      o += fmt::format("{}- also possible: {} — **fix:** {}\n", i == 1 ? "\n" : "", esc_md(r.diagnosis[i].cause),
                       esc_md(r.diagnosis[i].fix));
    }
    o += "\n";
  }
  return o;
}

namespace {

std::string junit_case(const std::string& name, const DiffResult& r, const std::string& extra,
                       const Localization* loc) {
  std::string o = fmt::format("    <testcase classname=\"reprun\" name=\"{}\">\n", esc_xml(name));
  if (!r.identical) {
    o += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", esc_xml(r.verdict),
                     esc_xml(r.divergence.found ? r.divergence.classification() : "metadata"),
                     esc_xml(extra + render_diff_text(r, false, loc)));
  } else {
    o += fmt::format("      <system-out>{}</system-out>\n", esc_xml(extra.empty() ? r.verdict : r.verdict + "\n" + extra));
  }
  o += "    </testcase>\n";
  return o;
}

// `notes` (a check's notes about its runs as a whole: a drawn seed, a warning) go to the suite's
// <system-out>, after its cases.
std::string junit_document(const std::string& suite, const std::vector<std::string>& cases, long failures,
                           const std::vector<std::string>& notes = {}) {
  std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o += fmt::format("<testsuites name=\"reprun\" tests=\"{}\" failures=\"{}\">\n", cases.size(), failures);
  o += fmt::format("  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\">\n", esc_xml(suite), cases.size(), failures);
  for (const auto& c : cases) {
    o += c;
  }
  if (!notes.empty()) {
    std::string text;
    for (const auto& n : notes) {
      text += "note: " + n + "\n";
    }
    o += fmt::format("    <system-out>{}</system-out>\n", esc_xml(text));
  }
  o += "  </testsuite>\n</testsuites>\n";
  return o;
}

// The x range of the plots: from the first plotted step to the last step of the longer run, so a
// run that stops early shows as a curve that stops early.
std::pair<double, double> x_range(const DiffResult& r) {
  const auto& s = r.loss_series;
  double x0 = static_cast<double>(s.front().first);
  double x1 = static_cast<double>(std::max({s.back().first, r.a.last_step, r.b.last_step}));
  return {x0, std::max(x0 + 1, x1)};
}

} // namespace

std::vector<double> x_ticks(double x0, double x1) {
  const double raw = (x1 - x0) / 5;
  const double p = std::pow(10.0, std::floor(std::log10(std::max(raw, 1.0))));
  const double step = raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
  std::vector<double> t = {x0};
  for (double v = std::ceil(x0 / step + 1e-9) * step; v < x1 - step * 0.3; v += step) {
    if (v > x0 + step * 0.3) {
      t.push_back(v);
    }
  }
  t.push_back(x1);
  return t;
}

namespace {

// The x axis of a plot: tick marks and step labels along the bottom edge, and where the shorter
// run ends when the lengths differ.
std::string x_axis(const DiffResult& r, double x0, double x1, double T, double B, double H,
                   const std::function<double(double)>& px) {
  std::string o;
  for (double v : x_ticks(x0, x1)) {
    const double x = px(v);
    o += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", x, x, H - B, H - B + 4);
    o += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"{}\">{:.0f}</text>\n", x,
                     H - B + 15, v == x0 ? "start" : v == x1 ? "end" : "middle", v);
  }
  if (r.a.last_step != r.b.last_step && r.a.last_step >= 0 && r.b.last_step >= 0) {
    const bool a_short = r.a.last_step < r.b.last_step;
    const double x = px(static_cast<double>(std::min(r.a.last_step, r.b.last_step)));
    o += fmt::format("<line class=\"run-end\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#888\" "
                     "stroke-dasharray=\"2 3\"/>\n",
                     x, x, T, H - B);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#666\" text-anchor=\"end\">{} ends</text>\n",
                     x - 3, H - B - 6, a_short ? "A" : "B");
  }
  return o;
}

// SVG plot of both loss curves, the first divergence marked.
std::string loss_svg(const DiffResult& r) {
  const auto& s = r.loss_series;
  if (s.size() < 2) {
    return "<p>(not enough loss values to plot)</p>";
  }
  const double W = 860, H = 320, L = 70, R = 20, T = 20, B = 50;
  const auto x_span = x_range(r); // not a structured binding: lambdas below capture its ends
  const double x0 = x_span.first, x1 = x_span.second;
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& p : s) {
    for (double v : {p.second.first, p.second.second}) {
      if (std::isfinite(v)) {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
      }
    }
  }
  if (!std::isfinite(lo)) {
    return "<p>(no finite loss values to plot)</p>";
  }
  const bool logy = lo > 0 && hi / lo > 20;
  auto ty = [&](double v) { return logy ? std::log10(v) : v; };
  double ylo = ty(lo), yhi = ty(hi);
  if (yhi - ylo < 1e-12) {
    yhi = ylo + 1;
  }
  std::function<double(double)> px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double v) { return T + (1 - (ty(v) - ylo) / (yhi - ylo)) * (H - T - B); };
  auto path = [&](bool second) {
    std::string d;
    bool pen = false;
    for (const auto& p : s) {
      double v = second ? p.second.second : p.second.first;
      if (!std::isfinite(v) || (logy && v <= 0)) {
        pen = false;
        continue;
      }
      d += fmt::format("{}{:.1f},{:.1f} ", pen ? "L" : "M", px(static_cast<double>(p.first)), py(v));
      pen = true;
    }
    return d;
  };
  std::string o = fmt::format(
      "<svg id=\"loss-plot\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
      "role=\"img\" aria-label=\"loss curves\">\n",
      W, H, W, H);
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                   W - L - R, H - T - B);
  for (int i = 0; i <= 4; ++i) {
    double yv = ylo + (yhi - ylo) * i / 4.0;
    double y = T + (1 - i / 4.0) * (H - T - B);
    double label = logy ? std::pow(10.0, yv) : yv;
    o += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{:.3g}</text>\n",
                     L - 6, y + 4, label);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", L, W - R, y, y);
  }
  o += x_axis(r, x0, x1, T, B, H, px);
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">step; loss{}</text>\n", (W + L) / 2,
                   H - 6, logy ? " on a log scale" : "");
  if (r.divergence.found && r.divergence.step >= x0 && r.divergence.step <= x1) {
    double x = px(static_cast<double>(r.divergence.step));
    o += fmt::format("<line id=\"divergence-marker\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#d00\" "
                     "stroke-width=\"2\" stroke-dasharray=\"4 3\"/>\n",
                     x, x, T, H - B);
    const bool right_half = x > (L + W - R) / 2;
    o += fmt::format("<text x=\"{:.1f}\" y=\"{}\" font-size=\"11\" fill=\"#d00\" text-anchor=\"{}\">first divergence: "
                     "step {}</text>\n",
                     right_half ? x - 4 : x + 4, T + 14, right_half ? "end" : "start", r.divergence.step);
  }
  o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\"/>\n", path(false));
  o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>\n",
                   path(true));
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#1f77b4\">A</text>\n", W - R - 40, T + 16);
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#ff7f0e\">B</text>\n", W - R - 20, T + 16);
  o += "</svg>\n";
  return o;
}

// A power of ten as a tick label: "0.01", "1", "100" near 1, "1e-7" beyond.
std::string decade_label(int k) {
  if (k >= -2 && k <= 3) {
    return fmt::format("{}", std::pow(10.0, k));
  }
  return fmt::format("1e{}", k);
}

// SVG plot of |loss A - loss B| on a log scale (exact zeros drawn on the floor), so a gap too small
// to see between the two loss curves is still visible. Every labelled tick is a power of ten.
std::string gap_svg(const DiffResult& r) {
  const auto& s = r.loss_series;
  double hi = 0, lo = INFINITY;
  for (const auto& p : s) {
    double g = std::fabs(p.second.first - p.second.second);
    if (std::isfinite(g) && g > 0) {
      hi = std::max(hi, g);
      lo = std::min(lo, g);
    }
  }
  if (s.size() < 2 || hi <= 0) {
    return "";
  }
  const double W = 860, H = 200, L = 70, R = 20, T = 10, B = 50;
  const auto x_span = x_range(r); // not a structured binding: lambdas below capture its ends
  const double x0 = x_span.first, x1 = x_span.second;
  const int ylo = static_cast<int>(std::floor(std::log10(lo))) - 1;
  const int yhi = std::max(ylo + 1, static_cast<int>(std::ceil(std::log10(hi))));
  std::function<double(double)> px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto pyl = [&](double y) { return T + (1 - (y - ylo) / (yhi - ylo)) * (H - T - B); };
  auto py = [&](double g) { return pyl(g > 0 && std::isfinite(g) ? std::log10(g) : ylo); };
  std::string d;
  for (size_t i = 0; i < s.size(); ++i) {
    d += fmt::format("{}{:.1f},{:.1f} ", i ? "L" : "M", px(static_cast<double>(s[i].first)),
                     py(std::fabs(s[i].second.first - s[i].second.second)));
  }
  std::string o = fmt::format("<svg id=\"gap-plot\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
                              "aria-label=\"loss difference\">\n", W, H, W, H);
  o += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n", L, T,
                   W - L - R, H - T - B);
  // At most about six labelled decades: every k-th power of ten.
  const int every = (yhi - ylo + 5) / 6;
  for (int k = yhi; k > ylo; k -= every) {
    const double y = pyl(k);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", L, W - R, y, y);
    o += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{}</text>\n",
                     L - 6, y + 4, decade_label(k));
  }
  o += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">0</text>\n", L - 6,
                   H - B);
  o += x_axis(r, x0, x1, T, B, H, px);
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">step; |loss A - loss B| on a log "
                   "scale (exact zeros on the floor)</text>\n",
                   (W + L) / 2, H - 6);
  o += fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#b00\" stroke-width=\"1.5\"/>\n</svg>\n", d);
  return o;
}

} // namespace

std::string html_section(const DiffResult& r, const std::string& title, const Localization* loc) {
  std::string o = fmt::format("<section><h2>{}</h2>\n<p class=\"verdict {}\">{}</p>\n", esc_xml(title),
                              r.identical ? "ok" : "bad", esc_xml(r.verdict));
  auto status = [](const RunSide& side) { return side.status.empty() ? std::string("bare step log") : side.status; };
  o += fmt::format("<p>A: <code>{}</code> ({})<br>B: <code>{}</code> ({})<br>mode: {}</p>\n", esc_xml(r.a.label),
                   esc_xml(status(r.a)), esc_xml(r.b.label), esc_xml(status(r.b)), esc_xml(r.mode));
  if (loc) {
    o += fmt::format("<p class=\"loc\"><b>Localization:</b> {}</p>\n", esc_xml(loc->found ? loc->sentence : loc->note));
  }
  const Divergence& d = r.divergence;
  if (d.found) {
    o += fmt::format("<p><b>First divergence:</b> step {}{} — <b>{}</b>: {}</p>\n", d.step,
                     r.ranks.empty() ? "" : fmt::format(", rank {}", d.rank), esc_xml(d.classification()),
                     esc_xml(d.detail));
    const Localization origin = divergence_origin(r, loc);
    if (origin.found) {
      o += fmt::format("<p><b>Origin:</b> step {}, {}: the first differing value in computation order</p>\n",
                       origin.step, esc_xml(origin_phrase(origin)));
    }
    if (!d.first_tensor.empty()) {
      std::string s = first_tensor_sentence(d, origin, r.a.manifest);
      s[0] = 'F';
      o += "<p>" + esc_xml(s) + "</p>\n";
    }
    if (d.has_loss) {
      o += fmt::format("<p>Loss at that step: A <code>{}</code>, B <code>{}</code>: {}</p>\n", d.loss_a, d.loss_b,
                       esc_xml(ulp_phrase(d.loss_ulps, d.loss_rel, d.loss_format)));
    }
  }
  o += loss_svg(r);
  o += gap_svg(r);
  o += "<h3>Metadata differences</h3>\n<div class=\"scroll\"><table><tr><th>rank</th><th>category</th><th>field</th>"
       "<th>A</th><th>B</th><th>counted</th></tr>\n";
  size_t shown_inputs[2] = {0, 0}, left_inputs[2] = {0, 0}; // not counted, counted
  for (const auto& m : r.meta) {
    const bool counted_row = m.kind == MetaDelta::Kind::material;
    if (is_input_file(m) && shown_inputs[counted_row]++ >= k_input_rows) {
      ++left_inputs[counted_row];
      continue;
    }
    const auto shown = shown_difference(m.a, m.b, 60);
    const bool said = m.key == "data.files" || !m.detail.empty(); // an input file: what changed in it
    std::string a = m.key == "data.files" ? dataset_sentence(r.dataset) : !m.detail.empty() ? m.detail : shown.first;
    std::string b = said ? "" : shown.second;
    // Values, keys and reasons may break anywhere (digests and paths have no spaces), so that the
    // table fits the page with every column in view.
    const bool counted = m.kind == MetaDelta::Kind::material;
    o += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"v\"><code>{}</code></td><td class=\"v\">{}</td>"
                     "<td class=\"v\">{}</td><td class=\"v\">{}</td></tr>\n",
                     m.rank, esc_xml(m.category), esc_xml(m.key), esc_xml(a), esc_xml(b),
                     m.why.empty() ? (counted ? "yes" : "no") : esc_xml((counted ? "yes: " : "no: ") + m.why));
  }
  for (const bool counted : {true, false}) {
    if (left_inputs[counted] > 0) {
      o += "<tr><td colspan=\"6\">" + esc_xml(more_inputs(left_inputs[counted], counted)) + "</td></tr>\n";
    }
  }
  if (r.meta.empty()) {
    o += "<tr><td colspan=\"6\">none</td></tr>\n";
  }
  o += "</table></div>\n";
  if (r.growth.size() > 1) {
    o += "<h3>How the gap grows</h3>\n<div class=\"scroll\"><table><tr><th>step</th><th>loss A</th><th>loss B</th>"
         "<th>|diff|</th></tr>\n";
    for (const auto& row : gap_rows(r)) {
      const GapPoint& g = row.point;
      o += fmt::format("<tr{}><td>{}{}{}</td><td>{}</td><td>{}</td><td>{:.3g}</td></tr>\n",
                       row.peak ? " class=\"peak\"" : "", g.step, row.peak ? " (peak)" : "", g.is_end ? " (end)" : "",
                       g.loss_a, g.loss_b, g.abs_diff);
    }
    o += "</table></div>\n";
  }
  if (!r.identical && !r.diagnosis.empty()) {
    o += "<h3>Likely cause and fix</h3>\n<ol class=\"cause\">\n";
    for (const auto& c : r.diagnosis) {
      o += fmt::format("<li>{}<br><b>Fix:</b> {}</li>\n", esc_xml(c.cause), esc_xml(c.fix));
    }
    o += "</ol>\n";
  }
  o += "</section>\n";
  return o;
}

// Fits any width: plots scale down with the page (viewBox, max-width), long text outside tables
// wraps anywhere, column headers never wrap, table cells wrap between words (cells of class "v",
// the metadata's keys and values, anywhere: a digest is one long word), and a table wider than a
// narrow window scrolls inside its own box instead of widening the page.
std::string html_page(const std::string& title, const std::string& body, const std::string& extra_css) {
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>" +
         esc_xml(title) +
         "</title>\n<style>body{font-family:sans-serif;margin:2em auto;padding:0 1em;max-width:960px;"
         "overflow-wrap:anywhere}code{background:#f3f3f3}svg{display:block;max-width:100%;height:auto}"
         ".scroll{max-width:100%;overflow-x:auto}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px}"
         "th{white-space:nowrap;overflow-wrap:normal}td{overflow-wrap:break-word}td.v{overflow-wrap:anywhere}"
         "tr.peak{background:#fff4e0}"
         ".ok{color:#070;font-weight:bold}.bad{color:#b00;font-weight:bold}.loc{background:#fff4e0;padding:6px}"
         "@media (max-width:600px){body{margin:0.5em auto;padding:0 0.5em}}" +
         extra_css +
         "</style></head>\n<body>\n<h1>" +
         esc_xml(title) + "</h1>\n" + body + "</body></html>\n";
}

std::string render_diff(const DiffResult& r, ReportFormat f, bool color) {
  const Localization* loc = r.localization ? &*r.localization : nullptr; // from the op traces the runs kept
  switch (f) {
  case ReportFormat::text: return render_diff_text(r, color, r.localization ? &*r.localization : nullptr);
  case ReportFormat::json: return diff_to_json(r).dump(2) + "\n";
  case ReportFormat::markdown: return diff_markdown(r, "### reprun diff", loc);
  case ReportFormat::junit:
    return junit_document("reprun diff", {junit_case(r.a.label + " vs " + r.b.label, r, "", loc)}, r.identical ? 0 : 1);
  case ReportFormat::html: return html_page("reprun diff", html_section(r, r.a.label + " vs " + r.b.label, loc));
  }
  return "";
}

std::string render_check_error(const std::string& kind, const std::string& subject, const std::string& error,
                               ReportFormat f) {
  const std::string what = kind == "exec" ? "program" : "config";
  const std::string verdict = "ERROR: " + error;
  switch (f) {
  case ReportFormat::text: return fmt::format("{}\n  {}: {}\n", verdict, what, subject);
  case ReportFormat::json: {
    nlohmann::ordered_json j = {{"format", "reprun.report/1"}, {"kind", kind},     {"identical", false},
                                {"verdict", verdict},          {what, subject},     {"error", error}};
    return j.dump(2) + "\n";
  }
  case ReportFormat::markdown:
    return fmt::format("## reprun {} ⚠️ {}\n\n{} `{}`: no verdict (exit 2).\n\n", kind, esc_md(verdict),
                       what == "config" ? "Config" : "Program", subject);
  case ReportFormat::junit: {
    const std::string name = fmt::format("reprun {} {}", kind, subject);
    std::string o = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o += "<testsuites name=\"reprun\" tests=\"1\" failures=\"0\" errors=\"1\">\n";
    o += fmt::format("  <testsuite name=\"{}\" tests=\"1\" failures=\"0\" errors=\"1\">\n", esc_xml(name));
    o += fmt::format("    <testcase classname=\"reprun\" name=\"{}\">\n", esc_xml(name));
    o += fmt::format("      <error message=\"{}\" type=\"error\">{}</error>\n", esc_xml(error), esc_xml(verdict));
    o += "    </testcase>\n  </testsuite>\n</testsuites>\n";
    return o;
  }
  case ReportFormat::html:
    return html_page("reprun " + kind,
                     fmt::format("<p class=\"verdict bad\">{}</p>\n<p>{} <code>{}</code>: no verdict (exit 2).</p>\n",
                                 esc_xml(verdict), what, esc_xml(subject)));
  }
  return "";
}

std::string render_check(const CheckResult& r, ReportFormat f, bool color) {
  switch (f) {
  case ReportFormat::text: return render_check_text(r, color);
  case ReportFormat::json: return check_to_json(r).dump(2) + "\n";
  case ReportFormat::markdown: {
    std::string o = fmt::format("## reprun {} {} {}\n\n", r.kind, r.identical ? "✅" : "❌", esc_md(r.verdict));
    o += fmt::format("{} `{}`; runs:\n\n", r.kind == "exec" ? "Program" : "Config", r.config);
    for (const auto& run : r.runs) {
      o += fmt::format("- run-{}: {} → {}\n", run.index, run.variation.empty() ? "baseline" : esc_md(run.variation),
                       esc_md(run.status));
    }
    o += "\n";
    for (const auto& n : r.notes) {
      o += "- note: " + esc_md(n) + "\n";
    }
    o += r.notes.empty() ? "" : "\n";
    for (const auto& p : r.pairs) {
      if (p.localization) {
        o += fmt::format("**Localization (run-{}):** {}\n\n", p.run,
                         esc_md(p.localization->found ? p.localization->sentence : p.localization->note));
      }
      if (p.resume) {
        o += resume_markdown(*p.resume);
      }
      o += diff_markdown(p.diff, fmt::format("### run-{} vs run-1", p.run),
                         p.localization ? &*p.localization : nullptr);
    }
    return o;
  }
  case ReportFormat::junit: {
    std::vector<std::string> cases;
    long failures = 0;
    for (const auto& p : r.pairs) {
      std::string extra;
      if (p.localization) {
        extra = "Localization: " + (p.localization->found ? p.localization->sentence : p.localization->note) + "\n";
      }
      if (p.resume) {
        extra += resume_text(*p.resume);
      }
      std::string variation = p.run - 1 < static_cast<int>(r.runs.size()) ? r.runs[static_cast<size_t>(p.run - 1)].variation : "";
      cases.push_back(junit_case(fmt::format("run-{} vs run-1{}", p.run, variation.empty() ? "" : " (" + variation + ")"),
                                 p.diff, extra, p.localization ? &*p.localization : nullptr));
      failures += p.diff.identical ? 0 : 1;
    }
    return junit_document("reprun " + r.kind + " " + r.config, cases, failures, r.notes);
  }
  case ReportFormat::html: {
    std::string body = fmt::format("<p class=\"verdict {}\">{}</p>\n<p>{} <code>{}</code></p>\n<ul>\n",
                                   r.identical ? "ok" : "bad", esc_xml(r.verdict),
                                   r.kind == "exec" ? "program" : "config", esc_xml(r.config));
    for (const auto& run : r.runs) {
      body += fmt::format("<li>run-{}: {} → {}</li>\n", run.index,
                          esc_xml(run.variation.empty() ? "baseline" : run.variation), esc_xml(run.status));
    }
    body += "</ul>\n";
    for (const auto& n : r.notes) {
      body += "<p>Note: " + esc_xml(n) + "</p>\n";
    }
    for (const auto& p : r.pairs) {
      if (p.resume) {
        body += resume_html(*p.resume);
      }
      body += html_section(p.diff, fmt::format("run-{} vs run-1", p.run),
                           p.localization ? &*p.localization : nullptr);
    }
    return html_page("reprun " + r.kind, body);
  }
  }
  return "";
}

} // namespace reprun
