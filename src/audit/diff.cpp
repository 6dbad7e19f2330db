// diff_runs: stream both step logs, compare identical lines as bytes, parse only the lines that
// differ, classify the first divergence, and follow how the gap grows.
#include "reprun/audit/diff.hpp"

#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/record/steplog.hpp"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

namespace reprun {

namespace fs = std::filesystem;

uint64_t ulp_distance(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) {
    return std::numeric_limits<uint64_t>::max();
  }
  auto ordered = [](double x) {
    int64_t i;
    std::memcpy(&i, &x, sizeof(i));
    // Map the sign-magnitude bit pattern onto a monotonic integer line (+0 and -0 both to 0).
    return i < 0 ? -(i & std::numeric_limits<int64_t>::max()) : i;
  };
  int64_t ia = ordered(a), ib = ordered(b);
  return ia > ib ? static_cast<uint64_t>(ia) - static_cast<uint64_t>(ib)
                 : static_cast<uint64_t>(ib) - static_cast<uint64_t>(ia);
}

const char* divergence_kind_name(DivergenceKind k) {
  switch (k) {
  case DivergenceKind::none:
    return "";
  case DivergenceKind::data_order:
    return "data order";
  case DivergenceKind::initial_state:
    return "initial state";
  case DivergenceKind::computation:
    return "computation";
  case DivergenceKind::ended_early:
    return "run ended early";
  case DivergenceKind::steps_differ:
    return "steps differ";
  }
  return "";
}

bool localizable(DivergenceKind k) {
  return k == DivergenceKind::data_order || k == DivergenceKind::initial_state || k == DivergenceKind::computation;
}

long DiffResult::material_meta_count() const {
  long n = 0;
  for (const auto& m : meta) {
    n += m.kind == MetaDelta::Kind::material ? 1 : 0;
  }
  return n;
}

namespace {

void open_side(const std::string& path, RunSide& side) {
  side.label = path;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    side.is_run_dir = true;
    RunDir run = RunDir::open(path);
    side.manifest = run.read_manifest();
    side.summary = run.read_summary();
    side.status = side.summary.value("status", "unknown");
    side.steps_path = run.existing_file(RunFile::steps);
    return;
  }
  if (!fs::exists(path, ec)) {
    throw Error(path, "no such file or directory (expected a run directory or a steps.jsonl file)");
  }
  side.steps_path = path;
}

bool same_bits(double x, double y) { return std::memcmp(&x, &y, sizeof(double)) == 0; }

class Comparator {
public:
  explicit Comparator(const DiffOptions& o) : m_opt(o) {}
  bool values_match(double x, double y) const {
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
      ok = ok || ulp_distance(x, y) <= *m_opt.max_ulps;
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
};

// Step number of a line, checking that steps strictly increase.
long checked_step(std::string_view line, const StepLogReader& r, long& prev) {
  long s = quick_step(line);
  if (s < 0 || line.empty() || line.back() != '}') {
    s = parse_step_line(line, r.path(), r.lineno()).step; // throws with file:line when invalid
  }
  if (s <= prev) {
    throw Error(fmt::format("{}:{}", r.path(), r.lineno()),
                fmt::format("step {} after step {} (duplicate or decreasing step)", s, prev));
  }
  prev = s;
  return s;
}

bool line_loss(std::string_view line, const std::string& path, long lineno, double& loss) {
  if (quick_loss(line, loss)) {
    return true;
  }
  ParsedStep p = parse_step_line(line, path, lineno);
  loss = p.loss;
  return p.has_loss;
}

// Compares two parsed records of the same step; fills `d` and returns true when they diverge.
bool records_diverge(const ParsedStep& pa, const ParsedStep& pb, const Comparator& cmp, Divergence& d) {
  d.step = pa.step;
  d.epoch = pa.has_epoch ? pa.epoch : -1;
  d.has_loss = pa.has_loss && pb.has_loss;
  if (d.has_loss) {
    d.loss_a = pa.loss;
    d.loss_b = pb.loss;
    d.loss_ulps = ulp_distance(pa.loss, pb.loss);
    double den = std::max(std::fabs(pa.loss), std::fabs(pb.loss));
    d.loss_rel = den > 0 ? std::fabs(pa.loss - pb.loss) / den : 0.0;
  }
  bool loss_differs = pa.has_loss != pb.has_loss || (d.has_loss && !cmp.values_match(pa.loss, pb.loss));
  bool batch_differs = pa.has_batch && pb.has_batch && pa.batch != pb.batch;
  // Tensors in model order (the order of A's record).
  d.tensors.clear();
  d.first_tensor.clear();
  bool tensors_differ = false;
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
  if (pb.tensors.size() != pa.tensors.size() && d.first_tensor.empty()) {
    tensors_differ = true;
    d.first_tensor = "(tensor lists differ)";
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
  if (!(loss_differs || batch_differs || tensors_differ || metrics_differ || trace_differs ||
        (pa.has_epoch && pb.has_epoch && pa.epoch != pb.epoch))) {
    return false;
  }
  d.found = true;
  if (pa.step == 0) {
    d.kind = DivergenceKind::initial_state;
    d.detail = "the weights differ before any update";
  } else if (batch_differs || (pa.has_epoch && pb.has_epoch && pa.epoch != pb.epoch)) {
    d.kind = DivergenceKind::data_order;
    d.detail = fmt::format("the batch fingerprint differs ({} vs {})", pa.batch, pb.batch);
  } else {
    d.kind = DivergenceKind::computation;
    if (!d.trace_phase.empty()) {
      d.detail = fmt::format("same batch; first difference in {} at {}", d.trace_phase, d.trace_entry);
    } else if (tensors_differ) {
      d.detail = fmt::format("same batch; {} differs{}", d.first_tensor, loss_differs ? " and the loss differs" : "");
    } else if (loss_differs) {
      d.detail = "same batch; the loss differs";
    } else {
      d.detail = "same batch; a metric differs";
    }
  }
  if (loss_differs) {
    d.loss_differs_from = pa.step;
  }
  return true;
}

} // namespace

DiffResult diff_runs(const std::string& a, const std::string& b, const DiffOptions& opt) {
  DiffResult r;
  if (opt.tolerance()) {
    std::string m = "tolerance (";
    if (opt.rtol) {
      m += fmt::format("rtol={} ", *opt.rtol);
    }
    if (opt.atol) {
      m += fmt::format("atol={} ", *opt.atol);
    }
    if (opt.max_ulps) {
      m += fmt::format("max-ulps={} ", *opt.max_ulps);
    }
    m.back() = ')';
    r.mode = m + "; checksums informational";
  } else {
    r.mode = "bitwise";
  }
  open_side(a, r.a);
  open_side(b, r.b);
  if (r.a.is_run_dir != r.b.is_run_dir) {
    r.notes.push_back("one side is a run directory, the other a bare step log: metadata not compared");
  }
  if (r.a.is_run_dir && r.b.is_run_dir) {
    r.meta = diff_manifests(r.a.manifest, r.b.manifest, opt, r.dataset);
  }

  Comparator cmp(opt);
  StepLogReader ra(r.a.steps_path), rb(r.b.steps_path);
  std::string_view la, lb;
  long prev_a = -1, prev_b = -1;
  long stride = 1;
  Divergence& d = r.divergence;
  long next_gap = 0; // next step offset (1, 10, 100, ...) to record after the divergence
  GapPoint last_common;
  bool have_last = false;
  for (;;) {
    bool ha = ra.next(la);
    bool hb = rb.next(lb);
    if (!ha || !hb) {
      // The rest of the longer log is checked too (a garbage line there is still an error).
      for (bool more = ha; more; more = ra.next(la)) {
        r.a.last_step = checked_step(la, ra, prev_a);
      }
      for (bool more = hb; more; more = rb.next(lb)) {
        r.b.last_step = checked_step(lb, rb, prev_b);
      }
      r.a.lines = ra.lineno();
      r.b.lines = rb.lineno();
      break;
    }
    ++r.steps_compared;
    // In tolerance mode NaN never matches, not even itself: such lines are compared by value.
    const bool same = la == lb && !(opt.tolerance() && la.find("NaN") != std::string_view::npos);
    long sa = checked_step(la, ra, prev_a);
    long sb = same ? sa : checked_step(lb, rb, prev_b);
    if (same) {
      prev_b = sa;
    }
    r.a.last_step = sa;
    r.b.last_step = sb;
    // Loss series for plots, decimated so it never holds more than 4096 points.
    if ((ra.lineno() - 1) % stride == 0 && sa > 0) {
      double x = 0, y = 0;
      if (quick_loss(la, x) && (same ? (y = x, true) : quick_loss(lb, y))) {
        r.loss_series.push_back({sa, {x, y}});
        if (r.loss_series.size() > 4096) {
          std::vector<std::pair<long, std::pair<double, double>>> half;
          for (size_t i = 0; i < r.loss_series.size(); i += 2) {
            half.push_back(r.loss_series[i]);
          }
          r.loss_series.swap(half);
          stride *= 2;
        }
      }
    }
    if (d.found) {
      // After the divergence: where the loss first differs, and how the gap grows.
      double x = 0, y = 0;
      bool hx = line_loss(la, ra.path(), ra.lineno(), x);
      bool hy = same ? (y = x, hx) : line_loss(lb, rb.path(), rb.lineno(), y);
      if (hx && hy && sa == sb) {
        if (d.loss_differs_from == 0 && !cmp.values_match(x, y)) {
          d.loss_differs_from = sa;
        }
        last_common = {sa, x, y, std::fabs(x - y), true};
        have_last = true;
        if (sa - d.step >= next_gap) {
          r.growth.push_back({sa, x, y, std::fabs(x - y), false});
          next_gap = next_gap == 0 ? 1 : next_gap * 10;
        }
      }
      continue;
    }
    if (same) {
      continue;
    }
    if (sa != sb) {
      d.found = true;
      d.step = std::min(sa, sb);
      d.line = ra.lineno();
      d.kind = DivergenceKind::steps_differ;
      d.detail = fmt::format("line {} holds step {} in A but step {} in B", ra.lineno(), sa, sb);
      continue;
    }
    ParsedStep pa = parse_step_line(la, ra.path(), ra.lineno());
    ParsedStep pb = parse_step_line(lb, rb.path(), rb.lineno());
    if (records_diverge(pa, pb, cmp, d)) {
      d.line = ra.lineno();
      if (d.has_loss) {
        r.growth.push_back({sa, d.loss_a, d.loss_b, std::fabs(d.loss_a - d.loss_b), false});
        last_common = r.growth.back();
        have_last = true;
      }
      next_gap = 1;
      if (d.kind == DivergenceKind::computation && pa.step > 0 && ra.lineno() == 1) {
        r.notes.push_back("the logs have no step-0 record, so initial weights cannot be told apart from computation");
      }
    }
  }
  if (have_last && (r.growth.empty() || r.growth.back().step != last_common.step)) {
    r.growth.push_back(last_common);
  }
  if (!r.growth.empty()) {
    r.growth.back().is_end = true;
  }
  r.a.partial_tail = ra.partial_tail();
  r.b.partial_tail = rb.partial_tail();
  for (const RunSide* s : {&r.a, &r.b}) {
    if (s->partial_tail > 0) {
      r.notes.push_back(fmt::format("{}: last line is incomplete ({} bytes, a write cut short): ignored",
                                    s->steps_path, s->partial_tail));
    }
  }
  if (!d.found && r.a.lines != r.b.lines) {
    d.found = true;
    const bool a_short = r.a.lines < r.b.lines;
    d.kind = DivergenceKind::ended_early;
    d.step = (a_short ? prev_a : prev_b) + 1;
    d.line = std::min(r.a.lines, r.b.lines) + 1;
    d.detail = fmt::format("{} stops after {} records, {} has {}; statuses: A {}, B {}", a_short ? "A" : "B",
                           std::min(r.a.lines, r.b.lines), a_short ? "B" : "A", std::max(r.a.lines, r.b.lines),
                           r.a.status.empty() ? "(bare log)" : r.a.status, r.b.status.empty() ? "(bare log)" : r.b.status);
  }
  if (!d.found && r.a.is_run_dir && r.b.is_run_dir && r.a.status != r.b.status) {
    r.notes.push_back(fmt::format("statuses differ: A {}, B {}", r.a.status, r.b.status));
  }
  const long material = r.material_meta_count();
  r.identical = !d.found && material == 0;
  if (r.identical) {
    r.verdict = fmt::format("IDENTICAL: {} step records {}", r.steps_compared,
                            opt.tolerance() ? "match within tolerance" : "bitwise identical");
    if (r.a.is_run_dir && r.b.is_run_dir) {
      r.verdict += ", metadata matches";
    }
  } else if (d.found) {
    if (d.kind == DivergenceKind::ended_early) {
      r.verdict = fmt::format("DIFFERENT: run ended early ({})", d.detail.substr(0, d.detail.find(';')));
    } else {
      r.verdict = fmt::format("DIFFERENT: runs part at step {} ({})", d.step, d.classification());
    }
    if (material > 0) {
      r.verdict += fmt::format("; {} metadata field{} differ{}", material, material == 1 ? "" : "s",
                               material == 1 ? "s" : "");
    }
  } else {
    r.verdict = fmt::format("DIFFERENT: step records identical, but {} metadata field{} differ{}", material,
                            material == 1 ? "" : "s", material == 1 ? "s" : "");
  }
  return r;
}

} // namespace reprun
