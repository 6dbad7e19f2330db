// The built-in trainer's manifest rules: see trainer_facts.hpp. The reasons given here are the
// ones docs/determinism.md ("What diff counts for the built-in trainer") states.
#include "audit/trainer_facts.hpp"

#include <algorithm>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

bool has_prefix(const std::string& key, const std::string& p) {
  return key == p || (key.size() > p.size() && key.compare(0, p.size(), p) == 0 && key[p.size()] == '.');
}

std::string text_at(const ojson& m, const char* pointer) {
  const ojson::json_pointer p(pointer);
  if (!m.is_object() || !m.contains(p) || !m.at(p).is_string()) {
    return "";
  }
  return m.at(p).get<std::string>();
}

// The data files' contents in the order they are read (the manifest lists them by name, which is
// the order the trainer reads a folder's files in): sizes and SHA-256s, no names.
std::vector<std::pair<uint64_t, std::string>> contents(const ojson& m) {
  std::vector<std::pair<uint64_t, std::string>> out;
  const ojson::json_pointer p("/data/files");
  if (!m.contains(p) || !m.at(p).is_array()) {
    return out;
  }
  for (const auto& f : m.at(p)) {
    if (!f.is_object() || !f.contains("sha256") || !f["sha256"].is_string()) {
      return {};
    }
    out.emplace_back(f.value("size", uint64_t{0}), f["sha256"].get<std::string>());
  }
  return out;
}

// The config keys the run's config left to its data ("data.classes": 0 in the file), as manifest
// keys ("config.data.classes"); empty for a run whose reprun did not record them.
std::vector<std::string> left_to_data(const ojson& m) {
  std::vector<std::string> keys;
  const ojson::json_pointer p("/config_file/left_to_data");
  if (m.contains(p) && m.at(p).is_array()) {
    for (const auto& k : m.at(p)) {
      if (k.is_string()) {
        keys.push_back("config." + k.get<std::string>());
      }
    }
  }
  return keys;
}

bool used_gpu(const ojson& m) {
  if (text_at(m, "/config/determinism/device") == "cuda") {
    return true;
  }
  const ojson resumes = m.value("resumes", ojson::array());
  return resumes.is_array() && std::any_of(resumes.begin(), resumes.end(), [](const ojson& r) {
           return r.is_object() && r.value("device", "") == "cuda";
         });
}

bool material_key(const std::vector<MetaDelta>& deltas, const std::string& prefix) {
  return std::any_of(deltas.begin(), deltas.end(), [&](const MetaDelta& d) {
    return d.kind == MetaDelta::Kind::material && has_prefix(d.key, prefix);
  });
}

} // namespace

bool both_trainer_runs(const ojson& a, const ojson& b) {
  return a.is_object() && b.is_object() && a.value("kind", "") == "train" && b.value("kind", "") == "train";
}

bool is_data_path_key(const std::string& key) {
  return key == "config.data.path" || key == "config.data.images" || key == "config.data.labels";
}

void settle_data_names(const ojson& a, const ojson& b, std::vector<MetaDelta>& deltas, DatasetDelta& dataset) {
  if (!both_trainer_runs(a, b)) {
    return;
  }
  const std::string fa = text_at(a, "/data/fingerprint"), fb = text_at(b, "/data/fingerprint");
  const auto ca = contents(a);
  const bool same = !fa.empty() && fa == fb;
  // A fingerprint hashes the files' names too: renamed files with the same bytes in the same order
  // give another one, and the very same rows.
  const bool renamed = !same && !ca.empty() && ca == contents(b);
  if (!same && !renamed) {
    return;
  }
  const char* why = same ? "the data's path only: its fingerprint is equal"
                         : "the same bytes in the same order under other file names: the same rows";
  for (auto& d : deltas) {
    if (d.kind == MetaDelta::Kind::material &&
        (is_data_path_key(d.key) || (renamed && d.key == "data.fingerprint"))) {
      d.kind = MetaDelta::Kind::informational;
      d.why = why;
    }
  }
  dataset.same_bytes = renamed && dataset.any();
}

void settle_data_effects(const ojson& a, const ojson& b, std::vector<MetaDelta>& deltas) {
  if (!both_trainer_runs(a, b) || !material_key(deltas, "data.fingerprint")) {
    return;
  }
  // Each value the data decides, with the config keys that also decide it: while one of those
  // differs too, the value stays with the config's cause.
  const std::vector<std::pair<std::string, std::vector<std::string>>> derived = {
      {"plan.train_samples", {"config.data.validation_fraction"}},
      {"plan.val_samples", {"config.data.validation_fraction"}},
      {"plan.steps_per_epoch", {"config.data.validation_fraction", "config.training.batch_size"}},
      {"model.parameters", {"config.model.hidden"}},
      {"model.tensors", {"config.model.hidden"}},
  };
  const auto la = left_to_data(a), lb = left_to_data(b);
  for (auto& d : deltas) {
    if (d.kind != MetaDelta::Kind::material) {
      continue;
    }
    bool follows = std::find(la.begin(), la.end(), d.key) != la.end() &&
                   std::find(lb.begin(), lb.end(), d.key) != lb.end();
    for (const auto& [key, also] : derived) {
      if (has_prefix(d.key, key)) {
        follows = std::none_of(also.begin(), also.end(), [&](const std::string& k) { return material_key(deltas, k); });
      }
    }
    if (follows) {
      d.category = "dataset";
      d.rank = 1;
      d.why = "follows the data";
    }
  }
}

void settle_trainer_facts(const ojson& a, const ojson& b, std::vector<MetaDelta>& deltas) {
  if (!both_trainer_runs(a, b)) {
    return;
  }
  const bool cpu_only = !used_gpu(a) && !used_gpu(b);
  // In docs/determinism.md's words; host.arch is not here: other architectures are not guaranteed.
  const std::vector<std::pair<std::string, const char*>> facts = {
      {"code", "the working folder's git state: the built-in trainer's code is reprun's build (reprun.*)"},
      {"env", "the built-in trainer reads no variable of the environment that can change its bits"},
      {"host.os", "the built-in trainer's bits do not depend on the operating system"},
      {"host.kernel", "the built-in trainer's bits do not depend on the operating system"},
      {"host.libc", "own exp, log and tanh: no function of libc or libm reaches the weights"},
      {"host.logical_cores", "work is split in fixed chunks whatever the number of cores"},
      {"host.memory", "the built-in trainer's bits do not depend on the memory size"},
      {"host.cpu_model", "every kernel set gives the same bits, on AMD and Intel alike (reprun.kernels)"},
      {"host.isa", "every kernel set gives the same bits, on AMD and Intel alike (reprun.kernels)"},
  };
  for (auto& d : deltas) {
    if (d.kind != MetaDelta::Kind::material) {
      continue;
    }
    for (const auto& [prefix, why] : facts) {
      if (has_prefix(d.key, prefix)) {
        d.kind = MetaDelta::Kind::informational;
        d.why = why;
      }
    }
    if (cpu_only && has_prefix(d.key, "gpu")) {
      d.kind = MetaDelta::Kind::informational;
      d.why = "both runs computed on the CPU";
    }
  }
}

} // namespace reprun
