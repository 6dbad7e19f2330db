// Phase 1a of a training run (session.hpp): the config, and for a resume the run it continues.
#include "session.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/train/launch.hpp"
#include "reprun/train/settings.hpp"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace reprun::train_detail {

namespace {

using ojson = nlohmann::ordered_json;

// A resume continues the run as it was set up: an execution setting that the given config sets
// otherwise is not applied, and the user is told how to apply it.
void note_unapplied_settings(const Session& s, const ojson& given, const ojson& used) {
  for (const auto& setting : execution_settings()) {
    std::string pointer = "/" + std::string(setting.key);
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    const ojson::json_pointer p(pointer);
    const ojson g = given.contains(p) ? given.at(p) : ojson(nullptr);
    const ojson u = used.contains(p) ? used.at(p) : ojson(nullptr);
    if (g != u) {
      s.note(fmt::format("{}: {} is {} there but {} in the run; a resume keeps the run's (--set {}={} applies "
                         "the config's)",
                         s.opt.config_path, setting.key, g.dump(), u.dump(), setting.key, g.dump()));
    }
  }
}

// The config a manifest records must be the one its config_digest (to which the run's checkpoints
// are bound) was computed from: a value edited in the manifest since would be trained on from the
// checkpoints of another experiment. Refused, naming the key where the run recorded each key's
// digest (config_key_digests).
void refuse_edited_config(const ojson& config, const ojson& manifest, const std::string& mpath) {
  const std::string text = config.dump();
  if (result_config_digest(text) == manifest["config_digest"].get<std::string>()) {
    return;
  }
  std::vector<std::string> keys;
  const ojson recorded = manifest.value("config_key_digests", ojson());
  if (recorded.is_object()) {
    std::map<std::string, std::string> digests;
    for (auto it = recorded.begin(); it != recorded.end(); ++it) {
      digests[it.key()] = it->is_string() ? it->get<std::string>() : "";
    }
    keys = keys_not_matching(text, digests);
  }
  const std::string why = "changed since the run started: the config no longer matches its config_digest, to which "
                          "the run's checkpoints are bound, so a resume would continue another experiment from them; "
                          "restore the value, or start a new run";
  if (keys.empty()) {
    throw Error(mpath, "config: " + why);
  }
  std::string named;
  for (const auto& k : keys) {
    named += (named.empty() ? "config." : ", config.") + k;
  }
  throw Error(mpath, named + ": " + why);
}

// The keys besides the config that a resume reads or extends, of the types reprun wrote them with:
// a manifest edited since is refused naming the key, not met with the JSON library's message that
// names no file.
void check_resumed_keys(const ojson& m, const std::string& mpath) {
  auto need = [&](const std::string& key, bool ok, const char* what) {
    if (!ok) {
      throw Error(mpath, fmt::format("{}: is not {}, as reprun wrote it (the manifest was edited); restore it, or "
                                     "start a new run",
                                     key, what));
    }
  };
  auto strings = [&](const char* object, std::initializer_list<const char*> keys) {
    if (!m.contains(object)) {
      return;
    }
    need(object, m[object].is_object(), "an object");
    for (const char* k : keys) {
      need(fmt::format("{}.{}", object, k), !m[object].contains(k) || m[object][k].is_string(), "a string");
    }
  };
  strings("config_file", {"path", "dir"});
  strings("data", {"fingerprint"});
  need("plan", !m.contains("plan") || m["plan"].is_object(), "an object");
  need("resumes", !m.contains("resumes") || m["resumes"].is_array(), "a list");
}

// The config of a resumed or forked run: the source's, with --set changing execution settings
// only (anything else would make the continuation another experiment).
Config resumed_config(Session& s) {
  const std::string mpath = s.source->file(RunFile::manifest);
  if (s.manifest.value("kind", "") != "train" || !s.manifest.contains("config") ||
      !s.manifest.value("config_digest", ojson()).is_string()) {
    throw Error(mpath, "not a run of `reprun train`; only those can be resumed");
  }
  check_resumed_keys(s.manifest, mpath);
  ojson doc = s.manifest["config"];
  refuse_edited_config(doc, s.manifest, mpath);
  ojson given_json; // the config given with --resume, resolved (null without one)
  if (!s.opt.config_path.empty()) {
    Config given = load_config_file(s.opt.config_path, s.opt.overrides);
    const Config ran = config_from_json(doc, mpath + ": config");
    if (given.seed_drawn) {
      given.seed = ran.seed;
    }
    auto refuse_if_different = [&](const Config& c) {
      if (auto d = first_result_difference(doc.dump(), config_to_json(c).dump())) {
        throw Error(s.opt.config_path, fmt::format("differs from the configuration of the run being resumed ({}): "
                                                   "{} is {} here, {} in the run; resume without a config, or "
                                                   "start a new run",
                                                   mpath, d->key, d->b, d->a));
      }
    };
    // What the config states, with what it leaves to the data taken from the run; then, the data
    // read as this config reads it, the config resolved as the run's was.
    Config stated = given;
    take_data_decisions(stated.data, ran.data);
    refuse_if_different(stated);
    if (given.data.kind != "synthetic") {
      s.data = load_dataset(given, nullptr);
      s.data_loaded = true;
      refuse_if_different(given);
    }
    given_json = config_to_json(given);
  }
  for (const auto& o : s.opt.overrides) {
    std::string key = o.substr(0, o.find('='));
    if (!is_execution_setting(key)) {
      throw Error("--set " + o, "a resumed run may change execution settings only (threads, trace, run length, "
                                "accumulation, checkpoint and eval cadence); '" + key +
                                    "' would make it another experiment: start a new run");
    }
    apply_override(doc, o);
  }
  Config cfg = config_from_json(doc, mpath + ": config");
  if (!given_json.is_null()) {
    note_unapplied_settings(s, given_json, config_to_json(cfg));
  }
  cfg.source = s.manifest["config_file"].value("path", mpath);
  cfg.base_dir = s.manifest["config_file"].value("dir", "");
  if (!s.opt.overrides.empty()) {
    ojson resolved = config_to_json(cfg);
    if (result_config_digest(resolved.dump()) != s.digest()) { // the list and the digest disagree: a bug
      throw Error(mpath, "internal: an execution setting changed the result digest");
    }
    s.manifest["config"] = resolved;
  }
  return cfg;
}

} // namespace

void resolve_config(Session& s) {
  const TrainOptions& opt = s.opt;
  s.resuming = !opt.resume_dir.empty();
  s.forking = s.resuming && !opt.out_dir.empty();
  if (opt.from_step >= 0 && !s.forking) {
    throw Error("--from-step", "needs --resume RUN_DIR and -o NEW_RUN_DIR (a fork)");
  }
  if (!s.resuming) {
    s.cfg = load_config_file(opt.config_path, opt.overrides);
    s.config_text_digest = sha256_file(opt.config_path);
  } else {
    s.source = RunDir::open(opt.resume_dir);
    s.manifest = s.source->read_manifest();
    // A damaged log is an error here: resuming would build on records that are not the run's.
    const LogCheck logs = s.source->verify_logs(s.source->read_summary());
    if (!logs.verified) {
      s.note(logs.note);
    }
    s.cfg = resumed_config(s);
  }
  if (opt.threads > 0) {
    s.cfg.determinism.threads = opt.threads;
  }
  if (!opt.device.empty()) {
    s.cfg.determinism.device = opt.device;
  }
  if (launched_rank() >= 0) {
    s.cfg.determinism.ranks = std::max(1, launched_size()); // mpirun -np, srun -n: the launch decides
  } else if (opt.ranks > 0) {
    s.cfg.determinism.ranks = opt.ranks;
  }
  s.fault = read_fault(opt.world ? *opt.world : real_world());
}

} // namespace reprun::train_detail
