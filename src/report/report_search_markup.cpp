// The leaderboard and the search comparison as Markdown and HTML (see
// include/reprun/report/search_report.hpp). The HTML leaderboard is one self-contained page with
// inline SVG: the metric against each hyperparameter, and the learning curves of the best trials.
// Only reads a SearchRecord or SearchDiff, and prints no timing and no directory of the search, so
// two runs of one search render the same bytes. Non-finite or missing metrics are "-" in tables and
// left out of plots.
#include "report_internal.hpp"

#include "reprun/report/search_report.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

// Rows of the Markdown leaderboard; the rest are counted in a last line (a PR comment stays short).
constexpr size_t k_markdown_rows = 50;

std::optional<double> finite(const std::optional<double>& v) {
  return v && std::isfinite(*v) ? v : std::nullopt;
}

std::string metric_text(const std::optional<double>& v) {
  return finite(v) ? fmt::format("{:.6g}", *v) : "-";
}

const char* direction(const SearchRecord& s) { return s.maximize ? "max" : "min"; }

std::string other_metric(const SearchRecord& s) { return s.metric == "val_loss" ? "val_accuracy" : "val_loss"; }

std::optional<double> other_value(const SearchRecord& s, const TrialEntry& t) {
  return s.metric == "val_loss" ? t.val_accuracy : t.val_loss;
}

// The first trial of the ranking when it has a finite metric, else null.
const TrialEntry* best_trial(const SearchRecord& s) {
  if (s.ranking.empty()) {
    return nullptr;
  }
  const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[0])];
  return finite(t.metric) ? &t : nullptr;
}

std::string status_text(const SearchRecord& s, const TrialEntry& t) {
  return s.method == "asha" && t.rung >= 0 ? fmt::format("{} (rung {})", t.status, t.rung) : t.status;
}

// A trial's value of `key` as JSON text, "-" when it has none.
std::string value_of(const TrialEntry& t, const std::string& key) {
  for (const auto& [k, v] : t.values) {
    if (k == key) {
      return v;
    }
  }
  return "-";
}

std::string rungs_text(const SearchRecord& s) {
  std::string r;
  for (long b : s.rungs) {
    r += (r.empty() ? "" : ", ") + std::to_string(b);
  }
  return r;
}

// `v` as a Markdown code span: fenced with more backticks than it holds; in a table cell `|` is
// escaped too (GitHub splits cells on it even inside code).
std::string md_code(const std::string& v, bool in_table) {
  std::string t = in_table ? esc_md(v) : v;
  std::replace(t.begin(), t.end(), '\n', ' ');
  size_t run = 0, longest = 0;
  for (char c : t) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  const std::string pad = !t.empty() && (t.front() == '`' || t.back() == '`') ? " " : "";
  return fence + pad + t + pad + fence;
}

// ---- the plots -------------------------------------------------------------------------------------

// A numeric axis, linear or log10: lo and hi in axis coordinates (log10 of the values when log).
struct Scale {
  bool log = false;
  double lo = 0.0, hi = 1.0;

  // Over the values [a, b]; `pad` widens it by 6% each side so no point sits on the frame, but not
  // below 0 when `keep_sign` and a >= 0 (a loss or an accuracy). A single value gets a range around it.
  static Scale over(double a, double b, bool log, bool pad, bool keep_sign) {
    Scale s;
    s.log = log;
    s.lo = log ? std::log10(a) : a;
    s.hi = log ? std::log10(b) : b;
    if (!(s.hi > s.lo)) {
      const double w = log ? 0.5 : std::max(std::fabs(s.lo) * 0.1, 1e-6);
      s.lo -= w;
      s.hi += w;
    } else if (pad) {
      const double w = (s.hi - s.lo) * 0.06;
      s.lo = !log && keep_sign && a >= 0 && s.lo - w < 0 ? 0.0 : s.lo - w;
      s.hi += w;
    }
    return s;
  }

  // Where value v lies: 0 at lo, 1 at hi.
  double frac(double v) const { return ((log ? std::log10(v) : v) - lo) / (hi - lo); }

  // Round tick values inside the axis: linear, 1, 2 or 5 times a power of ten apart (about five);
  // log, the powers of ten (every k-th when there are many), with 2 and 5 times them when the axis
  // spans two decades or less, and the ends when no such value falls inside.
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      const int k0 = static_cast<int>(std::floor(lo)), k1 = static_cast<int>(std::ceil(hi));
      const bool fine = k1 - k0 <= 2;
      const int every = std::max(1, (k1 - k0 + 5) / 6);
      for (int k = k0; k <= k1; k += every) {
        for (double m : {1.0, 2.0, 5.0}) {
          const double a = std::log10(m) + k;
          if ((m == 1.0 || fine) && a >= lo - 1e-9 && a <= hi + 1e-9) {
            t.push_back(m * std::pow(10.0, k));
          }
        }
      }
      if (t.size() < 2) {
        t = {std::pow(10.0, lo), std::pow(10.0, hi)};
      }
      return t;
    }
    const double raw = (hi - lo) / 4;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double step = raw <= p ? p : raw <= 2 * p ? 2 * p : raw <= 5 * p ? 5 * p : 10 * p;
    for (long i = static_cast<long>(std::ceil(lo / step - 1e-9)); static_cast<double>(i) * step <= hi + step * 1e-9;
         ++i) {
      t.push_back(static_cast<double>(i) * step);
    }
    return t;
  }
};

// The x axis of one hyperparameter: numeric (linear, or log for log_uniform) over the search range,
// or one band per choice.
struct Axis {
  bool category = false;
  Scale scale;
  std::vector<std::string> categories; // the values as JSON text, in the space's order
};

std::optional<double> number_of(const std::string& json_text) {
  const ojson v = ojson::parse(json_text, nullptr, false);
  if (!v.is_number()) {
    return std::nullopt;
  }
  const double x = v.get<double>();
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

// From the resolved search section (`def`: {"log_uniform": [lo, hi]} and the like) and the values
// the trials took. A key whose definition is unknown is numeric when every value is a number (on a
// log axis when they are positive and span two decades or more), else categorical.
Axis make_axis(const ojson& def, const std::vector<std::string>& values) {
  Axis a;
  std::string kind;
  if (def.is_object()) {
    for (const char* k : {"uniform", "log_uniform", "int_uniform", "choice"}) {
      if (def.contains(k)) {
        kind = k;
      }
    }
  }
  bool numeric = kind != "choice";
  double lo = INFINITY, hi = -INFINITY;
  for (const auto& v : values) {
    const auto x = number_of(v);
    if (!x) {
      numeric = false;
      continue;
    }
    lo = std::min(lo, *x);
    hi = std::max(hi, *x);
  }
  if (numeric && !kind.empty() && def[kind].is_array() && def[kind].size() == 2 && def[kind][0].is_number() &&
      def[kind][1].is_number()) {
    lo = std::min(lo, def[kind][0].get<double>());
    hi = std::max(hi, def[kind][1].get<double>());
  }
  if (!numeric || !std::isfinite(lo)) {
    a.category = true;
    if (kind == "choice" && def["choice"].is_array()) {
      for (const auto& c : def["choice"]) {
        a.categories.push_back(c.dump());
      }
    }
    for (const auto& v : values) {
      if (std::find(a.categories.begin(), a.categories.end(), v) == a.categories.end()) {
        a.categories.push_back(v);
      }
    }
    return a;
  }
  const bool log = lo > 0 && (kind == "log_uniform" || (kind.empty() && hi / lo >= 100));
  a.scale = Scale::over(lo, hi, log, true, false);
  return a;
}

// The metric's axis over every plotted value: log for a loss spanning more than a factor of 20.
Scale metric_scale(const SearchRecord& s, double lo, double hi) {
  return Scale::over(lo, hi, s.metric == "val_loss" && lo > 0 && hi / lo > 20, true, true);
}

// A plot's frame, its horizontal grid lines and the labels of its y axis.
std::string frame_and_y_ticks(double W, double H, double L, double R, double T, double B, const Scale& y) {
  std::string o = fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#ccc\"/>\n",
                              L, T, W - L - R, H - T - B);
  for (double v : y.ticks()) {
    const double py = T + (1 - y.frac(v)) * (H - T - B);
    o += fmt::format("<line x1=\"{}\" x2=\"{}\" y1=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#eee\"/>\n", L, W - R, py, py);
    o += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{:.4g}</text>\n",
                     L - 6, py + 4, v);
  }
  return o;
}

// The fill of a point: the best trial's red; asha colours each rung, darker the further it went.
std::string point_colour(const SearchRecord& s, const TrialEntry& t, bool best) {
  static const char* k_rungs[] = {"#9ecae1", "#6baed6", "#3182bd", "#08519c", "#08306b"};
  if (best) {
    return "#d62728";
  }
  if (s.method != "asha" || t.rung < 0) {
    return "#1f77b4";
  }
  return k_rungs[std::min<size_t>(static_cast<size_t>(t.rung), std::size(k_rungs) - 1)];
}

// The legend of the scatter plots (HTML, so it wraps on a narrow page).
std::string scatter_legend(const SearchRecord& s, const TrialEntry* best) {
  auto item = [](const std::string& colour, const std::string& what) {
    return fmt::format("<span class=\"key\"><span style=\"color:{}\">&#9679;</span> {}</span>", colour, esc_xml(what));
  };
  std::string o = "<p class=\"legend\">";
  if (best) {
    o += item("#d62728", fmt::format("best, trial {}", best->k));
  }
  if (s.method == "asha") {
    for (size_t r = 0; r < s.rungs.size(); ++r) {
      TrialEntry probe;
      probe.rung = static_cast<int>(r);
      o += item(point_colour(s, probe, false),
                fmt::format("rung {} ({} epoch{})", r, s.rungs[r], s.rungs[r] == 1 ? "" : "s"));
    }
  } else {
    o += item("#1f77b4", "other trials");
  }
  return o + "</p>\n";
}

// One scatter plot: the metric of every trial with a finite one against hyperparameter `key`.
std::string scatter_svg(const SearchRecord& s, size_t index, const ojson& def, const TrialEntry* best,
                        const Scale& y) {
  const std::string& key = s.keys[index];
  std::vector<const TrialEntry*> shown;
  std::vector<std::string> values;
  for (const auto& t : s.trials) {
    if (finite(t.metric) && value_of(t, key) != "-") {
      shown.push_back(&t);
      values.push_back(value_of(t, key));
    }
  }
  const Axis ax = make_axis(def, values);
  const double W = 440, H = 290, L = 62, R = 14, T = 14, B = 52;
  const double plot_w = W - L - R;
  const size_t n_cat = std::max<size_t>(1, ax.categories.size());
  const double band = plot_w / static_cast<double>(n_cat);
  auto px_number = [&](double x) { return L + ax.scale.frac(x) * plot_w; };
  auto px_category = [&](const std::string& v) {
    const auto it = std::find(ax.categories.begin(), ax.categories.end(), v);
    return L + (static_cast<double>(it - ax.categories.begin()) + 0.5) * band;
  };
  auto py = [&](double m) { return T + (1 - y.frac(m)) * (H - T - B); };
  std::string o = fmt::format("<svg id=\"scatter-{}\" class=\"scatter\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" "
                              "role=\"img\" aria-label=\"{} against {}\">\n",
                              index, W, H, W, H, esc_xml(s.metric), esc_xml(key));
  o += frame_and_y_ticks(W, H, L, R, T, B, y);
  auto xtick = [&](double x, const std::string& label, const std::string& title) {
    o += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", x, x, H - B, H - B + 4);
    o += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}{}</text>\n",
                     x, H - B + 15, esc_xml(label), title.empty() ? "" : "<title>" + esc_xml(title) + "</title>");
  };
  if (ax.category) {
    const size_t fit = std::max<size_t>(3, static_cast<size_t>(band / 6.5));
    for (const auto& c : ax.categories) {
      const std::string label = c.size() <= fit ? c : c.substr(0, fit - 1) + "~";
      xtick(px_category(c), label, label == c ? "" : c);
    }
  } else {
    for (double v : ax.scale.ticks()) {
      xtick(px_number(v), fmt::format("{:.4g}", v), "");
    }
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\">{}{}</text>\n", L + plot_w / 2,
                   H - 10, esc_xml(key), !ax.category && ax.scale.log ? " (log scale)" : "");
  o += fmt::format("<text x=\"14\" y=\"{}\" font-size=\"12\" text-anchor=\"middle\" transform=\"rotate(-90 14 {})\">{}{}, "
                   "{} is better</text>\n",
                   T + (H - T - B) / 2, T + (H - T - B) / 2, esc_xml(s.metric), y.log ? " (log scale)" : "",
                   s.maximize ? "higher" : "lower");
  // The best trial last, so it is drawn on top; trials in index order otherwise.
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < shown.size(); ++i) {
      const TrialEntry& t = *shown[i];
      const bool is_best = &t == best;
      if (is_best != (pass == 1)) {
        continue;
      }
      double x = 0.0;
      if (ax.category) {
        // spread the points of one value a little (by trial index) so equal metrics do not hide
        const double jitter = (static_cast<double>((t.k * 7) % 9) - 4.0) / 4.0 * std::min(band * 0.2, 12.0);
        x = px_category(values[i]) + jitter;
      } else {
        x = px_number(*number_of(values[i]));
      }
      o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{}\" fill=\"{}\" fill-opacity=\"0.8\"{}><title>{}"
                       "</title></circle>\n",
                       x, py(*t.metric), is_best ? 6 : 4, point_colour(s, t, is_best),
                       is_best ? " stroke=\"#000\"" : "",
                       esc_xml(fmt::format("trial {}: {} = {}; {} {}", t.k, key, values[i], s.metric,
                                           metric_text(t.metric))));
    }
  }
  return o + "</svg>\n";
}

// The learning curves of the best trials (TrialEntry::curve): the metric at each evaluation.
std::string curves_svg(const SearchRecord& s) {
  static const char* k_colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"};
  struct Curve {
    const TrialEntry* t;
    size_t rank;
    std::vector<std::pair<long, double>> points;
  };
  std::vector<Curve> curves;
  double x0 = INFINITY, x1 = -INFINITY, lo = INFINITY, hi = -INFINITY;
  for (size_t r = 0; r < s.ranking.size(); ++r) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[r])];
    Curve c{&t, r + 1, {}};
    for (const auto& p : t.curve) {
      if (std::isfinite(p.second)) {
        c.points.push_back(p);
        x0 = std::min(x0, static_cast<double>(p.first));
        x1 = std::max(x1, static_cast<double>(p.first));
        lo = std::min(lo, p.second);
        hi = std::max(hi, p.second);
      }
    }
    if (!c.points.empty()) {
      curves.push_back(std::move(c));
    }
  }
  if (curves.empty()) {
    return "<p>(no evaluations of the best trials to plot)</p>\n";
  }
  x1 = std::max(x1, x0 + 1);
  const Scale y = metric_scale(s, lo, hi);
  const double W = 860, H = 320, L = 70, R = 150, T = 20, B = 50;
  auto px = [&](double x) { return L + (x - x0) / (x1 - x0) * (W - L - R); };
  auto py = [&](double v) { return T + (1 - y.frac(v)) * (H - T - B); };
  std::string o = fmt::format("<svg id=\"curves-plot\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" role=\"img\" "
                              "aria-label=\"learning curves of the best trials\">\n",
                              W, H, W, H);
  o += frame_and_y_ticks(W, H, L, R, T, B, y);
  for (double v : x_ticks(x0, x1)) {
    const double x = px(v);
    o += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#999\"/>\n", x, x, H - B, H - B + 4);
    o += fmt::format("<text class=\"xtick\" x=\"{:.1f}\" y=\"{}\" font-size=\"11\" text-anchor=\"{}\">{:.0f}</text>\n", x,
                     H - B + 15, v == x0 ? "start" : v == x1 ? "end" : "middle", v);
  }
  o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">step; {} at each evaluation{}</text>\n",
                   L + (W - L - R) / 2, H - 6, esc_xml(s.metric), y.log ? " on a log scale" : "");
  for (size_t i = 0; i < curves.size(); ++i) {
    const Curve& c = curves[i];
    const char* colour = k_colours[(c.rank - 1) % std::size(k_colours)]; // by rank: the best is red
    std::string d;
    for (size_t j = 0; j < c.points.size(); ++j) {
      d += fmt::format("{}{:.1f},{:.1f} ", j ? "L" : "M", px(static_cast<double>(c.points[j].first)),
                       py(c.points[j].second));
    }
    o += fmt::format("<path class=\"curve\" d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\"/>\n", d, colour,
                     c.rank == 1 ? 2.5 : 1.5);
    if (c.points.size() <= 60) { // markers: a curve of one evaluation is a point
      for (const auto& p : c.points) {
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}</title></circle>\n",
                         px(static_cast<double>(p.first)), py(p.second), colour,
                         esc_xml(fmt::format("trial {}, step {}: {} {:.6g}", c.t->k, p.first, s.metric, p.second)));
      }
    }
    o += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"{}\">rank {}: trial {}</text>\n", W - R + 12,
                     T + 14 + 18 * static_cast<double>(i), colour, c.rank, c.t->k);
  }
  return o + "</svg>\n";
}

// The search section's facts as table rows: method, trials, metric, seed, space, rungs, tpe settings.
std::string facts_html(const SearchRecord& s, const ojson& spec) {
  auto row = [](const std::string& k, const std::string& v) {
    return fmt::format("<tr><th>{}</th><td>{}</td></tr>\n", esc_xml(k), v);
  };
  long finished = 0;
  for (const auto& t : s.trials) {
    finished += t.status == "complete" || t.status.rfind("failed", 0) == 0 ? 1 : 0;
  }
  std::string o = "<table class=\"facts\">\n";
  o += row("method", esc_xml(s.method));
  o += row("trials", esc_xml(fmt::format("{}{}", s.trial_count,
                                         s.complete ? "" : fmt::format(" ({} finished: incomplete)", finished))));
  o += row("metric", esc_xml(fmt::format("{} ({}: {} is better)", s.metric, direction(s),
                                         s.maximize ? "higher" : "lower")));
  o += row("experiment seed", fmt::format("{}", s.experiment_seed));
  const ojson* space = spec.is_object() && spec.contains("space") ? &spec["space"] : nullptr;
  for (const auto& key : s.keys) {
    std::string def = space && space->contains(key) ? (*space)[key].dump() : "";
    o += row("space", "<code>" + esc_xml(key) + "</code>" + (def.empty() ? "" : " " + esc_xml(def)));
  }
  if (s.method == "asha") {
    o += row("rungs (epochs)", esc_xml(rungs_text(s)));
    if (spec.is_object() && spec.contains("reduction")) {
      o += row("reduction", esc_xml(spec["reduction"].dump()));
    }
  }
  if (s.method == "tpe" && spec.is_object()) {
    for (const char* k : {"batch", "startup", "candidates"}) {
      if (spec.contains(k)) {
        o += row(k, esc_xml(spec[k].dump()));
      }
    }
  }
  return o + "</table>\n";
}

std::string best_html(const SearchRecord& s, const TrialEntry* b) {
  if (!b) {
    return "<p class=\"verdict bad\">best: none (no trial has a finite metric)</p>\n";
  }
  std::string o = fmt::format("<p class=\"verdict ok\">best: trial {} ({}): {} {}</p>\n<ul class=\"best\">\n", b->k,
                              esc_xml(b->name), esc_xml(s.metric), metric_text(b->metric));
  for (const auto& [k, v] : b->values) {
    o += fmt::format("<li><code>{}</code> = <code>{}</code></li>\n", esc_xml(k), esc_xml(v));
  }
  o += fmt::format("<li>{} {}, train_loss {}, {} steps{}, seed {}, sampler {}</li>\n</ul>\n", esc_xml(other_metric(s)),
                   metric_text(other_value(s, *b)), metric_text(b->train_loss), b->steps,
                   s.method == "asha" ? fmt::format(" ({} epochs, rung {})", b->epochs, b->rung) : "", b->seed,
                   esc_xml(b->sampler));
  return o;
}

std::string ranking_html(const SearchRecord& s, const TrialEntry* best) {
  std::string o = "<div class=\"scroll\"><table class=\"ranking\"><tr><th>rank</th><th>trial</th>";
  o += fmt::format("<th>{}</th><th>{}</th><th>train_loss</th><th>steps</th>", esc_xml(s.metric),
                   esc_xml(other_metric(s)));
  for (const auto& k : s.keys) {
    o += "<th>" + esc_xml(k) + "</th>";
  }
  o += "<th>seed</th><th>sampler</th><th>status</th></tr>\n";
  for (size_t i = 0; i < s.ranking.size(); ++i) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    o += fmt::format("<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                     &t == best ? " class=\"best\"" : "", i + 1, t.k, metric_text(t.metric),
                     metric_text(other_value(s, t)), metric_text(t.train_loss), t.steps);
    for (const auto& k : s.keys) {
      o += "<td><code>" + esc_xml(value_of(t, k)) + "</code></td>";
    }
    o += fmt::format("<td>{}</td><td>{}</td><td>{}</td></tr>\n", t.exists ? std::to_string(t.seed) : "-",
                     esc_xml(t.sampler.empty() ? "-" : t.sampler), esc_xml(status_text(s, t)));
  }
  return o + "</table></div>\n";
}

} // namespace

std::string render_leaderboard_markdown(const SearchRecord& s) {
  const TrialEntry* b = best_trial(s);
  std::string o = b ? fmt::format("### reprun search: best trial {}, {} {}", b->k, s.metric, metric_text(b->metric))
                    : std::string("### reprun search: no trial has a finite metric");
  o += fmt::format("\n\n{} search, {} trial{}{}, {} ({}), experiment seed {}", s.method, s.trial_count,
                   s.trial_count == 1 ? "" : "s",
                   s.complete ? "" : " (incomplete)", s.metric, direction(s), s.experiment_seed);
  if (s.method == "asha") {
    o += fmt::format("; rungs (epochs): {}", rungs_text(s));
  }
  o += "\n\n";
  if (b) {
    std::string values;
    for (const auto& [k, v] : b->values) {
      values += (values.empty() ? "" : ", ") + md_code(k, false) + " = " + md_code(v, false);
    }
    o += "**Best values:** " + values + "\n\n";
  }
  o += fmt::format("| rank | trial | {} | steps |", s.metric);
  for (const auto& k : s.keys) {
    o += fmt::format(" {} |", md_code(k, true));
  }
  o += " status |\n|---:|---:|---:|---:|";
  for (size_t i = 0; i < s.keys.size(); ++i) {
    o += "---|";
  }
  o += "---|\n";
  for (size_t i = 0; i < s.ranking.size() && i < k_markdown_rows; ++i) {
    const TrialEntry& t = s.trials[static_cast<size_t>(s.ranking[i])];
    o += fmt::format("| {} | {} | {} | {} |", i + 1, t.k, metric_text(t.metric), t.steps);
    for (const auto& k : s.keys) {
      o += fmt::format(" {} |", md_code(value_of(t, k), true));
    }
    o += fmt::format(" {} |\n", esc_md(status_text(s, t)));
  }
  if (s.ranking.size() > k_markdown_rows) {
    o += fmt::format("\n{} more trials: leaderboard.txt, leaderboard.json\n", s.ranking.size() - k_markdown_rows);
  }
  return o;
}

std::string render_leaderboard_html(const SearchRecord& s) {
  const ojson spec = ojson::parse(s.spec_json, nullptr, false);
  const TrialEntry* b = best_trial(s);
  std::string body = best_html(s, b);
  body += "<h2>Search</h2>\n" + facts_html(s, spec);
  body += fmt::format("<h2>Trials, best first</h2>\n<p>Ranked by {} ({}){}; ties by the lower trial index. A trial "
                      "without a finite metric shows &quot;-&quot; and is ranked last.</p>\n",
                      esc_xml(s.metric), direction(s), s.method == "asha" ? ", the higher rung first" : "");
  body += ranking_html(s, b);
  body += fmt::format("<h2>{} against each hyperparameter</h2>\n", esc_xml(s.metric));
  double lo = INFINITY, hi = -INFINITY;
  long unplotted = 0;
  for (const auto& t : s.trials) {
    if (finite(t.metric)) {
      lo = std::min(lo, *t.metric);
      hi = std::max(hi, *t.metric);
    } else {
      ++unplotted;
    }
  }
  if (!std::isfinite(lo)) {
    body += "<p>(no trial has a finite metric to plot)</p>\n";
  } else {
    body += scatter_legend(s, b);
    if (s.method == "asha") {
      body += "<p>Each trial's metric is the one at the last rung it reached.</p>\n";
    }
    if (unplotted > 0) {
      body += fmt::format("<p>{} trial{} without a finite metric {} not plotted.</p>\n", unplotted,
                          unplotted == 1 ? "" : "s", unplotted == 1 ? "is" : "are");
    }
    const ojson* space = spec.is_object() && spec.contains("space") ? &spec["space"] : nullptr;
    body += "<div class=\"panels\">\n";
    for (size_t i = 0; i < s.keys.size(); ++i) {
      const ojson def = space && space->contains(s.keys[i]) ? (*space)[s.keys[i]] : ojson();
      body += scatter_svg(s, i, def, b, metric_scale(s, lo, hi));
    }
    body += "</div>\n";
  }
  body += fmt::format("<h2>Learning curves of the best trials (up to {})</h2>\n", k_curve_trials);
  body += curves_svg(s);
  const std::string css = ".panels{display:flex;flex-wrap:wrap;gap:8px}.panels svg{flex:0 1 440px;min-width:0}"
                          "tr.best{background:#fff4e0}.facts th{text-align:left}.legend .key{margin-right:1.2em;"
                          "white-space:nowrap}ul.best{margin-top:0}";
  return html_page(fmt::format("reprun search: {}, {} trial{}", s.method, s.trial_count, s.trial_count == 1 ? "" : "s"), body, css);
}

namespace {

// The parts of a search comparison below its verdict, for both markups: how the searches differ,
// then the first differing trial's differences (its run diff follows them).
struct DiffPart {
  std::string title;
  std::vector<std::string> items;
};

std::vector<DiffPart> search_diff_parts(const SearchDiff& d) {
  std::vector<DiffPart> parts;
  if (!d.differences.empty()) {
    parts.push_back({"The searches differ", d.differences});
  }
  if (d.trial >= 0) {
    DiffPart p{fmt::format("Trial {}, the first that differs", d.trial), d.trial_differences};
    if (p.items.empty()) {
      p.items.push_back("the same values and results; its runs differ (below)");
    }
    parts.push_back(std::move(p));
  }
  return parts;
}

} // namespace

std::string render_search_diff_markdown(const SearchDiff& d) {
  std::string o = fmt::format("### reprun diff (searches) {} {}\n\n", d.identical ? "✅" : "❌", esc_md(d.verdict));
  o += fmt::format("- **A**: {}\n- **B**: {}\n- **trials compared**: {}\n\n", md_code(d.a, false), md_code(d.b, false),
                   d.trials_compared);
  for (const auto& part : search_diff_parts(d)) {
    o += fmt::format("**{}:**\n\n", part.title);
    for (const auto& x : part.items) {
      o += "- " + esc_md(x) + "\n";
    }
    o += "\n";
  }
  if (d.run_diff) {
    o += diff_markdown(*d.run_diff, fmt::format("#### trial {}: run diff", d.trial), nullptr);
  }
  return o;
}

std::string render_search_diff_html(const SearchDiff& d) {
  std::string body = fmt::format("<p class=\"verdict {}\">{}</p>\n", d.identical ? "ok" : "bad", esc_xml(d.verdict));
  body += fmt::format("<p>A: <code>{}</code><br>B: <code>{}</code><br>trials compared: {}</p>\n", esc_xml(d.a),
                      esc_xml(d.b), d.trials_compared);
  for (const auto& part : search_diff_parts(d)) {
    body += fmt::format("<h2>{}</h2>\n<ul>\n", esc_xml(part.title));
    for (const auto& x : part.items) {
      body += "<li>" + esc_xml(x) + "</li>\n";
    }
    body += "</ul>\n";
  }
  if (d.run_diff) {
    body += html_section(*d.run_diff, fmt::format("trial {}: run diff", d.trial), nullptr);
  }
  return html_page("reprun diff (searches)", body);
}

} // namespace reprun
