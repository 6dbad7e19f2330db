// Manifest comparison: flatten both manifests to dotted keys, classify each differing key
// (material and ranked by how likely it explains a numeric divergence, informational, volatile),
// and list data files added, removed or changed.
#include "reprun/audit/diff.hpp"
#include "reprun/train/settings.hpp"

#include "audit/trainer_facts.hpp"

#include "reprun/core/error.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

void flatten(const ojson& j, const std::string& prefix, std::map<std::string, std::string>& out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it) {
      std::string key = prefix.empty() ? it.key() : prefix + "." + it.key();
      if (key == "data.files" || key == "inputs.files" || key == "inputs.folders" || key == "inputs.files_sha256") {
        continue; // compared file by file (inputs: audit/inputs_diff.hpp, from inputs.jsonl)
      }
      if (key == "config_key_digests") {
        continue; // a digest of each config key, which are compared themselves
      }
      if (key == "program.argv_files" && it->is_array()) {
        // exec: the files the arguments name, one key each, so that the one that changed is named
        // (the interpreter or executable itself under program.executable_file).
        for (const auto& f : *it) {
          if (f.is_object() && f.contains("path") && f["path"].is_string()) {
            const auto index = f.find("index"); // a number when reprun wrote it; any other value: not the executable
            const bool exe = index != f.end() && index->is_number_integer() && *index == 0;
            out[exe ? "program.executable_file" : key + "." + f["path"].get<std::string>()] =
                f.contains("sha256") ? f["sha256"].dump() : "null";
          }
        }
        continue;
      }
      flatten(*it, key, out);
    }
    return;
  }
  out[prefix] = j.dump();
}

bool has_prefix(const std::string& key, const std::string& p) {
  return key == p || (key.size() > p.size() && key.compare(0, p.size(), p) == 0 && key[p.size()] == '.');
}

struct Rule {
  const char* prefix;
  const char* category;
  int rank;
  MetaDelta::Kind kind;
};

// First matching rule wins; order matters (specific before general).
const std::vector<Rule>& rules() {
  using K = MetaDelta::Kind;
  static const std::vector<Rule> k_rules = [] {
    std::vector<Rule> r = {
        // Volatile: expected to differ between any two runs.
        {"created", "volatile", 100, K::volatile_field},
        {"command_line", "volatile", 100, K::volatile_field},
        {"working_directory", "volatile", 100, K::volatile_field},
        {"config_file.path", "volatile", 100, K::volatile_field},
        {"config_file.dir", "volatile", 100, K::volatile_field},
        {"config_file.overrides", "volatile", 100, K::volatile_field},
        {"host.hostname", "volatile", 100, K::volatile_field},
        {"resumes", "volatile", 100, K::volatile_field},
        {"forked_from", "volatile", 100, K::volatile_field},
        {"wall_seconds", "volatile", 100, K::volatile_field},
        {"program.run_dir", "volatile", 100, K::volatile_field},
        {"program.argv_expanded", "volatile", 100, K::volatile_field}, // {run_dir} in the arguments
        {"code.directory", "volatile", 100, K::volatile_field},
        // Outputs (exec's exit code, stdout digest, artifacts) are effects: they make runs differ
        // but never explain why, so they rank after every cause (audit/cause.hpp: is_effect).
        {"program.step_log", "outputs", 90, K::informational},
        // reprun search's record of a trial (which search, which k): where the run came from;
        // what it changes (seed, values) is in the config and the seeds.
        {"search", "config", 90, K::informational},
        {"outputs", "outputs", 11, K::material},
    };
    // Informational: the execution settings (train/settings.hpp), which by the determinism
    // guarantees cannot change a result of the built-in trainer, what derives from them only, and
    // the kernel choice (every kernel gives the same bits).
    static std::vector<std::string> keys;
    for (const auto& e : execution_settings()) {
      keys.push_back(std::string("config.") + e.key);
    }
    for (const auto& k : derived_execution_keys()) {
      keys.push_back(k);
    }
    for (const auto& k : keys) {
      r.push_back({k.c_str(), "config", 90, K::informational});
    }
    r.push_back({"reprun.kernels", "code", 90, K::informational});
    // Material, ranked.
    const std::vector<Rule> material = {
        {"data", "dataset", 1, K::material},
        // What the recording of an exec'd program saw besides its files: how many of each class,
        // the processes, those it could not follow. The files themselves are compared one by one.
        {"inputs.counts", "dataset", 90, K::informational},
        {"inputs.processes", "dataset", 90, K::informational},
        {"inputs.unrecorded", "dataset", 90, K::informational},
        {"inputs.probes", "dataset", 90, K::informational},
        {"inputs.recorded", "dataset", 90, K::informational},
        {"inputs.why", "dataset", 90, K::informational}, // why nothing was recorded: not a difference
        {"inputs.preload", "dataset", 90, K::informational},
        {"inputs", "dataset", 1, K::material},
        {"config", "config", 2, K::material},
        {"config_digest", "config", 2, K::material},
        {"config_file", "config", 2, K::material},
        {"plan", "config", 2, K::material},
        {"model", "config", 2, K::material},
        {"seeds", "seeds", 3, K::material},
        {"reprun.libraries", "libraries", 5, K::material},
        {"reprun", "code", 4, K::material},
        {"code", "code", 4, K::material},
        {"program.argv", "arguments", 2, K::material},
        {"program.executable_file", "libraries", 5, K::material},
        {"program", "code", 4, K::material},
        {"kind", "code", 4, K::material},
        {"format", "code", 4, K::material},
        {"python", "libraries", 5, K::material},
        // exec of a data-parallel program: the world size is counted once (ranks.world_size); a
        // rank log one run lacks at the same world size is an effect, named.
        {"ranks.world_size", "distributed", 2, K::material},
        {"ranks.logs", "outputs", 11, K::material},
        {"framework.distributed.world_size", "distributed", 90, K::informational},
        {"framework.distributed.devices", "gpu", 6, K::material},
        {"framework.distributed", "distributed", 2, K::material},
        {"ranks", "distributed", 2, K::material},
        // exec of a PyTorch program: reprun_capture's framework facts.
        {"framework.determinism", "framework", 3, K::material},
        {"framework.devices", "gpu", 6, K::material},
        {"framework.steps_seen", "framework", 90, K::informational},
        {"framework.capture_stopped", "framework", 90, K::informational},
        {"framework.loss_dtype", "framework", 90, K::informational},
        {"framework.compiled", "code", 4, K::material}, // one run compiled with torch.compile, the other not
        {"framework.cpu", "cpu", 7, K::material}, // the instruction set and BLAS kernels the CPU's libraries chose
        {"framework", "libraries", 5, K::material},
        {"gpu", "gpu", 6, K::material},
        {"host.cpu_model", "cpu", 7, K::material},
        {"host.isa", "cpu", 7, K::material},
        {"host.arch", "cpu", 7, K::material},
        // The variables that choose the CPU's kernels: a machine fact, as the CPU is.
        {"env.OPENBLAS_CORETYPE", "cpu", 7, K::material},
        {"env.ATEN_CPU_CAPABILITY", "cpu", 7, K::material},
        {"env.DNNL_MAX_CPU_ISA", "cpu", 7, K::material},
        {"env.ONEDNN_MAX_CPU_ISA", "cpu", 7, K::material},
        {"env.MKL_ENABLE_INSTRUCTIONS", "cpu", 7, K::material},
        {"env.MKL_CBWR", "cpu", 7, K::material},
        {"env", "environment", 8, K::material},
        {"pins", "environment", 8, K::material},
        {"host", "host", 9, K::material},
    };
    r.insert(r.end(), material.begin(), material.end());
    return r;
  }();
  return k_rules;
}

// A file an exec'd program's arguments name: its code (a script) or its data (anything else).
bool is_code_file(const std::string& path) {
  static const std::vector<std::string> k_code = {".py", ".sh", ".bash", ".pl", ".rb", ".js", ".lua", ".R", ".jl"};
  return std::any_of(k_code.begin(), k_code.end(), [&](const std::string& ext) {
    return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  });
}

bool is_config_file(const std::string& path) {
  static const std::vector<std::string> k_config = {".json", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".conf"};
  return std::any_of(k_config.begin(), k_config.end(), [&](const std::string& ext) {
    return path.size() > ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
  });
}

} // namespace

ojson split_long_options(const std::string& text) {
  const ojson argv = ojson::parse(text, nullptr, false);
  if (!argv.is_array()) {
    return nullptr;
  }
  ojson out = ojson::array();
  for (size_t i = 0; i < argv.size(); ++i) {
    if (!argv[i].is_string()) {
      return nullptr;
    }
    const std::string& a = argv[i].get_ref<const std::string&>();
    const size_t eq = a.find('=');
    if (i > 0 && a.rfind("--", 0) == 0 && eq != std::string::npos && eq > 2) {
      out.push_back(a.substr(0, eq));
      out.push_back(a.substr(eq + 1));
    } else {
      out.push_back(a);
    }
  }
  return out;
}

namespace {

void classify(MetaDelta& d, const DiffOptions& opt) {
  d.category = "other";
  d.rank = 10;
  d.kind = MetaDelta::Kind::material;
  for (const auto& r : rules()) {
    if (has_prefix(d.key, r.prefix)) {
      d.category = r.category;
      d.rank = r.rank;
      d.kind = r.kind;
      break;
    }
  }
  if (d.key == "program.argv" && d.kind == MetaDelta::Kind::material) {
    const ojson a = split_long_options(d.a), b = split_long_options(d.b);
    if (!a.is_null() && a == b) { // --config conf.json against --config=conf.json
      d.kind = MetaDelta::Kind::informational;
      d.why = "the same arguments: an option's value written after '=' in one run and apart in the other";
    }
  }
  if (d.key.rfind("program.argv_files.", 0) == 0) {
    const std::string path = d.key.substr(19);
    d.category = is_code_file(path) ? "code" : is_config_file(path) ? "arguments" : "dataset";
    d.rank = d.category == "code" ? 4 : d.category == "arguments" ? 2 : 1;
  }
  if (d.kind == MetaDelta::Kind::material) {
    for (const auto& [p, why] : opt.incomparable) {
      if (has_prefix(d.key, p)) {
        d.kind = MetaDelta::Kind::informational;
        d.why = why;
      }
    }
  }
  if (d.kind == MetaDelta::Kind::material || d.kind == MetaDelta::Kind::informational) {
    for (const auto& p : opt.varied) {
      if (has_prefix(d.key, p)) {
        d.kind = MetaDelta::Kind::varied;
      }
    }
  }
  if (d.kind == MetaDelta::Kind::material) {
    for (const auto& p : opt.ignore_meta) {
      if (has_prefix(d.key, p)) {
        d.kind = MetaDelta::Kind::ignored;
      }
    }
  }
}

std::map<std::string, std::pair<uint64_t, std::string>> file_map(const ojson& m, const char* section) {
  std::map<std::string, std::pair<uint64_t, std::string>> out;
  if (!m.is_object() || !m.contains(section) || !m[section].is_object() || !m[section].contains("files") ||
      !m[section]["files"].is_array()) {
    return out;
  }
  for (const auto& f : m[section]["files"]) {
    if (f.is_object() && f.contains("path") && f["path"].is_string()) {
      uint64_t size = f.contains("size") && f["size"].is_number_unsigned() ? f["size"].get<uint64_t>() : 0;
      std::string digest = f.contains("sha256") && f["sha256"].is_string() ? f["sha256"].get<std::string>() : "";
      out[f["path"].get<std::string>()] = {size, digest};
    }
  }
  return out;
}

int kind_order(MetaDelta::Kind k) {
  switch (k) {
  case MetaDelta::Kind::material: return 0;
  case MetaDelta::Kind::informational: return 1;
  case MetaDelta::Kind::varied: return 2;
  case MetaDelta::Kind::ignored: return 3;
  case MetaDelta::Kind::unrecorded: return 4;
  case MetaDelta::Kind::volatile_field: return 5;
  }
  return 6;
}

// The config file's bytes and the result digest stand for the config keys the manifests also
// list one by one. Both manifests carry config_digest (the resolved config without its execution
// settings, train/settings.hpp): when it is equal, no key that can change a result differs, so a
// file that differs only in whitespace, a description or an execution setting is not counted; when
// it is not, the differing keys are the cause and the digests follow them. A digest is counted
// only where no key explains it (manifests without config_digest, or a digest of another rule).
void settle_config_digests(const ojson& a, const ojson& b, std::vector<MetaDelta>& deltas) {
  auto digest = [](const ojson& m) {
    return m.is_object() && m.contains("config_digest") && m["config_digest"].is_string()
               ? m["config_digest"].get<std::string>()
               : std::string();
  };
  const std::string da = digest(a), db = digest(b);
  if (da.empty() || db.empty()) {
    return;
  }
  // A data path that changed with the data's bytes the same (trainer_facts.hpp) is a key listed too.
  const bool keys_differ = std::any_of(deltas.begin(), deltas.end(), [](const MetaDelta& d) {
    return (d.kind == MetaDelta::Kind::material && has_prefix(d.key, "config")) ||
           (d.kind == MetaDelta::Kind::informational && is_data_path_key(d.key));
  });
  for (auto& d : deltas) {
    const bool file = d.key == "config_file.sha256";
    if (d.kind == MetaDelta::Kind::material && (file || d.key == "config_digest") && (da == db || keys_differ)) {
      d.kind = MetaDelta::Kind::informational;
      d.why = da == db ? "the file's bytes only: the resolved configs are equal but for execution settings"
                       : "a digest of the config keys listed";
    }
  }
}

// Why manifest `m` lacks framework fact `key` though the other run recorded it, or "" when
// nothing says the run could not record it. The capture writes the devices the parameters live on
// at optimizer steps, and nothing more once it stopped: a run with no step, or whose capture
// stopped or never started, did not find those facts different; it never looked.
std::string unrecorded_reason(const ojson& m, const std::string& key, const char* side) {
  if (key == "config_file.left_to_data") {
    return fmt::format("not recorded in {}: its reprun predates the record", side);
  }
  if (!has_prefix(key, "framework") || key == "framework.steps_seen" || key == "framework.capture_stopped") {
    return "";
  }
  if (!m.is_object() || !m.contains("framework") || !m["framework"].is_object()) {
    return fmt::format("not recorded in {}: it wrote no framework facts (torch never imported, or its capture "
                       "did not start)",
                       side);
  }
  const ojson& f = m["framework"];
  if (!f.contains("torch") && key != "framework.name" && key != "framework.python" &&
      !has_prefix(key, "framework.distributions")) {
    return fmt::format("not recorded in {}: it never imported torch (a plain Python program's facts hold its "
                       "interpreter and packages only)",
                       side);
  }
  if (f.contains("capture_stopped")) {
    return fmt::format("not recorded in {}: its capture stopped", side);
  }
  const ojson steps = f.value("steps_seen", ojson());
  if ((has_prefix(key, "framework.devices") || key == "framework.loss_dtype") && steps.is_number_integer() &&
      steps.get<long>() == 0) {
    return fmt::format("not recorded in {}: it made no optimizer step", side);
  }
  return "";
}

void mark_unrecorded(const ojson& a, const ojson& b, std::vector<MetaDelta>& deltas) {
  for (auto& d : deltas) {
    if (d.kind != MetaDelta::Kind::material && d.kind != MetaDelta::Kind::informational) {
      continue;
    }
    // The side that lacks the fact: the absent one, else the null one (a device's name is null).
    const char* missing = d.a == "(absent)" ? "A" : d.b == "(absent)" ? "B" : d.a == "null" ? "A" : d.b == "null" ? "B" : "";
    std::string why = *missing == 'A' ? unrecorded_reason(a, d.key, "A")
                      : *missing == 'B' ? unrecorded_reason(b, d.key, "B")
                                        : "";
    if (!why.empty()) {
      d.kind = MetaDelta::Kind::unrecorded;
      d.why = std::move(why);
    }
  }
}

} // namespace

// An --ignore-meta prefix that matches no key of either manifest is a mistyped key ("hots"), which
// would otherwise ignore nothing in silence: refused, with the nearest key.
void refuse_unknown_ignores(const ojson& a, const ojson& b, const std::map<std::string, std::string>& fa,
                            const std::map<std::string, std::string>& fb, const DiffOptions& opt) {
  for (const auto& p : opt.ignore_meta) {
    bool known = false;
    std::vector<std::string> names;
    for (const auto* flat : {&fa, &fb}) {
      for (const auto& [key, value] : *flat) {
        known = known || has_prefix(key, p);
        for (size_t dot = key.find('.'); names.size() < 4000; dot = key.find('.', dot + 1)) {
          names.push_back(key.substr(0, dot)); // every section on the way, and the key itself
          if (dot == std::string::npos) {
            break;
          }
        }
      }
    }
    // Compared file by file, not flattened: each section's files, where a manifest holds them (exec's
    // keep inputs' files in inputs.jsonl and only their digest here, a long list).
    struct FileSection {
      const char* key;
      const char* files;
      const char* digest; // "" none
    };
    for (const FileSection& f : {FileSection{"data.files", "/data/files", ""},
                                 FileSection{"inputs.files", "/inputs/files", "/inputs/files_sha256"}}) {
      auto has = [&](const ojson& m) {
        return m.is_object() && (m.contains(ojson::json_pointer(f.files)) ||
                                 (*f.digest != '\0' && m.contains(ojson::json_pointer(f.digest))));
      };
      // inputs.files.PATH: a file of inputs.jsonl, which the manifest need not list.
      known = known || ((has(a) || has(b)) && (has_prefix(f.key, p) || p.rfind(std::string(f.key) + ".", 0) == 0));
    }
    if (!known) {
      std::sort(names.begin(), names.end());
      names.erase(std::unique(names.begin(), names.end()), names.end());
      throw Error("--ignore-meta " + p, "matches no metadata key of either run, so it would ignore nothing" +
                                            did_you_mean(p, names));
    }
  }
}

std::pair<std::string, std::string> shown_difference(const std::string& a, const std::string& b, size_t width) {
  if (a.size() <= width && b.size() <= width) {
    return {a, b};
  }
  const ojson ja = ojson::parse(a, nullptr, false), jb = ojson::parse(b, nullptr, false);
  if (ja.is_array() && jb.is_array() && ja.size() == jb.size()) {
    std::string sa = "[", sb = "[";
    size_t shown = 0;
    for (size_t i = 0; i < ja.size() && shown < 3; ++i) {
      if (ja[i] != jb[i]) {
        const auto [ea, eb] = shown_difference(ja[i].dump(), jb[i].dump(), width / 2);
        sa += fmt::format("{}... {}: {}", shown ? " " : "", i, ea);
        sb += fmt::format("{}... {}: {}", shown ? " " : "", i, eb);
        ++shown;
      }
    }
    return {sa + " ...]", sb + " ...]"};
  }
  size_t first = 0;
  while (first < a.size() && first < b.size() && a[first] == b[first]) {
    ++first;
  }
  const size_t before = width / 3;
  const size_t from = first > before ? first - before : 0;
  auto window = [&](const std::string& v) {
    std::string w = v.substr(std::min(from, v.size()), width);
    return (from > 0 ? "..." : "") + w + (from + width < v.size() ? "..." : "");
  };
  return {window(a), window(b)};
}

// exec records a pinned variable twice, under env.NAME and pins.NAME (its value and source): where
// env.NAME is counted, the pins keys of the same variable are listed, not counted again.
void count_pins_once(std::vector<MetaDelta>& deltas) {
  for (auto& d : deltas) {
    if (d.kind != MetaDelta::Kind::material || d.key.rfind("pins.", 0) != 0) {
      continue;
    }
    const std::string name = d.key.substr(5, d.key.find('.', 5) - 5);
    const bool env_counted = std::any_of(deltas.begin(), deltas.end(), [&](const MetaDelta& e) {
      return e.kind == MetaDelta::Kind::material && e.key == "env." + name;
    });
    if (env_counted) {
      d.kind = MetaDelta::Kind::informational;
      d.why = "how env." + name + " was set; counted there";
    }
  }
}

// "a built-in trainer run" or "a program run by reprun exec", from the manifest's kind.
std::string kind_phrase(const ojson& m) {
  const std::string k = m.is_object() ? m.value("kind", "") : "";
  return k == "train" ? "a built-in trainer run (reprun train)" : k == "exec" ? "a program run by reprun exec" : k;
}

namespace {

// Another Python interpreter (pyenv's against the system's, another virtual environment): its
// installed distributions are its own, so that each one that differs follows it (named under the
// interpreter's cause, audit/cause.cpp), not 100 counted lines of packages the program may not import.
void settle_interpreter(std::vector<MetaDelta>& out) {
  const bool other_python = std::any_of(out.begin(), out.end(), [](const MetaDelta& m) {
    return m.kind == MetaDelta::Kind::material && has_prefix(m.key, "program.interpreter");
  });
  // The distributions' digest is of their names and versions: where those are named, it follows them.
  const bool packages_named = std::any_of(out.begin(), out.end(), [](const MetaDelta& m) {
    return m.kind == MetaDelta::Kind::material && has_prefix(m.key, "framework.distributions.packages");
  });
  for (auto& m : out) {
    if (packages_named && !other_python && m.kind == MetaDelta::Kind::material && m.key == "framework.distributions.sha256") {
      m.kind = MetaDelta::Kind::informational;
      m.why = "follows the distributions named";
    }
  }
  if (!other_python) {
    return;
  }
  for (auto& m : out) {
    if (m.kind == MetaDelta::Kind::material &&
        (has_prefix(m.key, "framework.distributions.packages") || m.key == "framework.distributions.sha256")) {
      m.kind = MetaDelta::Kind::informational;
      m.why = "follows the interpreter: each Python has its own installed distributions";
    }
    if (m.kind == MetaDelta::Kind::material && m.key == "program.argv") { // python3 against venv/bin/python3
      const ojson a = split_long_options(m.a), b = split_long_options(m.b);
      if (!a.is_null() && !b.is_null() && a.size() == b.size() && !a.empty() &&
          std::equal(a.begin() + 1, a.end(), b.begin() + 1)) {
        m.kind = MetaDelta::Kind::informational;
        m.why = "follows the interpreter: the first argument names it";
      }
    }
  }
}

} // namespace

std::vector<MetaDelta> diff_manifests(const ojson& a, const ojson& b, const DiffOptions& opt,
                                      DatasetDelta& dataset) {
  const std::string kind_a = a.is_object() ? a.value("kind", "") : "", kind_b = b.is_object() ? b.value("kind", "") : "";
  if (!kind_a.empty() && !kind_b.empty() && kind_a != kind_b) {
    // Runs of different kinds share few facts, and what they share means other things: one line.
    MetaDelta d;
    d.key = "kind";
    d.a = ojson(kind_a).dump();
    d.b = ojson(kind_b).dump();
    d.category = "kind";
    d.rank = 0;
    d.why = "A is " + kind_phrase(a) + ", B " + kind_phrase(b) + ": nothing else of their records is compared";
    return {d};
  }
  std::map<std::string, std::string> fa, fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  refuse_unknown_ignores(a, b, fa, fb, opt);
  std::vector<MetaDelta> out;
  auto ia = fa.begin();
  auto ib = fb.begin();
  while (ia != fa.end() || ib != fb.end()) {
    MetaDelta d;
    if (ib == fb.end() || (ia != fa.end() && ia->first < ib->first)) {
      d.key = ia->first;
      d.a = ia->second;
      d.b = "(absent)";
      ++ia;
    } else if (ia == fa.end() || ib->first < ia->first) {
      d.key = ib->first;
      d.a = "(absent)";
      d.b = ib->second;
      ++ib;
    } else {
      bool same = ia->second == ib->second;
      d.key = ia->first;
      d.a = ia->second;
      d.b = ib->second;
      ++ia;
      ++ib;
      if (same) {
        continue;
      }
    }
    classify(d, opt);
    out.push_back(d);
  }
  for (const char* section : {"data"}) {
    auto ma = file_map(a, section), mb = file_map(b, section);
    for (const auto& [path, v] : mb) {
      auto it = ma.find(path);
      if (it == ma.end()) {
        dataset.added.push_back({path, 0, v.first});
      } else if (it->second != v) {
        dataset.changed.push_back({path, it->second.first, v.first});
      }
    }
    for (const auto& [path, v] : ma) {
      if (!mb.count(path)) {
        dataset.removed.push_back({path, v.first, 0});
      }
    }
  }
  settle_data_names(a, b, out, dataset);
  settle_config_digests(a, b, out);
  settle_data_effects(a, b, out);
  settle_trainer_facts(a, b, out);
  mark_unrecorded(a, b, out);
  count_pins_once(out);
  settle_interpreter(out);
  if (dataset.any()) {
    MetaDelta d;
    d.key = "data.files";
    d.a = std::to_string(file_map(a, "data").size()) + " files";
    d.b = std::to_string(file_map(b, "data").size()) + " files";
    classify(d, opt);
    if (dataset.same_bytes && d.kind == MetaDelta::Kind::material) {
      d.kind = MetaDelta::Kind::informational;
      d.why = "the same bytes in the same order under other file names: the same rows";
    }
    out.push_back(d);
  }
  sort_deltas(out);
  return out;
}

void sort_deltas(std::vector<MetaDelta>& deltas) {
  std::stable_sort(deltas.begin(), deltas.end(), [](const MetaDelta& x, const MetaDelta& y) {
    if (kind_order(x.kind) != kind_order(y.kind)) {
      return kind_order(x.kind) < kind_order(y.kind);
    }
    return x.rank < y.rank;
  });
}

} // namespace reprun
