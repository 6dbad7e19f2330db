// The op where two PyTorch runs part, in a diff's terms (op_localize.hpp).
#include "reprun/audit/op_localize.hpp"

#include "reprun/audit/inputs_diff.hpp"
#include "reprun/audit/outside_inputs.hpp"
#include "reprun/core/error.hpp"
#include "reprun/record/run_dir.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <set>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

// "OMP_NUM_THREADS is 1 in A and 2 in B" for the thread variables the runs set differently.
std::string env_thread_difference(const ojson& ma, const ojson& mb) {
  std::string out;
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) {
    auto get = [&](const ojson& m) -> std::string {
      if (m.is_object() && m.contains("env") && m["env"].is_object() && m["env"].contains(name) &&
          m["env"][name].is_string()) {
        return m["env"][name].get<std::string>();
      }
      return "unset";
    };
    const std::string a = get(ma), b = get(mb);
    if (a != b) {
      out += fmt::format("{}{} is {} in A and {} in B", out.empty() ? "" : "; ", name, a, b);
    }
  }
  return out;
}

const ojson& framework_of(const ojson& manifest) {
  static const ojson none;
  return manifest.is_object() && manifest.contains("framework") && manifest["framework"].is_object()
             ? manifest["framework"]
             : none;
}

std::string torch_version(const ojson& manifest) {
  const ojson& f = framework_of(manifest);
  return f.contains("torch") && f["torch"].is_string() ? f["torch"].get<std::string>() : "";
}

// The fingerprint methods a trace's first records used: 'x' XXH3 of a CPU tensor's bytes, 'c' its
// CRC-32 (the native library missing), 'd' the device method (fingerprint.py).
std::set<char> methods(const std::string& path) {
  std::set<char> out;
  std::ifstream in(path);
  std::string line;
  for (int n = 0; n < 200 && std::getline(in, line); ++n) {
    const ojson j = ojson::parse(line, nullptr, false);
    if (!j.is_object()) {
      continue;
    }
    for (const char* key : {"in", "out"}) {
      if (j.contains(key) && j[key].is_array()) {
        for (const auto& v : j[key]) {
          if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>() != "-") {
            out.insert(v.get<std::string>()[0]);
          }
        }
      }
    }
  }
  return out;
}

std::string method_names(const std::set<char>& m) {
  std::string out;
  for (char c : m) {
    const char* name = c == 'x' ? "XXH3 of the bytes" : c == 'c' ? "CRC-32 of the bytes" : c == 'd' ? "the device method"
                                                                                                       : "unknown";
    out += (out.empty() ? "" : " and ") + std::string(name);
  }
  return out;
}

// The number of optimizer steps a trace covers, from its end line (-1: cut short, no end line).
long trace_steps(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      last = line;
    }
  }
  const ojson j = ojson::parse(last, nullptr, false);
  return j.is_object() && j.contains("end") && j.contains("steps") && j["steps"].is_number_integer()
             ? j["steps"].get<long>()
             : -1;
}

} // namespace

OpCause op_cause_between(const OpDivergence& od, const DiffResult& diff) {
  const ojson& ma = diff.a.manifest;
  const ojson& mb = diff.b.manifest;
  return op_cause(od, framework_of(ma), framework_of(mb), env_thread_difference(ma, mb), kernel_difference(ma, mb));
}

Localization apply_op_divergence(DiffResult& diff, const OpDivergence& od, OpCause cause, bool claims_same_inputs,
                                 int rank) {
  const OpRecord& r = od.a.op.empty() ? od.b : od.a;
  if (r.phase == "init") {
    // The runs part before the training started: in their initial state (model init, data), whatever
    // the step logs, which record after each step, could tell.
    reclassify_divergence(diff, DivergenceKind::initial_state);
  }
  // An input made outside the traced ops, where the runs read different files: name them.
  if (od.input_origin.find("not made by a traced op") != std::string::npos) {
    if (const std::string files = differing_inputs(diff); !files.empty()) {
      cause.reason += "; the runs read different data: " + files;
    } else if (const std::string outside = outside_changed(diff); !outside.empty()) {
      cause.reason += "; files read outside the places of data changed between the runs (their bytes not compared): " +
                      outside;
    }
  }
  // The operation found is the most direct cause: first among the likely causes. A cause that says
  // the numbers part from the same inputs is withdrawn when the op's inputs already differ (or the
  // runs took other ops): what was found contradicts it.
  auto& causes = diff.diagnosis;
  if (od.kind != OpDivergence::Kind::same_inputs) {
    causes.erase(std::remove_if(causes.begin(), causes.end(), [](const Diagnosis& d) { return d.claims_same_inputs; }),
                 causes.end());
  }
  causes.insert(causes.begin(), Diagnosis{fmt::format("{} at {}{}: {}", short_op_name(r.op), r.where,
                                                      rank >= 0 ? fmt::format(" on rank {}", rank) : "", cause.reason),
                                          cause.fix, claims_same_inputs});
  const Divergence& dv = diff.divergence;
  Localization loc;
  loc.found = true;
  loc.step = r.step;
  loc.phase = r.phase;
  loc.layer = r.module;
  loc.tensor = short_op_name(r.op);
  loc.entry = r.op;
  loc.source = r.where;
  loc.effect = dv.first_tensor; // a parameter after the update: always an effect of an op
  loc.effect_step = dv.step;
  loc.loss_differs_from = dv.loss_differs_from;
  loc.sentence = (rank >= 0 ? fmt::format("rank {}, ", rank) : "") + op_sentence(od, cause);
  if (rank >= 0) {
    loc.rank = rank;
    // No loss differs at the first differing step: the op trace, not the lowest rank, names the root.
    set_root_rank(diff, rank);
  }
  return loc;
}

std::string fingerprint_methods_differ(const std::string& trace_a, const std::string& trace_b) {
  const std::set<char> a = methods(trace_a), b = methods(trace_b);
  if (a.empty() || b.empty() || a == b) {
    return "";
  }
  return fmt::format("{} in A, {} in B", method_names(a), method_names(b));
}

void localize_in_stored_traces(DiffResult& diff, const std::string& run_a, const std::string& run_b) {
  const Divergence& dv = diff.divergence;
  if (diff.identical || !dv.found || !diff.a.is_run_dir || !diff.b.is_run_dir ||
      torch_version(diff.a.manifest).empty() || torch_version(diff.b.manifest).empty()) {
    return; // not two PyTorch runs that part at a step
  }
  const RunDir da = RunDir::open(run_a), db = RunDir::open(run_b);
  const std::string ta = da.verified_op_trace(), tb = db.verified_op_trace();
  const long step = std::max({dv.line, dv.step, 1L});
  if (ta.empty() || tb.empty()) {
    diff.notes.push_back(fmt::format(
        "op-level localization: {}: record both with reprun exec --runs 1 --trace-steps {} -- ... and diff them to "
        "have the op where they part named (or audit the program on one machine with reprun exec)",
        ta.empty() && tb.empty() ? "neither run kept an op trace" : ta.empty() ? "A kept no op trace" : "B kept no op trace",
        step));
    return;
  }
  if (!diff.ranks.empty()) {
    diff.notes.push_back("op-level localization: a data-parallel program's stored traces are not compared (reprun "
                         "exec compares its ranks' traces by replays)");
    return;
  }
  if (const std::string m = fingerprint_methods_differ(ta, tb); !m.empty()) {
    diff.notes.push_back(fmt::format("op-level localization: the traces cannot be compared: their tensors were "
                                     "fingerprinted by different methods ({}), which give different strings for equal "
                                     "values (another device, or a reprun without its native fingerprint library)",
                                     m));
    return;
  }
  const long held_a = trace_steps(ta), held_b = trace_steps(tb);
  OpDivergence od = compare_op_traces(ta, tb);
  const std::string va = torch_version(diff.a.manifest), vb = torch_version(diff.b.manifest);
  if (od.kind == OpDivergence::Kind::none) {
    const long held = std::min(held_a, held_b);
    diff.notes.push_back(
        held >= 0 && held < step
            ? fmt::format("op-level localization: the op traces agree, but they end before the step where the runs "
                          "part: they hold {} step{} and the runs part at step {}; record with --trace-steps {}",
                          held, held == 1 ? "" : "s", step, step)
            : fmt::format("op-level localization: the op traces agree over {} ops up to step {}: the difference is "
                          "outside torch's ops (Python code that computes the logged values)",
                          od.ops_compared, step));
    return;
  }
  const bool a_first = od.a.op.empty(), b_first = od.b.op.empty();
  if (od.kind == OpDivergence::Kind::paths_differ && (a_first || b_first) && (a_first ? od.end_a : od.end_b) == "steps") {
    // One trace holds fewer steps than the other (--trace-steps of another N): equal as far as it goes.
    const long held = a_first ? held_a : held_b;
    diff.notes.push_back(fmt::format("op-level localization: the op traces agree as far as both go, {} ops; {}'s ends "
                                     "after step {}{}; record both with --trace-steps {}",
                                     od.ops_compared, a_first ? "A" : "B", held,
                                     held < step ? fmt::format(", before the step where the runs part ({})", step) : "",
                                     step));
    return;
  }
  if (od.kind == OpDivergence::Kind::paths_differ && va != vb && !a_first && !b_first) {
    diff.notes.push_back(fmt::format(
        "op-level localization: the op sequences part at op {} (A ran {} at {}, B ran {} at {}), and the runs used "
        "torch {} and {}: another torch version dispatches other ops, so the traces cannot be compared op by op; "
        "record both runs with the same torch",
        od.ops_compared, short_op_name(od.a.op), od.a.where, short_op_name(od.b.op), od.b.where, va, vb));
    return;
  }
  const OpCause cause = op_cause_between(od, diff);
  Localization loc = apply_op_divergence(diff, od, cause, od.kind == OpDivergence::Kind::same_inputs);
  loc.stored_traces = true;
  loc.note = fmt::format("op traces kept by the runs (exec --trace-steps): {} ops identical before it", od.ops_compared);
  // The op trace tells initial weights from computation, which a log without a step-0 record cannot.
  diff.notes.erase(std::remove_if(diff.notes.begin(), diff.notes.end(),
                                  [](const std::string& n) { return n.rfind("the logs have no step-0 record", 0) == 0; }),
                   diff.notes.end());
  if (va != vb) {
    loc.note += fmt::format("; the runs used torch {} and {}", va, vb);
  }
  diff.localization = std::move(loc);
}

} // namespace reprun
