// The one-line verdict of a diff (see diff_verdict.hpp).
#include "audit/diff_verdict.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace reprun {

namespace {

std::string plural_fields(long n) {
  return fmt::format("{} metadata field{} differ{}", n, n == 1 ? "" : "s", n == 1 ? "s" : "");
}

// Two exec runs whose step logs are both empty (no step log, or one with no records): what was
// compared instead, "no step log; outputs compared: exit code, stdout, 2 artifacts"; "" otherwise.
std::string outputs_compared(const DiffResult& r) {
  if (!r.a.is_run_dir || !r.b.is_run_dir || r.a.lines != 0 || r.b.lines != 0) {
    return "";
  }
  const auto& ma = r.a.manifest;
  if (!ma.is_object() || !ma.contains("outputs") || !ma["outputs"].is_object()) {
    return "";
  }
  const auto& out = ma["outputs"];
  const size_t artifacts = out.contains("artifacts") && out["artifacts"].is_array() ? out["artifacts"].size() : 0;
  const bool has_log = ma.contains("program") && ma["program"].is_object() && ma["program"].contains("step_log") &&
                       ma["program"]["step_log"] != "none";
  std::string s = fmt::format("{}; outputs compared: exit code, stdout", has_log ? "empty step log" : "no step log");
  if (artifacts > 0) {
    s += fmt::format(", {} artifact{}", artifacts, artifacts == 1 ? "" : "s");
  }
  return s;
}

// Which outputs differ ("stdout, artifacts"), from the material deltas under outputs.
std::string outputs_differing(const DiffResult& r) {
  std::vector<std::string> names;
  for (const auto& m : r.meta) {
    if (m.kind != MetaDelta::Kind::material || m.key.rfind("outputs.", 0) != 0) {
      continue;
    }
    const std::string k = m.key.substr(8);
    const std::string name = k.rfind("exit_code", 0) == 0 ? "exit code" : k.rfind("stdout", 0) == 0 ? "stdout" : "artifacts";
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  std::string s;
  for (const auto& n : names) {
    s += (s.empty() ? "" : ", ") + n;
  }
  return s;
}

// exec --vary env:NAME: the variables varied on purpose and the framework facts that follow from
// them, "OMP_NUM_THREADS 1 -> 2, intra_op_threads 1 -> 2", so that an IDENTICAL verdict says what it
// held across; "" when nothing of the environment was varied.
std::string varied_environment(const DiffResult& r) {
  auto unquote = [](const std::string& v) {
    return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
  };
  std::string s;
  // The variables first, then what torch made of them (pins.NAME repeats env.NAME).
  for (const auto& [prefix, label] : {std::pair<std::string, std::string>{"env.", ""}, {"framework.determinism.", "torch's "}}) {
    for (const auto& m : r.meta) {
      if (m.kind == MetaDelta::Kind::varied && m.key.rfind(prefix, 0) == 0) {
        s += fmt::format("{}{}{} {} -> {}", s.empty() ? "" : ", ", label, m.key.substr(prefix.size()), unquote(m.a),
                         unquote(m.b));
      }
    }
  }
  return s;
}

// The manifest's "kind" of a run directory ("train", "exec"), "" for a bare log.
std::string run_kind_of(const RunSide& side) {
  return side.is_run_dir && side.manifest.is_object() ? side.manifest.value("kind", "") : "";
}

} // namespace

// Both runs are data-parallel programs of other world sizes.
bool world_sizes_differ(const DiffResult& r) {
  return r.a.world_size > 0 && r.b.world_size > 0 && r.a.world_size != r.b.world_size;
}

void set_verdict(DiffResult& r, const DiffOptions& opt, bool one_sided) {
  const Divergence& d = r.divergence;
  const long material = r.material_meta_count();
  r.identical = !d.found && material == 0;
  const bool sizes_differ = world_sizes_differ(r);
  const std::string kind_a = run_kind_of(r.a), kind_b = run_kind_of(r.b);
  if (!r.identical && !kind_a.empty() && !kind_b.empty() && kind_a != kind_b) {
    // The kind is the one metadata line (manifest_diff.cpp); the step logs are still compared, as
    // far as both go, and the headline says which comparison found what.
    std::string steps = "their step records identical";
    if (d.found && d.kind == DivergenceKind::ended_early) {
      steps = fmt::format("one step log ended early ({})", d.detail.substr(0, d.detail.find(';')));
    } else if (d.found) {
      steps = fmt::format("their step records part at step {} ({})", d.step, d.classification());
    } else if (sizes_differ) {
      steps = "step logs not compared (other world sizes)";
    }
    r.verdict = fmt::format("DIFFERENT: runs of different kinds (A reprun {}, B reprun {}); {}", kind_a, kind_b, steps);
    return;
  }
  if (const std::string outputs = outputs_compared(r); !outputs.empty() && !d.found && !sizes_differ) {
    // No step records on either side: never "0 step records identical".
    if (r.identical) {
      r.verdict = fmt::format("IDENTICAL: {} identical, metadata matches", outputs);
    } else if (const std::string differ = outputs_differing(r); !differ.empty()) {
      r.verdict = fmt::format("DIFFERENT: {}; differing: {}; {}", outputs, differ, plural_fields(material));
    } else {
      r.verdict = fmt::format("DIFFERENT: {} identical, but {}", outputs, plural_fields(material));
    }
    return;
  }
  if (r.identical) {
    r.verdict = fmt::format("IDENTICAL: {} step records {}{}{}", r.steps_compared,
                            opt.tolerance() ? "match within tolerance" : "bitwise identical",
                            r.ranks.empty() ? "" : fmt::format(" on {} ranks", r.ranks.size()),
                            one_sided ? " in what both recorded (see notes)" : "");
    if (r.a.is_run_dir && r.b.is_run_dir) {
      r.verdict += ", metadata matches";
      if (const std::string v = varied_environment(r); !v.empty()) {
        r.verdict += " but for what was varied on purpose (" + v + ")";
      }
    }
  } else if (d.found) {
    if (d.kind == DivergenceKind::ended_early) {
      r.verdict = fmt::format("DIFFERENT: run ended early ({})", d.detail.substr(0, d.detail.find(';')));
    } else {
      r.verdict = fmt::format("DIFFERENT: runs part at step {}{} ({})", d.step,
                              r.ranks.empty() ? "" : fmt::format(" on rank {}", d.rank), d.classification());
    }
    if (material > 0) {
      r.verdict += "; " + plural_fields(material);
    }
  } else if (sizes_differ) {
    r.verdict = fmt::format("DIFFERENT: world sizes differ ({} -> {}), step logs not compared; {}", r.a.world_size,
                            r.b.world_size, plural_fields(material));
  } else {
    r.verdict = "DIFFERENT: step records identical, but " + plural_fields(material);
  }
}

bool set_root_rank(DiffResult& r, int rank) {
  Divergence& d = r.divergence;
  if (!d.found || r.ranks.empty() || d.rank == rank || d.kind == DivergenceKind::ended_early) {
    return false;
  }
  const auto at_step = [&](const RankResult& rr) { return rr.found && rr.step == d.step; };
  if (std::any_of(r.ranks.begin(), r.ranks.end(), [&](const RankResult& rr) { return at_step(rr) && rr.loss_differs; })) {
    return false; // a loss names the root
  }
  if (std::none_of(r.ranks.begin(), r.ranks.end(), [&](const RankResult& rr) { return rr.rank == rank && at_step(rr); })) {
    return false; // that rank's log does not part at the first differing step
  }
  d.rank = rank;
  set_verdict(r, DiffOptions{}, false); // a found divergence's verdict depends on neither
  return true;
}

} // namespace reprun
