// diagnose: from a DiffResult to likely causes and their fixes. Each rule reads the ranked
// metadata differences (material ones only, effects left out) and the divergence kind; the list
// is ordered by how likely each cause explains the kind of divergence seen.
#include "reprun/audit/cause.hpp"

#include "audit/exec_facts.hpp"
#include "reprun/audit/outside_inputs.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <set>

namespace reprun {

using ojson = nlohmann::ordered_json;

bool is_effect(const MetaDelta& m) { return m.category == "outputs"; }

bool ran_on_cuda(const ojson& manifest) {
  auto any_cuda = [](const ojson& devices) {
    if (!devices.is_object()) {
      return false;
    }
    return std::any_of(devices.items().begin(), devices.items().end(),
                       [](const auto& d) { return d.key().rfind("cuda", 0) == 0; });
  };
  if (!manifest.is_object() || !manifest.contains("framework") || !manifest["framework"].is_object()) {
    return false;
  }
  const ojson& f = manifest["framework"];
  if (f.contains("devices") && any_cuda(f["devices"])) {
    return true;
  }
  if (f.contains("distributed") && f["distributed"].is_object() && f["distributed"].contains("devices") &&
      f["distributed"]["devices"].is_object()) {
    for (const auto& [rank, devices] : f["distributed"]["devices"].items()) {
      if (any_cuda(devices)) {
        return true;
      }
    }
  }
  return false;
}

namespace {

// The fix for a Python program that does not use torch: the generators it has.
constexpr const char* k_seed_python = "seed every generator the program draws from: random.seed(SEED) for Python's "
                                      "random (random.shuffle, random.sample), np.random.seed(SEED) or "
                                      "np.random.default_rng(SEED) for numpy";

// A manifest value by path ("/config/determinism/reduction"), as text; "" when absent.
std::string manifest_text(const ojson& m, const char* pointer) {
  const ojson::json_pointer p(pointer);
  if (!m.is_object() || !m.contains(p)) {
    return "";
  }
  const ojson& v = m.at(p);
  return v.is_string() ? v.get<std::string>() : v.dump();
}

// JSON text of a delta side, strings unquoted: "0.05", "atomic", "(absent)".
// The manifest's "kind" ("train", "exec"), "" for a bare log.
std::string run_kind(const ojson& m) { return m.is_object() ? m.value("kind", "") : ""; }

std::string unquoted(const std::string& v) {
  return v.size() >= 2 && v.front() == '"' && v.back() == '"' ? v.substr(1, v.size() - 2) : v;
}

std::string plain(const std::string& v) {
  std::string s = unquoted(v);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::string strip(const std::string& key, const std::string& prefix) {
  return key.compare(0, prefix.size(), prefix) == 0 ? key.substr(prefix.size()) : key;
}

// "a, b and 2 more" of the first three names.
std::string name_list(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 3; ++i) {
    s += (i == 0 ? "" : i + 1 == names.size() && names.size() <= 3 ? " and " : ", ") + names[i];
  }
  if (names.size() > 3) {
    s += fmt::format(" and {} more", names.size() - 3);
  }
  return s;
}

std::string files_phrase(const DatasetDelta& d) {
  std::vector<std::string> parts;
  auto paths = [](const std::vector<DataFileDelta>& v) {
    std::vector<std::string> p;
    for (const auto& f : v) {
      p.push_back(f.path);
    }
    return name_list(p);
  };
  if (!d.added.empty()) {
    parts.push_back("added in B: " + paths(d.added));
  }
  if (!d.removed.empty()) {
    parts.push_back("missing in B: " + paths(d.removed));
  }
  if (!d.changed.empty()) {
    parts.push_back("changed: " + paths(d.changed));
  }
  std::string s;
  for (const auto& p : parts) {
    s += (s.empty() ? "" : "; ") + p;
  }
  return s;
}

// The material, non-effect differences of one category, in rank order.
std::vector<const MetaDelta*> material(const DiffResult& r, const std::string& category) {
  std::vector<const MetaDelta*> v;
  for (const auto& m : r.meta) {
    if (m.kind == MetaDelta::Kind::material && !is_effect(m) && m.category == category && m.key != "data.files") {
      v.push_back(&m);
    }
  }
  return v;
}

// "optimizer.lr 0.05 -> 0.1, model.hidden [64] -> [32]" for up to three deltas.
std::string changes(const std::vector<const MetaDelta*>& v, const std::string& prefix) {
  std::vector<std::string> s;
  for (const auto* m : v) {
    const auto [a, b] = shown_difference(unquoted(m->a), unquoted(m->b), 60); // what differs, not a shared prefix
    s.push_back(fmt::format("{} {} -> {}", strip(m->key, prefix), a, b));
  }
  return name_list(s);
}

struct Candidate {
  double order; // lower is more likely
  Diagnosis d;
};

class Diagnoser {
public:
  explicit Diagnoser(const DiffResult& r) : m_r(r), m_d(r.divergence) {}

  std::vector<Diagnosis> run() {
    if (m_r.identical) {
      return {};
    }
    for (const auto& m : m_r.meta) {
      if (m.key == "kind" && m.category == "kind") { // runs of different kinds (manifest_diff.cpp)
        return {Diagnosis{"the runs are of different kinds: " + m.why,
                          "compare two runs of reprun train, or two runs of reprun exec of the same program", false}};
      }
    }
    stopped_early();
    data();
    outside();
    configuration();
    arguments();
    config();
    distributed();
    seeds();
    varied();
    hash_seed();
    nondeterminism();
    framework();
    build();
    hardware();
    environment();
    other();
    fallback();
    std::stable_sort(m_out.begin(), m_out.end(), [](const Candidate& x, const Candidate& y) { return x.order < y.order; });
    std::vector<Diagnosis> v;
    for (auto& c : m_out) {
      v.push_back(std::move(c.d));
    }
    return v;
  }

private:
  bool kind(DivergenceKind k) const { return m_d.found && m_d.kind == k; }
  // Numbers equal, metadata not: a fix may also be to ignore the field. Not when what the program
  // printed or wrote differs (an exec run without a step log that prints its loss): numbers differ.
  std::string ignore_hint(const std::vector<const MetaDelta*>& v) const {
    if (m_d.found || v.empty() || has_effects()) {
      return "";
    }
    const std::string key = common_key(v);
    if (key.empty()) {
      return "";
    }
    return fmt::format(" (no number differs: if it is expected to differ, pass --ignore-meta {})", key);
  }
  // The key prefix --ignore-meta takes for all of `v`: a key, or the section or folder they share
  // ("inputs.files.imgs" for 300 files of imgs/); "" when they share none.
  static std::string common_key(const std::vector<const MetaDelta*>& v) {
    std::string p = v.front()->key;
    for (const MetaDelta* m : v) {
      p.resize(static_cast<size_t>(std::mismatch(p.begin(), p.end(), m->key.begin(), m->key.end()).first - p.begin()));
    }
    auto ends_a_part = [&](const std::string& key) {
      return key.size() == p.size() ||
             key[p.size()] == '.' || (key[p.size()] == '/' && p.rfind("inputs.files.", 0) == 0);
    };
    while (!p.empty() && !std::all_of(v.begin(), v.end(), [&](const MetaDelta* m) { return ends_a_part(m->key); })) {
      p.pop_back();
    }
    return p;
  }
  void add(double order, std::string cause, std::string fix, bool claims_same_inputs = false) {
    m_out.push_back({order, {std::move(cause), std::move(fix), claims_same_inputs}});
  }

  void stopped_early() {
    if (!kind(DivergenceKind::ended_early)) {
      return;
    }
    for (const RunSide* s : {&m_r.a, &m_r.b}) {
      if (s->status.empty() || s->status == "complete") {
        continue;
      }
      if (s->status.rfind("failed", 0) == 0) {
        add(0, fmt::format("run {} failed before its end ({})", s->label, s->status),
            "read its log, fix what made it fail, and train it again");
      } else {
        add(0, fmt::format("run {} stopped before its end (status {}): it was killed or crashed", s->label, s->status),
            fmt::format("resume it: reprun train --resume {}", s->label));
      }
    }
    if (m_out.empty()) {
      std::vector<const MetaDelta*> length;
      for (const auto& m : m_r.meta) {
        if (m.key == "config.training.steps" || m.key == "config.training.epochs") {
          length.push_back(&m);
        }
      }
      if (!length.empty()) {
        add(0, "the runs were asked for different lengths: " + changes(length, "config."),
            "give both the same training.steps and training.epochs");
      } else if (run_kind(m_r.a.manifest) == "exec" && m_r.a.status == "complete" && m_r.b.status == "complete") {
        // A program that exits normally after fewer steps ran a shorter loop: nothing was cut.
        const bool a_shorter = m_r.a.lines < m_r.b.lines;
        // The shorter run read, in the same bytes, files the other wrote: it went on from what it left.
        std::vector<std::string> left;
        for (const auto& m : m_r.meta) {
          if (m.kind == MetaDelta::Kind::informational && m.key.rfind("inputs.files.", 0) == 0 &&
              m.a == (a_shorter ? "read" : "written") && m.b == (a_shorter ? "written" : "read")) {
            left.push_back(m.key.substr(13));
          }
        }
        const char *shorter = a_shorter ? "A" : "B", *longer = a_shorter ? "B" : "A";
        if (!left.empty()) {
          add(0.3, fmt::format("run {} read {}, which run {} wrote (the same bytes): it went on from where {} ended, as from "
                               "a checkpoint, and made {} optimizer steps against {}", shorter, name_list(left), longer,
                               longer, a_shorter ? m_r.a.lines : m_r.b.lines, a_shorter ? m_r.b.lines : m_r.a.lines),
              fmt::format("remove {} before each record, or give each run its own (exec replaces {{run_dir}} in the program's "
                          "arguments: {{run_dir}}/{})", name_list(left), left[0].substr(left[0].rfind('/') + 1)));
        }
        // When what the program read or was given differs, the number of steps follows from it.
        const bool inputs_differ = !material(m_r, "dataset").empty() || !material(m_r, "code").empty() ||
                                   !material(m_r, "arguments").empty() || !material(m_r, "configuration").empty();
        add(inputs_differ ? 3.5 : 0.5, fmt::format("the program made fewer optimizer steps in run {} ({} against {}) and exited normally: "
                             "its loop ended earlier",
                             shorter, a_shorter ? m_r.a.lines : m_r.b.lines,
                             a_shorter ? m_r.b.lines : m_r.a.lines),
            "find what decides the number of steps (epochs, a stopping rule, the data's length, an environment "
            "variable) and make it the same in both runs");
      } else if (!m_r.a.status.empty() && !m_r.b.status.empty()) {
        add(0.5, "one step log is shorter, yet both runs report the same status: it was cut or copied short",
            "train the shorter run again, or compare the two over their common steps only");
      } else {
        add(0.5, "one step log stops earlier: its run was stopped, or the log was cut or copied short",
            "resume or rerun the shorter run, or compare the two over their common steps only");
      }
    }
  }

  // Files read outside the places of data whose size or time changed between the runs
  // (outside_inputs.hpp): their bytes were not compared, so they are named as a likely cause, after a
  // fingerprinted data file that changed.
  void outside() {
    const std::string files = outside_changed(m_r);
    if (files.empty()) {
      return;
    }
    const std::string folder = outside_folder(m_r);
    add(1.2,
        "files the program read outside the places of data changed between the runs (recorded by size and time "
        "only, their bytes not compared): " + files,
        fmt::format("record both runs with --data-dir {} so that diff compares their bytes and says what changed, "
                    "or keep the data under the working directory",
                    folder.empty() ? "DIR" : folder));
  }

  // The data's own facts name the change; what follows from it (the plan's sample counts, the
  // model's shapes, config keys left to the data: "follows the data") is named with it, as effects.
  void data() {
    auto keys = material(m_r, "dataset");
    if (!m_r.dataset.counted() && keys.empty()) {
      return;
    }
    std::vector<const MetaDelta*> facts, effects;
    for (const auto* m : keys) {
      // exec: a data file its arguments name (program.argv_files.PATH) is the data itself.
      const bool fact = m->key.rfind("data.", 0) == 0 || m->key.rfind("program.argv_files.", 0) == 0 ||
                        m->key.rfind("inputs.files.", 0) == 0;
      (fact ? facts : effects).push_back(m);
    }
    std::string what = m_r.dataset.counted() ? files_phrase(m_r.dataset)
                                              : changes(facts.empty() ? keys : facts, "program.argv_files.");
    // exec: the files a program read, each with what changed in it.
    std::vector<std::string> read;
    for (const auto* m : facts) {
      if (m->key.rfind("inputs.files.", 0) == 0) {
        read.push_back(m->key.substr(13) + ": " + m->detail);
      }
    }
    if (!read.empty()) {
      what = name_list(read);
    }
    if (!effects.empty()) {
      what += "; with it, as effects: " + changes(effects, "");
    }
    add(1, "the training data changed (" + what + ")",
        "train both on the same files" +
            std::string(m_r.dataset.counted() ? " (restore or remove the files named)" : "") +
            ", or accept B as the new baseline if the change is intended" + ignore_hint(keys));
  }

  // exec: a configuration file the program read from a path of its own (configs/train.yaml), with
  // what changed in it; one its arguments name is an argument's (arguments()).
  void configuration() {
    std::vector<std::string> files;
    const auto keys = material(m_r, "configuration");
    for (const auto* m : keys) {
      files.push_back(m->key.substr(13) + (m->detail.empty() ? "" : " (" + m->detail + ")"));
    }
    if (!files.empty()) {
      add(2, "a configuration file the program read changed: " + name_list(files),
          "run both with the same configuration, or accept B as the new baseline if the change is intended" +
              ignore_hint(keys));
    }
  }

  // exec: the program's arguments, compared element by element ("--lr 0.01 -> 0.03").
  void arguments() {
    std::vector<std::string> files;
    for (const auto* m : material(m_r, "arguments")) {
      if (m->key.rfind("program.argv_files.", 0) == 0) {
        files.push_back(m->key.substr(19));
      } else if (m->key.rfind("inputs.files.", 0) == 0) { // compared as the program read it
        files.push_back(m->key.substr(13) + (m->detail.empty() ? "" : " (" + m->detail + ")"));
      }
    }
    if (!files.empty()) {
      add(2, "a configuration file the program's arguments name changed: " + name_list(files),
          "run both with the same file, or accept B as the new baseline if the change is intended");
    }
    for (const auto* m : material(m_r, "arguments")) {
      if (m->key.rfind("program.argv_files.", 0) == 0 || m->key.rfind("inputs.files.", 0) == 0) {
        continue;
      }
      // "--config=b.json" against "--config a.json": compared as the parser reads them.
      const ojson a = split_long_options(m->a), b = split_long_options(m->b);
      std::vector<std::string> diffs;
      if (a.is_array() && b.is_array()) {
        const size_t n = std::max(a.size(), b.size());
        for (size_t i = 0; i < n; ++i) {
          const std::string va = i < a.size() ? (a[i].is_string() ? a[i].get<std::string>() : a[i].dump()) : "(none)";
          const std::string vb = i < b.size() ? (b[i].is_string() ? b[i].get<std::string>() : b[i].dump()) : "(none)";
          if (va == vb) {
            continue;
          }
          // The option a value belongs to, when the argument before it is an option both runs share.
          const bool after_option = i > 0 && i < a.size() && i < b.size() && a[i - 1] == b[i - 1] &&
                                    a[i - 1].is_string() && a[i - 1].get<std::string>().rfind("-", 0) == 0;
          diffs.push_back(after_option ? fmt::format("{} {} -> {}", a[i - 1].get<std::string>(), va, vb)
                                       : fmt::format("{} -> {}", va, vb));
        }
      }
      add(2,
          "the program's arguments changed: " +
              (diffs.empty() ? fmt::format("{} -> {}", plain(m->a), plain(m->b)) : name_list(diffs)),
          "run both with the same arguments, or accept B as the new baseline if the change is intended" +
              ignore_hint({m}));
    }
  }

  void config() {
    auto keys = material(m_r, "config");
    std::vector<const MetaDelta*> named;
    bool any_key = false;
    for (const auto* m : keys) {
      const bool config_key = m->key.rfind("config.", 0) == 0;
      any_key = any_key || config_key;
      // The reduction mode has its own rule (nondeterminism); digests follow the keys they digest.
      if (config_key && m->key != "config.determinism.reduction") {
        named.push_back(m);
      }
    }
    if (!named.empty()) {
      std::string first = strip(named.front()->key, "config.");
      add(2, "hyperparameters changed: " + changes(named, "config."),
          fmt::format("set {} back to {} in the config of run B (and any other key named), or accept B as the new baseline",
                      first, plain(named.front()->a)) + ignore_hint(named));
    } else if (!any_key && !keys.empty()) {
      add(2, "the configuration differs (" + changes(keys, "") + ")",
          "use the same config file and the same --set overrides for both runs" + ignore_hint(keys));
    }
  }

  // A data-parallel program run with another world size or backend.
  void distributed() {
    auto keys = material(m_r, "distributed");
    if (keys.empty()) {
      return;
    }
    add(2, "the data-parallel setup differs (" + changes(keys, "") +
               "): each rank trains on its own shard of the data, and the gradients are summed over the ranks",
        "run both with the same number of ranks and the same backend (init_process_group's world_size and backend, "
        "torchrun's --nproc_per_node, mp.spawn's nprocs)" + ignore_hint(keys));
  }

  void seeds() {
    auto keys = material(m_r, "seeds");
    if (keys.empty()) {
      return;
    }
    add(kind(DivergenceKind::initial_state) || kind(DivergenceKind::data_order) ? 0.5 : 3,
        "the seed changed: " + changes(keys, ""), "use the same seed in both runs" + ignore_hint(keys));
  }

  // exec --vary env:NAME: the runs differ on purpose in NAME, and in the framework's determinism facts
  // that follow from it (varied too, never counted). When the numbers part, the varied setting is
  // what changed them: named with its values, and with the facts it set.
  static bool varied_env(const MetaDelta& m) {
    return m.kind == MetaDelta::Kind::varied &&
           (m.key.rfind("env.", 0) == 0 || m.key.rfind("pins.", 0) == 0 || m.key.rfind("framework.", 0) == 0);
  }
  void varied() {
    if (!m_d.found) {
      return;
    }
    std::vector<std::string> vars, names;
    std::vector<const MetaDelta*> facts;
    bool threads = false;
    for (const auto& m : m_r.meta) {
      if (!varied_env(m)) {
        continue;
      }
      if (m.key.rfind("framework.", 0) == 0) {
        facts.push_back(&m);
        threads = threads || m.key == "framework.determinism.intra_op_threads";
        continue;
      }
      std::string name = strip(strip(m.key, "env."), "pins.");
      name = name.substr(0, name.find('.')); // pins.NAME.value
      if (std::find(names.begin(), names.end(), name) != names.end()) {
        continue; // exec records a pinned variable under env. and pins.: named once
      }
      names.push_back(name);
      vars.push_back(fmt::format("{} is {} in A and {} in B", name, plain(m.a), plain(m.b)));
      threads = threads || name == "OMP_NUM_THREADS" || name == "MKL_NUM_THREADS" || name == "OPENBLAS_NUM_THREADS";
    }
    if (vars.empty()) {
      return;
    }
    std::string cause = "the variable varied on purpose changes the numbers: " + name_list(vars);
    if (!facts.empty()) {
      cause += fmt::format(" (and with it PyTorch's {})", changes(facts, "framework.determinism."));
    }
    add(3, cause,
        threads ? "the same thread count in every run: torch.set_num_threads(N) at the start of the script (or "
                  "OMP_NUM_THREADS=N for every run)"
                : fmt::format("give {} the same value in every run, or find what in the program depends on it",
                              name_list(names)));
    m_out.back().d.claims_varied = true;
  }

  // Atomic reductions, thread-dependent code: the same inputs, different numbers.
  void nondeterminism() {
    const std::string ra = manifest_text(m_r.a.manifest, "/config/determinism/reduction");
    const std::string rb = manifest_text(m_r.b.manifest, "/config/determinism/reduction");
    const std::string ta = manifest_text(m_r.a.manifest, "/config/determinism/threads");
    const std::string tb = manifest_text(m_r.b.manifest, "/config/determinism/threads");
    const std::string threads = ta.empty()  ? ""
                                : ta == tb ? fmt::format(", {} thread{}", ta, ta == "1" ? "" : "s")
                                           : fmt::format(", {} vs {} threads", ta, tb);
    // Reductions and threads touch the computation of a step, not the initial weights.
    const bool numbers = kind(DivergenceKind::computation);
    if (ra == "atomic" || rb == "atomic") {
      const char* which = ra == rb ? "both runs use" : ra == "atomic" ? "A uses" : "B uses";
      add(numbers ? 1.5 : 3.5,
          fmt::format("atomic reduction: {} determinism.reduction \"atomic\"{}, which adds gradient partial sums in "
                      "an order drawn per process and in the order threads finish, so the rounding differs "
                      "from run to run (even with 1 thread)",
                      which, threads),
          "set determinism.reduction: ordered");
      return;
    }
    if (!numbers || has_material_cause() ||
        std::any_of(m_r.meta.begin(), m_r.meta.end(), [](const MetaDelta& m) { return varied_env(m); })) {
      return; // something recorded differs, or the environment was varied: not "same inputs and environment"
    }
    if (run_kind(m_r.a.manifest) == "exec" || run_kind(m_r.b.manifest) == "exec") {
      // "Same inputs" only where both runs recorded what they read (not under --no-inputs, nor a run
      // recorded before reprun recorded inputs).
      const bool ra_in = inputs_recorded(m_r.a.manifest), rb_in = inputs_recorded(m_r.b.manifest);
      const std::string same = ra_in && rb_in ? "same inputs and environment"
                               : !ra_in && !rb_in
                                   ? "same environment (what the program read was not recorded)"
                                   : fmt::format("same environment (what the program read was not recorded in {})",
                                                 ra_in ? "B" : "A");
      // Files read outside the places of data changed (outside()): the inputs are not known to be the same.
      const bool outside = !outside_changed(m_r).empty();
      add(4.5,
          outside ? "thread-dependent or non-deterministic code in the program, if the files it read outside the "
                    "places of data (above) hold the same bytes: different numbers"
                  : "thread-dependent or non-deterministic code in the program: " + same + ", different numbers",
          uses_torch() ? fmt::format("make the framework deterministic (torch.use_deterministic_algorithms(True){}), "
                                     "seed every generator, and fix the thread counts",
                                     cuda_workspace())
                       : std::string(k_seed_python) + "; and fix the thread counts of the libraries it calls",
          !outside);
    } else {
      add(4.5, fmt::format("thread-dependent code: same data, config and build{}, different numbers, with the "
                           "reduction ordered",
                           threads),
          "run with --threads 1 to confirm, and report it with both runs: the built-in trainer promises equal bits "
          "for any thread count",
          true);
    }
  }

  void framework() {
    auto det = material(m_r, "framework");
    if (!det.empty()) {
      add(3, "PyTorch's determinism settings differ: " + changes(det, ""),
          "set them the same in every run, at the start of the script (torch.use_deterministic_algorithms, "
          "torch.backends.cudnn flags, torch.set_num_threads)" + ignore_hint(det));
    }
  }

  void build() {
    auto code = material(m_r, "code");
    // exec: the program's own files (its script) are its code, not a build of reprun's.
    auto programs = [](const MetaDelta* m) {
      return m->key.rfind("program.argv_files.", 0) == 0 || m->key.rfind("inputs.files.", 0) == 0;
    };
    std::vector<const MetaDelta*> program_code;
    for (const auto* m : code) {
      if (programs(m)) {
        program_code.push_back(m);
      }
    }
    code.erase(std::remove_if(code.begin(), code.end(), programs), code.end());
    if (!program_code.empty()) {
      std::vector<std::string> files;
      for (const auto* m : program_code) {
        const bool input = m->key.rfind("inputs.files.", 0) == 0;
        files.push_back(input ? m->key.substr(13) + (m->detail.empty() ? "" : " (" + m->detail + ")") : m->key.substr(19));
      }
      add(1.5, "the program's code changed: " + name_list(files),
          "run both with the same code (the same commit; git diff shows what changed), or accept B as the new "
          "baseline if the change is intended" + ignore_hint(program_code));
    }
    // exec: another Python interpreter (its path or version), with what follows from it: the
    // executable exec ran, its file, and the installed distributions.
    auto interpreter = [](const MetaDelta* m) {
      return m->key.rfind("program.interpreter", 0) == 0 || m->key == "program.executable" ||
             m->key == "program.executable_file" || m->key == "framework.python" ||
             m->key.rfind("framework.distributions", 0) == 0;
    };
    const bool other_python = std::any_of(code.begin(), code.end(), [](const MetaDelta* m) {
      return m->key.rfind("program.interpreter", 0) == 0;
    });
    auto libs = material(m_r, "libraries");
    if (other_python) {
      std::vector<const MetaDelta*> named;
      for (const auto* list : {&code, &libs}) {
        std::copy_if(list->begin(), list->end(), std::back_inserter(named), interpreter);
      }
      code.erase(std::remove_if(code.begin(), code.end(), interpreter), code.end());
      libs.erase(std::remove_if(libs.begin(), libs.end(), interpreter), libs.end());
      add(4, "another Python interpreter: " + interpreter_phrase(m_r.a.manifest) + " -> " +
                 interpreter_phrase(m_r.b.manifest) + distributions_phrase(m_r),
          "run both with the same interpreter and environment (the same PATH, virtual environment or conda "
          "environment)" + ignore_hint(named));
    }
    if (!code.empty()) {
      add(4, "a different build: " + changes(code, ""),
          "build both runs from the same commit with the same compiler and flags" + ignore_hint(code));
    }
    if (!libs.empty()) {
      add(5, "different library versions: " + changes(libs, ""),
          "install the same versions for both runs (pin them)" + ignore_hint(libs));
    }
  }

  void hardware() {
    auto gpu = material(m_r, "gpu");
    if (!gpu.empty()) {
      add(6, "a different GPU or driver: " + changes(gpu, ""),
          "run both on the same GPU model, driver and CUDA runtime" + ignore_hint(gpu));
    }
    auto cpu = material(m_r, "cpu");
    if (!cpu.empty()) {
      // The kernels the CPU's libraries chose (OpenBLAS's core, torch's instruction set), or the
      // variables that chose them: the same kernels on every machine give the same bits.
      const bool kernels = std::any_of(cpu.begin(), cpu.end(), [](const MetaDelta* m) {
        return m->key.rfind("framework.cpu.", 0) == 0 || m->key.rfind("env.", 0) == 0;
      });
      if (kernels) {
        add(7, "the CPU's kernels differ: " + changes(cpu, ""),
            "choose the same kernels on every machine (OPENBLAS_CORETYPE for OpenBLAS, ATEN_CPU_CAPABILITY for "
            "PyTorch's own kernels, set to what the oldest CPU has), or accept a tolerance (reprun diff --rtol/--atol)" +
                ignore_hint(cpu));
      } else {
        add(7, "a different CPU: " + changes(cpu, ""), "run both on the same CPU model" + ignore_hint(cpu));
      }
    }
    auto host = material(m_r, "host");
    if (!host.empty()) {
      add(9, "a different host setup: " + changes(host, ""),
          "run both on the same operating system image" + ignore_hint(host));
    }
  }

  void environment() {
    std::set<std::string> named; // exec records a pinned variable under env. and pins.: name it once
    for (const auto* m : material(m_r, "environment")) {
      std::string name = strip(strip(m->key, "env."), "pins.");
      name = name.substr(0, name.find('.')); // pins.NAME.value, pins.NAME.source
      if (!named.insert(name).second) {
        continue;
      }
      const bool a_unset = m->a == "(absent)" || m->a == "null";
      const std::string value = a_unset ? plain(m->b) : plain(m->a);
      auto shown = [](const std::string& v) { return v == "(absent)" || v == "null" ? std::string("unset") : plain(v); };
      // exec's record of who set it (pins.NAME.source): reprun's default pin, --pin, or the user's
      // environment ("kept (already set)").
      auto source = [&](const ojson& mf) {
        const ojson::json_pointer at("/pins/" + name + "/source");
        const std::string s = mf.is_object() && mf.contains(at) && mf.at(at).is_string() ? mf.at(at).get<std::string>() : "";
        return s == "pinned" ? std::string(" (pinned by reprun)") : s == "--pin" ? std::string(" (--pin)")
               : s == "kept (already set)" ? std::string(" (set in the environment)")
                                           : std::string();
      };
      const std::string sa = source(m_r.a.manifest), sb = source(m_r.b.manifest);
      // "unpinned" where a side left it unset or neither pinned it.
      const bool pinned = (sa == " (pinned by reprun)" || sa == " (--pin)" || sb == " (pinned by reprun)" || sb == " (--pin)") &&
                          shown(m->a) != "unset" && shown(m->b) != "unset";
      add(8, fmt::format("{}: {} is {}{} in A and {}{} in B",
                         pinned ? "an environment variable differs" : "unpinned environment variable", name, shown(m->a),
                         sa, shown(m->b), sb),
          fmt::format("pin {} in the environment: export {}={} before both runs", name, name, value) +
              ignore_hint({m}));
    }
  }

  void other() {
    auto rest = material(m_r, "other");
    if (!rest.empty()) {
      add(10, "other recorded facts differ: " + changes(rest, ""),
          "make them the same for both runs" + ignore_hint(rest));
    }
  }

  // cuBLAS's workspace setting, for a program that ran on CUDA only (a CPU job has no cuBLAS).
  std::string cuda_workspace() const {
    return ran_on_cuda(m_r.a.manifest) || ran_on_cuda(m_r.b.manifest) ? ", CUBLAS_WORKSPACE_CONFIG=:4096:8" : "";
  }

  bool has_material_cause() const {
    return m_r.dataset.counted() || std::any_of(m_r.meta.begin(), m_r.meta.end(), [](const MetaDelta& m) {
             return m.kind == MetaDelta::Kind::material && !is_effect(m);
           });
  }

  // Nothing recorded explains the difference: say what the divergence kind implies.
  void fallback() {
    if (!m_out.empty()) {
      return;
    }
    const bool exec = run_kind(m_r.a.manifest) == "exec";
    if (!m_d.found && m_r.steps_compared > 0) {
      // The step records agree: the training is reproducible as far as it logged; what it printed or
      // wrote is not.
      add(11, fmt::format("the program's outputs differ though its {} step records and everything recorded about "
                          "its inputs agree: something it prints or writes is not seeded{}",
                          m_r.steps_compared,
                          m_r.stdout_difference.empty() ? "" : " (stdout, " + m_r.stdout_difference + ")"),
          "find what decides that output (a random draw such as a validation subset, the clock, the order of a set) "
          "and seed or fix it");
      return;
    }
    const bool ra_in = inputs_recorded(m_r.a.manifest), rb_in = inputs_recorded(m_r.b.manifest);
    if (!m_d.found && exec && (!ra_in || !rb_in) && !same_exec(m_r)) {
      // Recorded apart, and what the program read was not compared: nothing says it is not
      // deterministic (two runs of one exec read the files as they were at one moment).
      add(11, fmt::format("the program's outputs differ, and what it read was not recorded in {}: a changed data or "
                          "code file cannot be ruled out",
                          !ra_in && !rb_in ? "either run" : ra_in ? "B" : "A"),
          "record both runs with what they read (reprun exec without --no-inputs) and compare them again");
      return;
    }
    if (!m_d.found && exec && !same_exec(m_r)) {
      // Two runs recorded apart (a reference and a later run): what reprun does not record may differ.
      add(11, "the program's outputs differ though nothing recorded about its inputs does: it depends on something "
              "reprun does not record (an environment variable outside the recorded ones, a file outside the places "
              "of data, the network, the clock), or it is not deterministic",
          "run it twice in one exec (reprun exec -- PROGRAM: same environment) to see whether it is deterministic; "
          "record the variables it reads with --env-allow NAME and a data folder elsewhere with --data-dir DIR");
      return;
    }
    if (!m_d.found) {
      add(11, "the program's outputs differ (exit code, stdout or artifacts) though nothing recorded about its inputs "
              "does: it is not deterministic",
          "seed every random generator and make the framework deterministic; write a step log (REPRUN_STEP_LOG) so "
          "the first differing step can be found");
      return;
    }
    switch (m_d.kind) {
    case DivergenceKind::data_order:
      add(11, "the batch order differs though data, seed and config match: the sampler depends on something not "
              "recorded (an unseeded shuffle, worker timing)",
          !exec         ? "derive the shuffle from the recorded seed only"
          : uses_torch() ? "seed the data loader's shuffle (a torch.Generator with a fixed seed) and use worker_init_fn"
                         : k_seed_python);
      break;
    case DivergenceKind::initial_state:
      if (exec) {
        add(11, "the runs part before the training starts (model init, data set construction, random_split): a draw "
                "there from a generator that is not seeded alike",
            "seed every generator before the program first draws (torch.manual_seed(SEED), and manual_seed on "
            "each torch.Generator it makes)");
      } else {
        add(11, "the initial weights differ though the seed matches: initialization draws from an unseeded generator",
            "draw the initial weights from a generator seeded with the experiment seed");
      }
      break;
    case DivergenceKind::steps_differ:
      add(11, "the logs number their steps differently: the runs log or count optimizer steps differently",
          "log one record per optimizer step, numbered the same way, in both runs");
      break;
    default:
      add(11, "non-deterministic computation: the same recorded inputs give different numbers (an atomic "
              "reduction or thread-dependent code)",
          !exec          ? "set determinism.reduction: ordered, and run with --threads 1 to confirm"
          : uses_torch() ? fmt::format("make the framework deterministic (torch.use_deterministic_algorithms(True){}) "
                                       "and fix the thread counts",
                                       cuda_workspace())
                         : std::string(k_seed_python) + "; and fix the thread counts of the libraries it calls",
          true);
      break;
    }
  }

  // An exec'd program that imported torch (its capture recorded torch's facts).
  bool uses_torch() const {
    const ojson& m = m_r.a.manifest;
    return m.is_object() && m.contains("framework") && m["framework"].is_object() && m["framework"].contains("torch");
  }

  // exec --no-pin with PYTHONHASHSEED unset in both runs: Python salts string hashes per process, so
  // the order of sets (and of dicts built from them) of strings differs from run to run. A likely
  // cause of any difference, in any library: named as such, not as a framework's non-determinism.
  void hash_seed() {
    if (run_kind(m_r.a.manifest) != "exec" || (!m_d.found && !has_effects())) {
      return;
    }
    auto unset = [](const ojson& m) {
      const ojson::json_pointer env("/env/PYTHONHASHSEED"), pin("/pins/PYTHONHASHSEED");
      // Recorded as unset (null: the environment section lists every allowlisted variable), not pinned.
      return m.is_object() && m.contains(env) && m.at(env).is_null() && (!m.contains(pin) || m.at(pin).is_null());
    };
    if (unset(m_r.a.manifest) && unset(m_r.b.manifest)) {
      add(4.2, "PYTHONHASHSEED is unset (the runs ran with --no-pin): Python salts string hashing per process, so "
               "the order of a set of strings, and of what is built by iterating it, differs from run to run",
          "iterate over sorted(...) of the set (or use a list or a dict), or export PYTHONHASHSEED=0 for every run "
          "(reprun exec pins it unless --no-pin)");
    }
  }

  bool has_effects() const {
    return std::any_of(m_r.meta.begin(), m_r.meta.end(),
                       [](const MetaDelta& m) { return m.kind == MetaDelta::Kind::material && is_effect(m); });
  }

  const DiffResult& m_r;
  const Divergence& m_d;
  std::vector<Candidate> m_out;
};

} // namespace

std::vector<Diagnosis> diagnose(const DiffResult& r) { return Diagnoser(r).run(); }

} // namespace reprun
