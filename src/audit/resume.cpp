// The resume audit: see include/reprun/audit/resume.hpp.
#include "reprun/audit/resume.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <set>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

std::string label(const std::string& path, const std::string& where) {
  return where.empty() ? path : fmt::format("{} ({})", path, where);
}

bool is_checkpoint_load(const CheckpointEvent& e) {
  return std::find(e.holds.begin(), e.holds.end(), "optimizer") != e.holds.end() ||
         std::find(e.holds.begin(), e.holds.end(), "parameters") != e.holds.end();
}

} // namespace

SharingFindings check_sharing(const std::vector<RunEvents>& runs) {
  SharingFindings f;
  if (runs.empty()) {
    return f;
  }
  const RunEvents& last = runs.back();
  // Every save of the earlier runs, by digest and by file.
  struct Written {
    int run;
    const CheckpointEvent* e;
  };
  std::map<std::string, Written> by_digest, by_file;
  for (size_t r = 0; r + 1 < runs.size(); ++r) {
    for (const auto& p : runs[r].processes) {
      for (const auto& e : p.io) {
        if (e.save && !e.sha256.empty()) {
          by_digest.emplace(e.sha256, Written{runs[r].run, &e});
        }
        if (e.save && !e.file.empty()) {
          by_file.emplace(e.file, Written{runs[r].run, &e});
        }
      }
    }
  }
  std::set<std::string> own; // digests this run wrote so far, in event order
  std::set<std::string> noted;
  for (const auto& p : last.processes) {
    for (const auto& e : p.io) {
      if (e.save) {
        own.insert(e.sha256);
        auto w = by_file.find(e.file);
        if (!e.file.empty() && w != by_file.end() && noted.insert("w" + e.file).second) {
          f.notes.push_back(fmt::format("run-{} wrote {}, which run-{} also wrote: the runs share that path (give "
                                        "each run its own with {{run_dir}} in the program's arguments)",
                                        last.run, label(e.path, e.where), w->second.run));
        }
        continue;
      }
      if (e.sha256.empty() || own.count(e.sha256)) {
        continue; // its own run's bytes (run-1 and run-2 save identical checkpoints: those are theirs)
      }
      auto w = by_digest.find(e.sha256);
      if (w != by_digest.end()) {
        if (f.error.empty()) {
          f.error = fmt::format(
              "run-{} loaded {}, the bytes run-{} of this exec saved (at {}, after step {}): the runs share a "
              "checkpoint path, so run-{} went on from run-{}'s state instead of training its own; give each run "
              "its own folder with {{run_dir}} in the program's arguments, e.g. --ckpt {{run_dir}}/ckpt.pt (reprun "
              "replaces it with the run's directory)",
              last.run, label(e.path, e.where), w->second.run, w->second.e->where, w->second.e->step, last.run,
              w->second.run);
        }
      } else if (is_checkpoint_load(e) && noted.insert("l" + e.sha256).second) {
        f.notes.push_back(fmt::format("run-{} loaded {}, a checkpoint no run of this exec saved: it existed before "
                                      "the exec started, and the run went on from it (a leftover of an earlier run? "
                                      "remove it, or give each run its own folder with {{run_dir}})",
                                      last.run, label(e.path, e.where)));
      }
    }
  }
  return f;
}

// ---- the boundary table -------------------------------------------------------------------------

bool BoundaryRow::is_state() const {
  return !restored() && (kind == "parameters" || kind == "buffers" || kind == "module" || kind == "optimizer" ||
                         kind == "hyperparameters" || kind == "scheduler" || kind == "scaler");
}

std::string BoundaryRow::verdict_words() const {
  switch (verdict) {
  case Verdict::restored: return kind == "batch" ? "same" : "restored";
  case Verdict::unused: return "unused";
  case Verdict::at_save: return "restored to the save";
  case Verdict::by_program: return "restored by the program";
  case Verdict::never_restored: return "NOT restored";
  case Verdict::not_restored: return kind == "batch" ? "DIFFERS" : "NOT restored";
  case Verdict::missing: return "MISSING";
  }
  return "";
}

std::vector<const BoundaryRow*> ResumeAudit::not_restored() const {
  std::vector<const BoundaryRow*> v;
  for (const auto& r : rows) {
    if (!r.restored()) {
      v.push_back(&r);
    }
  }
  return v;
}

bool ResumeAudit::state_not_restored() const {
  return std::any_of(rows.begin(), rows.end(), [](const BoundaryRow& r) { return r.is_state(); });
}

std::string ranks_phrase(const std::vector<long>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) {
    s += (i == 0 ? "" : i + 1 == ranks.size() ? " and " : ", ") + std::to_string(ranks[i]);
  }
  return s;
}

namespace {

// The rows not restored, one per state name and verdict in table order, each with the ranks it is not
// restored on that way (empty for one process).
std::vector<std::pair<const BoundaryRow*, std::vector<long>>> by_state(const std::vector<const BoundaryRow*>& rows) {
  std::vector<std::pair<const BoundaryRow*, std::vector<long>>> out;
  for (const BoundaryRow* r : rows) {
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& e) {
      return e.first->name == r->name && e.first->verdict == r->verdict;
    });
    if (it == out.end()) {
      out.push_back({r, {}});
      it = out.end() - 1;
    }
    if (r->rank >= 0) {
      it->second.push_back(r->rank);
    }
  }
  return out;
}

std::string state_on(const std::pair<const BoundaryRow*, std::vector<long>>& e) {
  return e.second.empty() ? e.first->name : e.first->name + " on " + ranks_phrase(e.second);
}

} // namespace

std::string ResumeAudit::not_restored_names(size_t most) const {
  std::string s;
  const auto v = by_state(not_restored());
  for (size_t i = 0; i < v.size() && i < most; ++i) {
    s += (i ? ", " : "") + state_on(v[i]);
  }
  if (v.size() > most) {
    s += fmt::format(" and {} more", v.size() - most);
  }
  return s;
}

std::string ResumeAudit::not_restored_summary(size_t most) const {
  std::vector<std::string> lost, at_save;
  for (const auto& e : by_state(not_restored())) {
    (e.first->verdict == BoundaryRow::Verdict::at_save ? at_save : lost).push_back(state_on(e));
  }
  auto names = [&](const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size() && i < most; ++i) {
      s += (i ? ", " : "") + v[i];
    }
    return v.size() > most ? s + fmt::format(" and {} more", v.size() - most) : s;
  };
  std::string s = lost.empty() ? "" : "NOT restored: " + names(lost);
  if (!at_save.empty()) {
    s += s.empty() ? "" : "; ";
    s += "restored to the save, a draw behind: ";
    s += names(at_save);
  }
  return s;
}

const CheckpointEvent* resuming_load(const ProcessEvents& resumed) {
  const CheckpointEvent* found = nullptr;
  for (const auto& e : resumed.io) {
    if (!e.save && e.resumes_step >= 0) {
      found = &e; // the last one before the first step: the capture matches loads only until then
    }
  }
  return found;
}

const CheckpointEvent* save_of(const ProcessEvents& killed, const CheckpointEvent& load) {
  const CheckpointEvent* found = nullptr;
  for (const auto& e : killed.io) {
    if (e.save && !e.sha256.empty() && e.sha256 == load.sha256) {
      found = &e;
    }
  }
  return found;
}

const CheckpointEvent* first_checkpoint(const ProcessEvents& run1) {
  for (const auto& e : run1.io) {
    if (e.save && e.kind == "checkpoint") {
      return &e;
    }
  }
  return nullptr;
}

const CheckpointEvent* last_checkpoint_by(const ProcessEvents& run1, long n) {
  const CheckpointEvent* found = nullptr;
  for (const auto& e : run1.io) {
    if (e.save && e.kind == "checkpoint" && e.step <= n) {
      found = &e;
    }
  }
  return found;
}

namespace {

const StateEvent* state_at(const ProcessEvents& p, const char* at, long step) {
  for (const auto& s : p.states) {
    if (s.at == at && (step < 0 || s.step == step)) {
      return &s;
    }
  }
  return nullptr;
}

std::string digest_of(const StateEvent* s, const std::string& name) {
  if (!s || !s->states.contains(name) || !s->states[name].is_object()) {
    return "";
  }
  return s->states[name].value("digest", "");
}

// The last restore of generator `name` the resumed process made before its boundary, or nullptr.
const RestoreEvent* last_restore(const ProcessEvents& resumed, const std::string& name) {
  const RestoreEvent* found = nullptr;
  for (const auto& r : resumed.restores) {
    if (r.generator == name) {
      found = &r;
    }
  }
  return found;
}

const ojson& detail_of(const StateEvent* s, const std::string& name) {
  static const ojson k_none = ojson::object();
  if (!s || !s->states.contains(name) || !s->states[name].is_object() || !s->states[name].contains("detail")) {
    return k_none;
  }
  return s->states[name]["detail"];
}

std::string shown(const ojson& v) {
  std::string s = v.is_string() ? v.get<std::string>() : v.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// The first key of two objects (or lists of objects) whose values differ: "lr 0.005 in run-1, 0.01
// after the resume".
std::string first_value_difference(const ojson& a, const ojson& b, const std::string& ref,
                                   const std::string& prefix = "") {
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) {
      std::string d = first_value_difference(a[i], b[i], ref, prefix);
      if (!d.empty()) {
        return d;
      }
    }
    return "";
  }
  if (a.is_object() && b.is_object()) {
    for (auto it = a.begin(); it != a.end(); ++it) {
      const ojson other = b.contains(it.key()) ? b[it.key()] : ojson();
      if (it->is_object() || it->is_array()) {
        std::string d = first_value_difference(*it, other, ref, prefix + it.key() + ".");
        if (!d.empty()) {
          return d;
        }
      } else if (*it != other) {
        return fmt::format("{}{} {} in {}, {} after the resume", prefix, it.key(), shown(*it), ref,
                           other.is_null() ? "none" : shown(other));
      }
    }
    return "";
  }
  return a == b ? "" : fmt::format("{} in {}, {} after the resume", shown(a), ref, shown(b));
}

// What a state's difference means and how to restore it, by kind (and for generators by name).
void explain(BoundaryRow& row, long k, const std::string& ref, const ojson& r1, const ojson& r2) {
  const long next = k + 1;
  const std::string& n = row.name;
  if (row.kind == "parameters" || row.kind == "buffers" || row.kind == "module") {
    const ojson& fa = r1.contains("fingerprints") ? r1["fingerprints"] : ojson::object();
    const ojson& fb = r2.contains("fingerprints") ? r2["fingerprints"] : ojson::object();
    long differ = 0;
    std::string first;
    for (auto it = fa.begin(); it != fa.end(); ++it) {
      if (!fb.contains(it.key()) || fb[it.key()] != *it) {
        first = first.empty() ? it.key() : first;
        ++differ;
      }
    }
    row.detail = fmt::format("{} of {} tensors differ{}", differ, fa.size(), first.empty() ? "" : " (first: " + first + ")");
    if (row.kind == "parameters") {
      row.consequence = fmt::format("step {} starts from other weights", next);
      row.fix = "save model.state_dict() in the checkpoint and model.load_state_dict() after loading it";
    } else if (row.kind == "buffers") {
      row.consequence = "the model's buffers (BatchNorm's running statistics, counters) differ after the resume: "
                        "evaluation and the model saved at the end differ, though a forward in training mode "
                        "uses the batch's own statistics and the training loss need not show it";
      row.fix = "save model.state_dict() in the checkpoint (it holds the buffers; named_parameters() does not) and "
                "model.load_state_dict() after loading it";
    } else {
      row.consequence = "a model kept beside the trained one (an EMA copy, a teacher) differs after the resume: "
                        "what is evaluated or saved from it differs, though the training loss need not show it";
      row.fix = "save its state_dict() in the checkpoint and its load_state_dict() after loading it";
    }
  } else if (row.kind == "optimizer") {
    const long ea = r1.value("entries", 0L), eb = r2.value("entries", 0L);
    row.detail = eb == 0 && ea > 0 ? "empty after the resume (fresh optimizer state)"
                                   : first_value_difference(r1.value("steps", ojson::array()),
                                                            r2.value("steps", ojson::array()), ref);
    if (row.detail.empty()) {
      row.detail = fmt::format("{} entries in {}, {} after the resume, values differ", ea, ref, eb);
    } else if (row.detail.rfind("empty", 0) != 0) {
      row.detail = "step counts " + row.detail;
    }
    row.consequence = "the optimizer's state (momentum, Adam's moments and step counts) restarts: the updates "
                      "after the resume differ";
    row.fix = "save optimizer.state_dict() in the checkpoint and optimizer.load_state_dict() after loading it";
  } else if (row.kind == "hyperparameters") {
    row.detail = first_value_difference(r1.value("param_groups", ojson::array()), r2.value("param_groups", ojson::array()),
                                        ref);
    row.consequence = fmt::format("the learning rate or another hyperparameter differs from step {} on", next);
    row.fix = "restore the optimizer's state_dict (its param_groups) and the LR scheduler's";
  } else if (row.kind == "scheduler") {
    row.detail = first_value_difference(r1, r2, ref);
    row.consequence = "the learning rate follows another schedule after the resume: it changes at another step "
                      "(the numbers part at the scheduler's next change)";
    row.fix = "save scheduler.state_dict() in the checkpoint and scheduler.load_state_dict() after loading it";
  } else if (row.kind == "scaler") {
    row.detail = first_value_difference(r1, r2, ref);
    row.consequence = "the loss scale differs, and with it which steps are skipped";
    row.fix = "save scaler.state_dict() in the checkpoint and scaler.load_state_dict() after loading it";
  } else if (row.kind == "batch") {
    row.consequence = fmt::format("the batch of step {} differs: the data order was not restored (a sampler or "
                                  "generator not restored, or the batches already seen skipped wrong)",
                                  next);
    row.fix = "restore the data order with the checkpoint: the shuffle generator's state (or the sampler's epoch), "
              "and skip exactly the batches the checkpoint's step consumed";
  } else if (row.kind == "data") {
    row.detail = first_value_difference(r1, r2, ref);
    row.consequence = "the sampler shuffles for another epoch";
    row.fix = "call sampler.set_epoch(epoch) with the epoch restored from the checkpoint before iterating";
  } else if (n == "torch CPU generator") {
    row.consequence = fmt::format("dropout masks and other random draws differ from step {} on", next);
    row.fix = "save torch.get_rng_state() in the checkpoint and torch.set_rng_state() after loading it";
  } else if (n.rfind("torch CUDA generator", 0) == 0) {
    row.consequence = fmt::format("random draws on the GPU (dropout) differ from step {} on", next);
    row.fix = "save torch.cuda.get_rng_state_all() in the checkpoint and torch.cuda.set_rng_state_all() after "
              "loading it";
  } else if (n.find("generator (") != std::string::npos || n.rfind("DataLoader", 0) == 0 ||
             n.rfind("sampler", 0) == 0 || n.rfind("batch sampler", 0) == 0) {
    row.consequence = "the data order of the epochs after the resume differs (their shuffle draws from it)";
    row.fix = "save the generator's get_state() in the checkpoint and its set_state() after loading it (the one "
              "given to the DataLoader as generator=)";
  } else if (n == "numpy global generator") {
    row.consequence = "numpy's random draws (augmentation, sampling) differ after the resume";
    row.fix = "save np.random.get_state() in the checkpoint and np.random.set_state() after loading it";
  } else if (n == "Python random") {
    row.consequence = "Python's random draws differ after the resume";
    row.fix = "save random.getstate() in the checkpoint and random.setstate() after loading it";
  } else {
    row.consequence = "it differs after the resume";
    row.fix = "save it in the checkpoint and restore it after loading";
  }
}

} // namespace

void fill_boundary_table(ResumeAudit& audit, const ProcessEvents& run1, const ProcessEvents& resumed) {
  const long k = audit.resumed_from;
  const StateEvent* first = state_at(run1, "first", -1);
  const StateEvent* at_save = state_at(run1, "save", k);
  const StateEvent* boundary = state_at(run1, "boundary", k);
  const StateEvent* after = state_at(resumed, "resumed", -1);
  if (!boundary && audit.saved_after_backward) {
    audit.has_table = false;
    audit.no_table = fmt::format("{} saved this checkpoint between backward() and the optimizer's step() ({}), after "
                                 "step {}'s forward had run: it is not at a step boundary, so there is no state there "
                                 "to compare",
                                 audit.reference, audit.saved_at, k + 1);
    return;
  }
  if (!boundary || !after) {
    audit.has_table = false;
    audit.no_table = !boundary ? fmt::format("{} recorded no state at the first training forward after step {} "
                                             "(no forward of an nn.Module in training mode with grad enabled, nor a "
                                             "backward, came after its save)",
                                             audit.reference, k)
                               : "the resumed process recorded no state at its first training forward";
    return;
  }
  audit.has_table = true;
  // The first random op run-1 ran between the save and the boundary, on the generator a row is about.
  auto draw_on = [&](const BoundaryRow& row) -> std::string {
    const char* which = row.name.rfind("torch C", 0) == 0 ? "default" : row.name.find("generator (") != std::string::npos ? "own" : "";
    if (!*which || !boundary->draws.contains(which) || !boundary->draws[which].is_object()) {
      return "";
    }
    const ojson& d = boundary->draws[which];
    return fmt::format("{} at {}", d.value("op", "?"), d.value("where", "?"));
  };
  std::vector<std::string> names;
  for (auto it = boundary->states.begin(); it != boundary->states.end(); ++it) {
    names.push_back(it.key());
  }
  for (auto it = after->states.begin(); it != after->states.end(); ++it) {
    if (std::find(names.begin(), names.end(), it.key()) == names.end()) {
      names.push_back(it.key()); // a state only the resumed process has: shown, never blamed
    }
  }
  for (const auto& name : names) {
    BoundaryRow row;
    row.name = name;
    const ojson& src = boundary->states.contains(name) ? boundary->states[name] : after->states[name];
    row.kind = src.value("kind", "");
    const std::string d1 = digest_of(boundary, name), d2 = digest_of(after, name);
    const std::string ds = digest_of(at_save, name), df = digest_of(first, name);
    if (d1.empty()) {
      continue; // run-1 has no such state at the boundary: nothing to restore
    }
    if (d2.empty()) {
      row.verdict = BoundaryRow::Verdict::missing;
      row.detail = "the resumed process has none";
    } else if (d1 == d2) {
      row.verdict = BoundaryRow::Verdict::restored;
    } else if (row.kind == "generator" && !df.empty() && df == d1) {
      row.verdict = BoundaryRow::Verdict::unused;
      row.detail = audit.reference + " drew nothing from it from its first training forward to the boundary";
    } else if (!ds.empty() && d2 == ds && ds != d1 && row.kind != "batch" && row.kind != "data") {
      // (Not a sampler's epoch: the program sets it at each epoch's start, after a save at the end of
      // the one before; nothing draws from it.)
      row.verdict = BoundaryRow::Verdict::at_save;
      const std::string draw = draw_on(row);
      row.detail = audit.reference + " drew from it between the save and the next step" +
                   (draw.empty() ? std::string(" (not an op of torch that reprun saw: Python's random, numpy or "
                                               "another library)")
                                 : " (" + draw + ")");
    } else if (const RestoreEvent* set = row.kind == "generator" ? last_restore(resumed, name) : nullptr;
               set && !ds.empty() && set->digest == ds) {
      row.verdict = BoundaryRow::Verdict::by_program;
      row.detail = fmt::format("{} at {} set it back to its state at the save; it differs at the boundary because "
                               "its draws differ in number",
                               set->call, set->where);
    } else if (!df.empty() && d2 == df && row.kind != "batch") {
      row.verdict = BoundaryRow::Verdict::never_restored;
      row.detail = row.kind == "generator" ? "it equals the state the program's own seeding gives"
                                           : "it is what the program starts with (run-1's at its first training "
                                             "forward): never restored";
    } else {
      row.verdict = BoundaryRow::Verdict::not_restored;
    }
    if (!row.restored()) {
      const std::string detail = row.detail;
      explain(row, k, audit.reference, detail_of(boundary, name), detail_of(after, name));
      if (!detail.empty()) {
        row.detail = detail + (row.detail.empty() || row.detail == detail ? "" : "; " + row.detail);
      }
      if (row.verdict == BoundaryRow::Verdict::at_save) {
        row.consequence = "the resumed process starts from the state at the save, a draw behind " + audit.reference;
        row.fix = "save the checkpoint as the last thing before the next training step (after the evaluation "
                  "and anything else that draws)";
      }
    }
    audit.rows.push_back(std::move(row));
  }
  // The generators that were not restored: what a batch that differs, and the number of draws from a
  // generator the program restored, follow from. A DataLoader's or sampler's own generator first (the
  // order is drawn from it), else every one of them (a shuffle without its own generator draws from
  // torch's; a batch built with numpy or Python's random from theirs).
  std::vector<const BoundaryRow*> gens;
  for (const auto& r : audit.rows) {
    if (r.kind == "generator" && !r.restored()) {
      gens.push_back(&r);
    }
  }
  auto own = std::find_if(gens.begin(), gens.end(),
                          [](const BoundaryRow* r) { return r->name.find("generator (") != std::string::npos; });
  if (own != gens.end()) {
    gens = {*own};
  }
  std::string gen_names;
  for (size_t i = 0; i < gens.size(); ++i) {
    gen_names += i == 0 ? "" : i + 1 == gens.size() ? " and " : ", ";
    gen_names += gens[i]->name;
  }
  const char* which = gens.size() == 1 ? "which was" : "which were";
  // No generator left out, but a DataLoader that shuffles from torch's global generator: each epoch's
  // iterator draws its seed when it starts, and the resumed process starts one in the middle of an
  // epoch, so its order differs even with torch's generator restored.
  std::string loaders;
  if (gens.empty()) {
    for (const auto& line : detail_of(boundary, "batch").value("shuffles_from_torch", ojson::array())) {
      if (line.is_string()) {
        loaders += (loaders.empty() ? "" : ", ") + line.get<std::string>();
      }
    }
  }
  for (auto& r : audit.rows) {
    if (!loaders.empty() && r.kind == "batch" && !r.restored()) {
      r.detail = fmt::format("the DataLoader ({}) shuffles without a generator of its own: each epoch's iterator "
                             "draws its order's seed from torch's global generator when it starts, and the resumed "
                             "process started one in the middle of an epoch",
                             loaders);
      r.fix = "give the DataLoader a generator of its own and seed it per epoch (generator.manual_seed(SEED + epoch) "
              "before each epoch's loop), then skip the batches the checkpoint's step consumed; or resume at epoch "
              "boundaries only";
    } else if (!loaders.empty() && r.verdict == BoundaryRow::Verdict::by_program && r.name == "torch CPU generator") {
      r.detail += fmt::format(", decided by the DataLoader ({}) drawing its shuffle's seed from it", loaders);
    }
  }
  // A sampler whose epoch was not restored shuffles for another epoch: the batch follows from it.
  const auto epoch = std::find_if(audit.rows.begin(), audit.rows.end(), [](const BoundaryRow& r) {
    return r.kind == "data" && r.name.rfind("sampler epoch", 0) == 0 && !r.restored();
  });
  if (gens.empty() && epoch != audit.rows.end()) {
    for (auto& r : audit.rows) {
      if (r.kind == "batch" && !r.restored()) {
        r.detail = fmt::format("its order is drawn for the {}, which was not restored", epoch->name);
        r.fix = epoch->fix;
      }
    }
  }
  for (auto& r : audit.rows) {
    if (gens.empty()) {
      break;
    }
    if (r.kind == "batch" && !r.restored()) {
      r.detail = fmt::format("its order is drawn from {}, {} not restored", gen_names, which);
      r.fix = gens.front()->fix;
    } else if (r.verdict == BoundaryRow::Verdict::by_program) {
      r.detail += fmt::format(", decided by {}, {} not restored", gen_names, which);
    }
  }
}

std::optional<OpCause> resume_op_cause(const OpDivergence& d, const ResumeAudit& a) {
  if (a.saved_after_backward && d.kind != OpDivergence::Kind::none) {
    // A checkpoint of the middle of a step: whatever op parts first, the resume went on from the
    // weights before that step's update, with its gradients lost.
    OpCause c;
    const auto causes = resume_causes(a);
    c.reason = causes.front().first;
    c.fix = causes.front().second;
    return c;
  }
  const auto rows = a.not_restored();
  if (rows.empty() || d.kind == OpDivergence::Kind::none) {
    return std::nullopt;
  }
  const OpRecord& r = d.a.op.empty() ? d.b : d.a;
  auto pick = [&](std::initializer_list<const char*> kinds) -> const BoundaryRow* {
    for (const char* k : kinds) {
      for (const BoundaryRow* row : rows) {
        if (row->kind == k) {
          return row;
        }
      }
    }
    return nullptr;
  };
  const BoundaryRow* row = nullptr;
  if (d.kind == OpDivergence::Kind::same_inputs && is_random_draw(r)) {
    row = pick({"generator"});
  } else if (r.phase == "optimizer") {
    row = pick({"optimizer", "hyperparameters", "scheduler", "scaler", "parameters"});
  } else {
    row = pick({"batch", "parameters", "buffers", "data", "generator", "optimizer", "hyperparameters", "scheduler",
                "scaler", "module"});
  }
  if (!row) {
    row = rows.front();
  }
  OpCause c;
  c.reason = fmt::format("{} {}{} at the resume after step {}{}: {}", row->name, row->verdict_words(),
                         row->rank >= 0 ? fmt::format(" on rank {}", row->rank) : "", a.resumed_from,
                         row->detail.empty() ? "" : " (" + row->detail + ")", row->consequence);
  c.fix = row->fix;
  return c;
}

std::vector<std::pair<std::string, std::string>> resume_causes(const ResumeAudit& a) {
  std::vector<std::pair<std::string, std::string>> out;
  if (a.saved_after_backward) {
    out.emplace_back(fmt::format("the checkpoint the run resumed from was saved between backward() and the "
                                 "optimizer's step() ({}): it holds the weights before that step's update, and the "
                                 "step's gradients are lost",
                                 a.saved_at),
                     "save after optimizer.step() (and the scheduler's step), as the last thing before the next "
                     "training step");
  }
  for (const auto& e : by_state(a.not_restored())) {
    const BoundaryRow* row = e.first;
    out.emplace_back(fmt::format("{} {}{} at the resume after step {}{}: {}", row->name, row->verdict_words(),
                                 e.second.empty() ? "" : " on " + ranks_phrase(e.second), a.resumed_from,
                                 row->detail.empty() ? "" : " (" + row->detail + ")", row->consequence),
                     row->fix);
  }
  return out;
}

void fill_rank_tables(ResumeAudit& audit, const std::vector<std::pair<ProcessEvents, ProcessEvents>>& per_rank) {
  audit.rows.clear();
  audit.has_table = !per_rank.empty();
  const StateEvent* rank0 = per_rank.empty() ? nullptr : state_at(per_rank.front().first, "boundary", audit.resumed_from);
  for (size_t r = 0; r < per_rank.size(); ++r) {
    ResumeAudit t = audit;
    t.rows.clear();
    fill_boundary_table(t, per_rank[r].first, per_rank[r].second);
    if (!t.has_table) {
      audit.has_table = false;
      audit.no_table = fmt::format("rank {}: {}", r, t.no_table);
      audit.rows.clear();
      return;
    }
    const StateEvent* own = state_at(per_rank[r].first, "boundary", audit.resumed_from);
    const StateEvent* after = state_at(per_rank[r].second, "resumed", -1);
    for (auto& row : t.rows) {
      row.rank = static_cast<long>(r);
      const std::string mine = digest_of(after, row.name);
      if (r > 0 && !row.restored() && !mine.empty() && mine == digest_of(rank0, row.name) &&
          mine != digest_of(own, row.name)) {
        row.detail = "it equals rank 0's state" + (row.detail.empty() ? std::string() : "; " + row.detail);
      }
      audit.rows.push_back(std::move(row));
    }
  }
}

} // namespace reprun
