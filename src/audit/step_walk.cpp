// The walk of two step logs: see step_walk.hpp.
#include "audit/step_walk.hpp"

#include "reprun/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <limits>

namespace reprun {

namespace {

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof(double)) == 0; }

class Comparator {
public:
  Comparator(const DiffOptions& o, FloatFormat loss) : m_opt(o), m_loss(loss) {}
  FloatFormat loss_format() const { return m_loss; }
  bool loss_match(double x, double y) const { return values_match(x, y, m_loss); }
  bool values_match(double x, double y, FloatFormat f = FloatFormat::float64) const {
    if (!m_opt.tolerance()) {
      return same_bits(x, y);
    }
    if (std::isnan(x) || std::isnan(y)) {
      return false;
    }
    if (x == y) {
      return true; // includes +0.0 / -0.0
    }
    bool ok = false;
    if (m_opt.rtol || m_opt.atol) {
      ok = ok || std::fabs(x - y) <= m_opt.atol.value_or(0.0) + m_opt.rtol.value_or(0.0) * std::fabs(y);
    }
    if (m_opt.max_ulps) {
      ok = ok || ulp_distance(x, y, f) <= *m_opt.max_ulps;
    }
    return ok;
  }
  // Tensors: checksums decide in bitwise mode; norms within tolerance in tolerance mode
  // (checksums are then informational).
  bool tensor_match(const TensorValue& x, const TensorValue& y) const {
    if (!m_opt.tolerance()) {
      return x.checksum == y.checksum && x.has_norm == y.has_norm && (!x.has_norm || same_bits(x.norm, y.norm));
    }
    if (x.has_norm && y.has_norm) {
      return values_match(x.norm, y.norm);
    }
    return x.checksum == y.checksum;
  }
  const DiffOptions& opt() const { return m_opt; }

private:
  const DiffOptions& m_opt;
  FloatFormat m_loss; // the losses' format: their ULPs are counted in it
};

// How many leading bytes of a and b (n each) are equal: memcmp a page at a time, then the page
// that differs byte by byte.
size_t common_prefix(const char* a, const char* b, size_t n) {
  constexpr size_t k_chunk = 4096;
  size_t i = 0;
  while (i < n) {
    const size_t k = std::min(k_chunk, n - i);
    if (std::memcmp(a + i, b + i, k) != 0) {
      while (a[i] == b[i]) {
        ++i;
      }
      return i;
    }
    i += k;
  }
  return n;
}

// Step number of a line, checking that steps strictly increase.
// `known`: the step the reader's index holds (-1: none).
long checked_step(std::string_view line, const StepLogReader& r, long& prev, long known = -1) {
  long s = known >= 0 ? known : r.taken_step(); // found in a line ending in '}'
  if (s < 0 && ((s = quick_step(line)) < 0 || line.empty() || line.back() != '}')) {
    s = parse_step_line(line, r.path(), r.lineno()).step; // throws with file:line when invalid
  }
  if (s <= prev) {
    throw Error(fmt::format("{}:{}", r.path(), r.lineno()),
                fmt::format("step {} after step {} (duplicate or decreasing step)", s, prev));
  }
  prev = s;
  return s;
}

// The loss of the line `r` took last: as its reader's index holds it, else parsed here.
bool line_loss(std::string_view line, const StepLogReader& r, double& loss) {
  if (r.taken_loss(loss) || quick_loss(line, loss)) {
    return true;
  }
  ParsedStep p = parse_step_line(line, r.path(), r.lineno());
  loss = p.loss;
  return p.has_loss;
}

// The built-in trainer's step-0 record: the weights before any update, with no loss and no batch. A
// program under `reprun exec` may number its steps from 0; a step 0 with a loss or a batch is a
// training step like any other.
bool is_initial_state(const ParsedStep& p) { return p.step == 0 && !p.has_loss && !p.has_batch; }

// What one side recorded and the other did not (different trace levels): left out of the
// comparison and said in the report.
struct OneSided {
  bool tensors_a = false, tensors_b = false; // tensors (trace weights or full) on one side only
  bool trace_a = false, trace_b = false;     // forward/backward entries (trace full) on one side only
  bool initial_a = false, initial_b = false; // the step-0 record (initial weights)
};

// Compares two parsed records of the same step; fills `d` and returns true when they diverge.
// What only one of them recorded is not compared (noted in `one`).
bool records_diverge(const ParsedStep& pa, const ParsedStep& pb, const Comparator& cmp, Divergence& d,
                     OneSided& one) {
  d.step = pa.step;
  d.epoch = pa.has_epoch ? pa.epoch : -1;
  d.has_loss = pa.has_loss && pb.has_loss;
  if (d.has_loss) {
    d.loss_a = pa.loss;
    d.loss_b = pb.loss;
    d.loss_format = cmp.loss_format();
    d.loss_ulps = ulp_distance(pa.loss, pb.loss, d.loss_format);
    double den = std::max(std::fabs(pa.loss), std::fabs(pb.loss));
    d.loss_rel = den > 0 ? std::fabs(pa.loss - pb.loss) / den : 0.0;
  }
  bool loss_differs = pa.has_loss != pb.has_loss || (d.has_loss && !cmp.loss_match(pa.loss, pb.loss));
  bool batch_differs = pa.has_batch && pb.has_batch && pa.batch != pb.batch;
  // Tensors in model order (the order of A's record).
  d.tensors.clear();
  d.first_tensor.clear();
  bool tensors_differ = false;
  const bool tensors_both = pa.tensors.empty() == pb.tensors.empty();
  one.tensors_a |= !tensors_both && !pa.tensors.empty();
  one.tensors_b |= !tensors_both && !pb.tensors.empty();
  if (tensors_both) {
    for (const auto& [name, va] : pa.tensors) {
      const TensorValue* vb = nullptr;
      for (const auto& [nb, v] : pb.tensors) {
        if (nb == name) {
          vb = &v;
          break;
        }
      }
      if (!vb) {
        tensors_differ = true;
        if (d.first_tensor.empty()) {
          d.first_tensor = name + " (missing in B)";
        }
        continue;
      }
      if (!cmp.tensor_match(va, *vb)) {
        tensors_differ = true;
        if (d.first_tensor.empty()) {
          d.first_tensor = name;
        }
        TensorDelta t;
        t.name = name;
        t.has_norm = va.has_norm && vb->has_norm;
        if (t.has_norm) {
          t.norm_a = va.norm;
          t.norm_b = vb->norm;
          double den = std::max(std::fabs(va.norm), std::fabs(vb->norm));
          t.rel = den > 0 ? std::fabs(va.norm - vb->norm) / den : 0.0;
        }
        d.tensors.push_back(t);
      }
    }
  }
  if (tensors_both && pb.tensors.size() != pa.tensors.size() && d.first_tensor.empty()) {
    tensors_differ = true;
    d.first_tensor = "(tensor lists differ)";
  }
  // Tensors one record has and the other not: the models differ (a layer or a bias added or
  // removed), said before any value.
  std::string models;
  if (tensors_both) {
    auto only = [](const auto& x, const auto& y) {
      std::vector<std::string> names;
      for (const auto& [name, v] : x) {
        if (std::none_of(y.begin(), y.end(), [&](const auto& e) { return e.first == name; })) {
          names.push_back(name);
        }
      }
      return names;
    };
    const std::vector<std::string> a_only = only(pa.tensors, pb.tensors), b_only = only(pb.tensors, pa.tensors);
    auto listed = [](const std::vector<std::string>& v) {
      std::string s;
      for (size_t i = 0; i < v.size() && i < 3; ++i) {
        s += (i ? ", " : "") + v[i];
      }
      return v.size() > 3 ? fmt::format("{} and {} more", s, v.size() - 3) : s;
    };
    if (!a_only.empty() || !b_only.empty()) {
      models = "the models differ (" +
               (a_only.empty() ? "" : "recorded in A only: " + listed(a_only)) +
               (a_only.empty() || b_only.empty() ? "" : "; ") +
               (b_only.empty() ? "" : "recorded in B only: " + listed(b_only)) + "); ";
    }
  }
  bool metrics_differ = pa.metrics.size() != pb.metrics.size();
  for (size_t i = 0; !metrics_differ && i < pa.metrics.size(); ++i) {
    metrics_differ = pa.metrics[i].first != pb.metrics[i].first ||
                     !cmp.values_match(pa.metrics[i].second, pb.metrics[i].second);
  }
  // Trace entries: checked only in bitwise mode (checksums).
  d.trace_phase.clear();
  d.trace_entry.clear();
  bool traced = !pa.forward.empty() && !pb.forward.empty();
  one.trace_a |= !pa.forward.empty() && pb.forward.empty();
  one.trace_b |= pa.forward.empty() && !pb.forward.empty();
  if (traced) {
    auto first_diff = [](const auto& x, const auto& y) -> std::string {
      for (size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
        if (x[i] != y[i]) {
          return x[i].first;
        }
      }
      return x.size() != y.size() ? std::string("(entry lists differ)") : std::string();
    };
    if (!cmp.opt().tolerance()) {
      d.trace_entry = first_diff(pa.forward, pb.forward);
      if (!d.trace_entry.empty()) {
        d.trace_phase = "forward";
      } else if (!(d.trace_entry = first_diff(pa.backward, pb.backward)).empty()) {
        d.trace_phase = "backward";
      } else if (tensors_differ) {
        d.trace_phase = "update";
        d.trace_entry = d.first_tensor;
      }
    }
  }
  bool trace_differs = !d.trace_phase.empty();
  // Step 0 as the initial state on one side and as a training step on the other: the logs number
  // their steps differently.
  const bool initial_a = is_initial_state(pa), initial_b = is_initial_state(pb);
  if (!(loss_differs || batch_differs || tensors_differ || metrics_differ || trace_differs ||
        initial_a != initial_b || (pa.has_epoch && pb.has_epoch && pa.epoch != pb.epoch))) {
    return false;
  }
  d.found = true;
  if (initial_a != initial_b) {
    d.kind = DivergenceKind::steps_differ;
    d.detail = fmt::format("step 0 is the initial state in {} (no loss, no batch) but a training step in {}",
                           initial_a ? "A" : "B", initial_a ? "B" : "A");
    return true;
  }
  // The batch is compared first, at step 0 too: only a step 0 without loss and batch is the
  // initial state.
  if (initial_a) {
    d.kind = DivergenceKind::initial_state;
    d.detail = "the weights differ before any update";
  } else if (batch_differs || (pa.has_epoch && pb.has_epoch && pa.epoch != pb.epoch)) {
    d.kind = DivergenceKind::data_order;
    d.detail = fmt::format("the batch fingerprint differs ({} vs {})", pa.batch, pb.batch);
  } else {
    d.kind = DivergenceKind::computation;
    // "same batch" only when both records carry one (an automatic exec log has none).
    const std::string same = models + (pa.has_batch && pb.has_batch ? "same batch; " : "");
    if (!d.trace_phase.empty()) {
      d.detail = fmt::format("{}first difference in {} at {}", same, d.trace_phase, d.trace_entry);
    } else if (tensors_differ && !models.empty()) {
      // The tensors both have: the first that differs, if any ("the models differ (...); same batch;
      // 0.weight differs and the loss differs").
      const std::string common = d.tensors.empty() ? "" : d.tensors.front().name + " differs";
      d.detail = same + common +
                 (loss_differs ? (common.empty() ? "the loss differs" : " and the loss differs") : "");
      if (common.empty() && !loss_differs) {
        d.detail = d.detail.substr(0, d.detail.size() - 2); // "...); same batch" without its "; "
      }
    } else if (tensors_differ) {
      d.detail = fmt::format("{}{} differs{}", same, d.first_tensor, loss_differs ? " and the loss differs" : "");
    } else if (loss_differs) {
      d.detail = same + "the loss differs";
    } else {
      d.detail = same + "a metric differs";
    }
  }
  if (loss_differs) {
    d.loss_differs_from = pa.step;
  }
  return true;
}

// Both step logs, line by line: identical lines compared as bytes, the first differing record
// classified, then how the loss gap grows after it.
class StepWalk {
public:
  StepWalk(DiffResult& r, const DiffOptions& opt, StepLogReader& ra, StepLogReader& rb)
      : m_r(r), m_opt(opt), m_cmp(opt, loss_format(r.a.manifest, r.b.manifest)), m_ra(ra), m_rb(rb) {}

  void run() {
    std::string_view la, lb;
    bool ha = m_ra.next(la);
    bool hb = m_rb.next(lb);
    skip_unmatched_start(ha, la, hb, lb);
    bool equal = ha && hb && la == lb;
    while (ha && hb) {
      compare(la, lb, equal, m_have_x ? m_step_x : -1); // A's step, when losses_differ parsed it
      report_progress();
      if (!m_r.divergence.found) {
        take_equal_run();
      } else {
        follow_known();
      }
      ha = m_ra.next(la);
      if (!ha) {
        hb = m_rb.next(lb);
        break;
      }
      // Before the divergence the common case is B's next line being A's: taken without searching
      // B for its end. After it, lines mostly differ: B's next line, then the two compared.
      if (m_r.divergence.found) {
        hb = m_rb.next(lb);
        equal = hb && !losses_differ(la) && la == lb;
      } else if ((equal = m_rb.next_if(la))) {
        lb = la;
      } else {
        hb = m_rb.next(lb);
      }
    }
    finish_longer(ha, la, hb, lb);
    Divergence& d = m_r.divergence;
    if (m_have_last && (m_r.growth.empty() || m_r.growth.back().step != m_last_common.step)) {
      m_r.growth.push_back(m_last_common);
    }
    if (!m_r.growth.empty()) {
      m_r.growth.back().is_end = true;
    }
    m_r.a.partial_tail = m_ra.partial_tail();
    m_r.b.partial_tail = m_rb.partial_tail();
    if (!d.found && m_r.a.lines - m_one.initial_a != m_r.b.lines - m_one.initial_b) {
      ended_early();
    }
    note_one_sided();
  }

  // True when part of what one side recorded had no counterpart (different trace levels).
  bool one_sided() const {
    return m_one.tensors_a || m_one.tensors_b || m_one.trace_a || m_one.trace_b || m_one.initial_a ||
           m_one.initial_b;
  }

private:
  // A step-0 record of the initial state (initial weights: trace weights or full) on one side only
  // is not compared: the other side's trace level ("loss") does not write one. A step 0 with a loss
  // or a batch is a training step: one log starting at 0 and the other at 1 is a real difference.
  void skip_unmatched_start(bool& ha, std::string_view& la, bool& hb, std::string_view& lb) {
    if (!ha || !hb) {
      return;
    }
    const long sa = checked_step(la, m_ra, m_prev_a);
    const long sb = checked_step(lb, m_rb, m_prev_b);
    m_prev_a = m_prev_b = -1; // compare() checks them again
    auto initial = [](std::string_view line, const StepLogReader& r) {
      return is_initial_state(parse_step_line(line, r.path(), r.lineno()));
    };
    if (sa == 0 && sb > 0 && initial(la, m_ra)) {
      m_one.initial_a = true;
      m_prev_a = 0;
      ha = m_ra.next(la);
    } else if (sb == 0 && sa > 0 && initial(lb, m_rb)) {
      m_one.initial_b = true;
      m_prev_b = 0;
      hb = m_rb.next(lb);
    }
  }

  void note_one_sided() {
    auto side = [](bool a) { return a ? "A" : "B"; };
    if (m_one.initial_a || m_one.initial_b) {
      m_r.notes.push_back(fmt::format("not compared: the step-0 record (initial weights) is in {} only (its trace "
                                      "level records it, the other's does not)",
                                      side(m_one.initial_a)));
    }
    if (m_one.tensors_a || m_one.tensors_b) {
      m_r.notes.push_back(fmt::format("not compared: {} recorded tensor checksums and norms, {} did not (trace levels "
                                      "differ); loss, batch and epoch were compared",
                                      m_one.tensors_a ? "A" : "B", m_one.tensors_a ? "B" : "A"));
    }
    if (m_one.trace_a || m_one.trace_b) {
      m_r.notes.push_back(fmt::format("not compared: {} recorded forward and backward trace entries (trace full), "
                                      "{} did not",
                                      m_one.trace_a ? "A" : "B", m_one.trace_a ? "B" : "A"));
    }
  }

  // The rest of the longer log is checked too (a garbage line there is still an error).
  void finish_longer(bool ha, std::string_view la, bool hb, std::string_view lb) {
    for (bool more = ha; more; more = m_ra.next(la)) {
      m_r.a.last_step = checked_step(la, m_ra, m_prev_a);
    }
    for (bool more = hb; more; more = m_rb.next(lb)) {
      m_r.b.last_step = checked_step(lb, m_rb, m_prev_b);
    }
    m_r.a.lines = m_ra.lineno();
    m_r.b.lines = m_rb.lineno();
  }

  // Before the divergence: the lines that follow in both buffers as the same bytes, compared as
  // one run (one memcmp, B's lines neither searched for nor compared one by one) and each checked
  // as compare() checks an equal pair. Stops at the first byte that differs, at the end of either
  // buffer (the line that goes on in the next block is the loop's), at a digest limit, and in
  // tolerance mode before a line holding NaN (compared by value there).
  // B's lines as its read-ahead thread found them, when it has one (the same bytes: the same
  // lines and steps), else A's searched here.
  void take_equal_run() {
    const std::string_view a = m_ra.buffered(), b = m_rb.buffered();
    const size_t same_bytes = common_prefix(a.data(), b.data(), std::min(a.size(), b.size()));
    const long room = std::min(m_ra.lines_to_limit(), m_rb.lines_to_limit());
    const StepLogReader::Known known = m_rb.known();
    const char* p = a.data();
    const char* const end = p + same_bytes;
    long lines = 0;
    // Lines whose step B's thread found, following the last, that neither add a loss-series point
    // nor mark progress, go by counted: what compare() does for each equal line is done once for
    // the batch. Any other line is taken and compared alone (an error then names its line).
    const bool batches = known.count > 0 && !m_opt.tolerance();
    const char* batch_start = p;
    long batch = 0;
    auto flush = [&] {
      if (batch > 0) {
        m_ra.take_lines(static_cast<size_t>(p - batch_start), batch);
        m_r.steps_compared += batch;
        m_prev_b = m_prev_a;
        m_r.a.last_step = m_r.b.last_step = m_prev_a;
        batch = 0;
      }
    };
    while (lines < room) {
      const char* nl = nullptr;
      long step = -1;
      if (known.count > 0) {
        if (static_cast<size_t>(lines) == known.count) {
          break;
        }
        const LineIndex::Line& l = known.lines[lines];
        const size_t at = static_cast<size_t>(known.base + l.end - b.data());
        if (at >= same_bytes) {
          break;
        }
        nl = a.data() + at;
        step = l.step;
        const long lineno = m_ra.lineno() + batch + 1;
        if (batches && step > m_prev_a && lineno < m_next_series && (lineno & k_progress_lines) != 0) {
          m_prev_a = step;
          ++batch;
          ++lines;
          p = nl + 1;
          continue;
        }
        flush();
      } else if (!(nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p))))) {
        break;
      }
      const std::string_view line(p, static_cast<size_t>(nl - p));
      if (m_opt.tolerance() && line.find("NaN") != std::string_view::npos) {
        break;
      }
      m_ra.take_lines(line.size() + 1, 1);
      ++lines;
      p = batch_start = nl + 1;
      compare(line, line, true, step);
      report_progress(static_cast<uint64_t>(p - a.data())); // B's lines of this run, taken at its end
    }
    flush();
    m_rb.take_lines(static_cast<size_t>(p - a.data()), lines);
  }

  // After the divergence, with B's line just taken: true when its loss, as B's index holds it, is
  // not A's (A's, from A's index or parsed here, kept for follow_gap): the lines differ, told
  // without reading B's bytes, which are in the other core's cache.
  bool losses_differ(std::string_view la) {
    double y = 0;
    if (!m_rb.taken_loss(y)) {
      return false;
    }
    m_step_x = -1;
    m_have_x = m_ra.taken_loss(m_x) ? (m_step_x = m_ra.taken_step(), true)
                                    : quick_step_loss(la, m_step_x, m_x) || quick_loss(la, m_x);
    if (!m_have_x) {
      return false;
    }
    uint64_t bx = 0, by = 0;
    std::memcpy(&bx, &m_x, sizeof bx);
    std::memcpy(&by, &y, sizeof by);
    return bx != by;
  }

  // `equal`: the two lines are the same bytes.
  // `known_step`: A's step as B's read-ahead thread found it in the same bytes (-1: none).
  void compare(std::string_view la, std::string_view lb, bool equal, long known_step = -1) {
    ++m_r.steps_compared;
    // In tolerance mode NaN never matches, not even itself: such lines are compared by value.
    const bool same = equal && !(m_opt.tolerance() && la.find("NaN") != std::string_view::npos);
    const long sa = checked_step(la, m_ra, m_prev_a, known_step);
    const long sb = same ? sa : checked_step(lb, m_rb, m_prev_b);
    if (same) {
      m_prev_b = sa;
    }
    m_r.a.last_step = sa;
    m_r.b.last_step = sb;
    record_loss_series(la, lb, sa, same);
    if (m_r.divergence.found) {
      follow_gap(la, lb, sa, sb, same);
    } else if (!same) {
      first_divergence(la, lb, sa, sb);
      if (m_r.divergence.found) {
        m_ra.want_losses(); // two losses a line from now on, found where each log is read
        m_rb.want_losses();
      }
    }
  }

  // Loss series for plots, decimated so it never holds more than 4096 points: A's lines L with
  // (L - 1) % m_stride == 0, found by counting rather than dividing on every line.
  void record_loss_series(std::string_view la, std::string_view lb, long sa, bool same) {
    const long line = m_ra.lineno();
    if (line < m_next_series) {
      return;
    }
    m_next_series = line + m_stride;
    double x = 0, y = 0;
    if (!quick_loss(la, x) || !(same ? (y = x, true) : quick_loss(lb, y))) {
      return;
    }
    auto& series = m_r.loss_series;
    series.push_back({sa, {x, y}});
    if (series.size() > 4096) {
      std::vector<std::pair<long, std::pair<double, double>>> half;
      for (size_t i = 0; i < series.size(); i += 2) {
        half.push_back(series[i]);
      }
      series.swap(half);
      m_stride *= 2;
      m_next_series = (line - 1) % m_stride == 0 ? line + m_stride : line + m_stride / 2;
    }
  }

  // After the divergence: where the loss first differs, and how the gap grows (1, 10, 100, ...
  // steps after it).
  void follow_gap(std::string_view la, std::string_view lb, long sa, long sb, bool same) {
    double x = 0, y = 0;
    const bool hx = m_have_x ? (x = m_x, true) : line_loss(la, m_ra, x);
    m_have_x = false;
    const bool hy = same ? (y = x, hx) : line_loss(lb, m_rb, y);
    if (hx && hy && sa == sb) {
      gap_at(sa, x, y);
    }
  }

  // A step both logs hold after the divergence, with losses x (A) and y (B).
  void gap_at(long sa, double x, double y) {
    Divergence& d = m_r.divergence;
    if (d.loss_differs_from < 0 && !m_cmp.loss_match(x, y)) {
      d.loss_differs_from = sa;
    }
    m_last_common = {sa, x, y, std::fabs(x - y), true};
    m_have_last = true;
    note_peak(m_last_common);
    if (sa - d.step >= m_next_gap) {
      m_r.growth.push_back({sa, x, y, std::fabs(x - y), false});
      m_next_gap = m_next_gap == 0 ? 1 : m_next_gap * 10;
    }
  }

  // After the divergence: the lines that follow in both buffers whose steps and losses both
  // readers' indexes hold (B's read-ahead thread found them, A's reader in its own loop), taken as
  // counted: what compare() does for such a pair, without the lines' bytes. Stops before a line
  // either index does not know the step or loss of, a step that does not increase, a loss-series
  // point, a progress mark and a digest limit: compare() takes that one.
  void follow_known() {
    const StepLogReader::Known ka = m_ra.known(), kb = m_rb.known();
    const long line = m_ra.lineno();
    const long n = std::min({static_cast<long>(std::min(ka.count, kb.count)), m_ra.lines_to_limit(),
                             m_rb.lines_to_limit(), m_next_series - line - 1,
                             ((line | k_progress_lines) + 1) - line - 1});
    long k = 0;
    for (; k < n; ++k) {
      const LineIndex::Line &a = ka.lines[k], &b = kb.lines[k];
      if (!a.has_loss || !b.has_loss || a.step <= m_prev_a || b.step <= m_prev_b) {
        break; // not known (-1), or not increasing: compare() says what is wrong with it
      }
      m_prev_a = a.step;
      m_prev_b = b.step;
      if (a.step == b.step) {
        gap_at(a.step, a.loss, b.loss);
      }
    }
    if (k == 0) {
      return;
    }
    m_ra.take_known(k);
    m_rb.take_known(k);
    m_r.steps_compared += k;
    m_r.a.last_step = m_prev_a;
    m_r.b.last_step = m_prev_b;
  }

  // The peak gap: the first step with the largest |diff| (NaN gaps cannot be ranked).
  void note_peak(const GapPoint& g) {
    if (!std::isnan(g.abs_diff) && (!m_r.peak || g.abs_diff > m_r.peak->abs_diff)) {
      m_r.peak = g;
      m_r.peak->is_end = false;
    }
  }

  void first_divergence(std::string_view la, std::string_view lb, long sa, long sb) {
    Divergence& d = m_r.divergence;
    if (sa != sb) {
      d.found = true;
      d.step = std::min(sa, sb);
      d.line = m_ra.lineno();
      d.kind = DivergenceKind::steps_differ;
      d.detail = fmt::format("line {} holds step {} in A but step {} in B", m_ra.lineno(), sa, sb);
      return;
    }
    ParsedStep pa = parse_step_line(la, m_ra.path(), m_ra.lineno());
    ParsedStep pb = parse_step_line(lb, m_rb.path(), m_rb.lineno());
    if (!records_diverge(pa, pb, m_cmp, d, m_one)) {
      return;
    }
    d.line = m_ra.lineno();
    if (d.has_loss) {
      m_r.growth.push_back({sa, d.loss_a, d.loss_b, std::fabs(d.loss_a - d.loss_b), false});
      m_last_common = m_r.growth.back();
      m_have_last = true;
      note_peak(m_last_common);
    }
    m_next_gap = 1;
    if (d.kind == DivergenceKind::computation && m_ra.lineno() == 1) {
      m_r.notes.push_back(pa.step > 0 ? "the logs have no step-0 record, so initial weights cannot be told apart from "
                                        "computation"
                                      : "the logs' step 0 is a training step (it has a loss or a batch), so initial "
                                        "weights cannot be told apart from computation");
    }
  }

  void ended_early() {
    Divergence& d = m_r.divergence;
    const RunSide &a = m_r.a, &b = m_r.b;
    // Records compared: a step-0 record on one side only does not count.
    const long na = a.lines - m_one.initial_a, nb = b.lines - m_one.initial_b;
    const bool a_short = na < nb;
    d.found = true;
    d.kind = DivergenceKind::ended_early;
    d.step = (a_short ? m_prev_a : m_prev_b) + 1;
    d.line = std::min(a.lines, b.lines) + 1;
    d.detail = fmt::format("{} stops after {} records, {} has {}; statuses: A {}, B {}", a_short ? "A" : "B",
                           std::min(na, nb), a_short ? "B" : "A", std::max(na, nb),
                           a.status.empty() ? "(bare log)" : a.status, b.status.empty() ? "(bare log)" : b.status);
  }

  // A progress report every 65,536 lines of A; `b_pending`: bytes of B compared but not taken yet.
  static constexpr long k_progress_lines = (1 << 16) - 1;
  void report_progress(uint64_t b_pending = 0) {
    if ((m_ra.lineno() & k_progress_lines) == 0 && m_opt.progress) {
      m_opt.progress(m_ra.offset() + m_rb.offset() + b_pending, m_ra.size() + m_rb.size());
    }
  }

  DiffResult& m_r;
  const DiffOptions& m_opt;
  Comparator m_cmp;
  StepLogReader &m_ra, &m_rb;
  long m_prev_a = -1, m_prev_b = -1;
  long m_stride = 1;
  long m_next_series = 0; // A's next line that may add a point to the loss series
  long m_next_gap = 0; // next step offset (1, 10, 100, ...) to record after the divergence
  GapPoint m_last_common;
  bool m_have_last = false;
  bool m_have_x = false; // m_x: the loss of A's line, parsed by losses_differ for follow_gap
  double m_x = 0;
  long m_step_x = -1;     // and its step, when it was parsed with it (-1: not)
  OneSided m_one;
};

} // namespace

bool walk_steps(DiffResult& r, const DiffOptions& opt, StepLogReader& ra, StepLogReader& rb) {
  StepWalk walk(r, opt, ra, rb);
  walk.run();
  return walk.one_sided();
}

} // namespace reprun
