// What a training run records about itself: see src/train/run_record.hpp.
#include "run_record.hpp"

#include "reprun/core/error.hpp"
#include "reprun/meta/snapshot.hpp"
#include "reprun/meta/world.hpp"
#include "reprun/record/steplog.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/data.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/train/settings.hpp"

#include <cmath>
#include <ctime>
#include <filesystem>
#include <limits>

namespace reprun::train_detail {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

// Every stream with its key: the data's streams (split, synthetic data) draw under data.seed when
// the config sets one, the others under the experiment seed.
ojson stream_table(const Config& cfg) {
  ojson s;
  const std::pair<const char*, Stream> streams[] = {
      {"init", Stream::init},       {"split", Stream::split},           {"shuffle", Stream::shuffle},
      {"dropout", Stream::dropout}, {"data_means", Stream::data_means}, {"data_noise", Stream::data_noise},
      {"data_labels", Stream::data_labels}};
  for (const auto& [name, id] : streams) {
    const bool data_stream = id == Stream::split || id == Stream::data_means || id == Stream::data_noise ||
                             id == Stream::data_labels;
    const uint64_t seed = data_stream ? data_seed(cfg) : cfg.seed;
    s[name] = {{"generator", "philox4x32-10"},
               {"key", {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}},
               {"counter_word3", static_cast<uint32_t>(id)}};
  }
  return s;
}

} // namespace

std::string default_run_dir(const std::string& config_path) {
  std::string stem = config_path.empty() ? "run" : fs::path(config_path).stem().string();
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  std::string base = (fs::path("runs") / (stem + "-" + buf)).string();
  std::string dir = base;
  std::error_code ec;
  for (int i = 2; fs::exists(dir, ec); ++i) {
    dir = base + "-" + std::to_string(i);
  }
  return dir;
}

ojson build_manifest(const TrainOptions& opt, const Config& cfg, const std::string& config_text_digest,
                     const Dataset& data, const Plan& plan, Mlp& model, const Backend& backend) {
  const World& world = opt.world ? *opt.world : real_world();
  ojson m;
  m["format"] = k_run_format;
  m["kind"] = "train";
  m["created"] = world.now_iso8601();
  m["command_line"] = opt.command_line;
  m["working_directory"] = world.current_directory();
  m["config_file"] = {{"path", cfg.source},
                      {"dir", cfg.base_dir},
                      {"sha256", config_text_digest},
                      {"overrides", opt.overrides},
                      {"left_to_data", data.left_to_data}};
  ojson resolved = config_to_json(cfg);
  m["config"] = resolved;
  m["config_digest"] = result_config_digest(resolved.dump());
  m["config_key_digests"] = result_key_digests(resolved.dump());
  m["seeds"] = {{"experiment", cfg.seed}, {"drawn_from_os", cfg.seed_drawn}};
  if (cfg.data.seed) {
    m["seeds"]["data"] = *cfg.data.seed;
  }
  m["seeds"]["streams"] = stream_table(cfg);
  if (!opt.search_trial.empty()) {
    m["search"] = ojson::parse(opt.search_trial);
  }
  ojson files = ojson::array();
  for (const auto& f : data.files) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  }
  const auto [smallest, largest] = class_count_range(data);
  ojson facts = {{"kind", cfg.data.kind},
                 {"fingerprint", data.fingerprint},
                 {"samples", data.n},
                 {"features", data.features},
                 {"classes", data.classes},
                 {"class_samples", {{"min", smallest}, {"max", largest}}},
                 {"validation_samples", plan.val_samples}};
  if (data.label_column >= 0) {
    facts["label_column"] = data.label_column;
    if (!data.label_name.empty()) {
      facts["label_name"] = data.label_name;
    }
  }
  facts["files"] = files;
  m["data"] = facts;
  ojson tensors = ojson::array();
  for (const auto& p : model.params()) {
    tensors.push_back({{"name", p.name}, {"shape", p.shape}});
  }
  m["model"] = {{"parameters", model.parameter_count()}, {"tensors", tensors}};
  m["plan"] = {{"train_samples", plan.train_samples},
               {"val_samples", plan.val_samples},
               {"steps_per_epoch", plan.steps_per_epoch},
               {"total_steps", plan.total_steps},
               {"reduction", cfg.determinism.reduction == "ordered"
                                 ? "one fused multiply-add chain per gradient element, in sample order"
                                 : "chunk partials of 8 samples added in completion order (non-deterministic)"}};
  SnapshotOptions so;
  so.env_allow = opt.env_allow;
  so.kernels = backend.kernels();
  ojson snap = machine_snapshot(world, so);
  for (auto it = snap.begin(); it != snap.end(); ++it) {
    m[it.key()] = *it;
  }
  m["resumes"] = ojson::array();
  return m;
}

Fault read_fault(const World& world) {
  Fault f;
  const auto env = world.environment();
  const auto it = env.find(k_selftest_fault_variable);
  if (it == env.end() || it->second.empty()) {
    return f;
  }
  f.spec = it->second;
  const auto bad = [&] {
    return Error(k_selftest_fault_variable, "'" + f.spec + "': expected flip:STEP:TENSOR, drop-state or restart");
  };
  if (f.spec == "drop-state") {
    f.drop_state = true;
  } else if (f.spec == "restart") {
    f.restart = true;
  } else if (f.spec.rfind("flip:", 0) == 0) {
    const size_t colon = f.spec.find(':', 5);
    if (colon == std::string::npos || colon + 1 == f.spec.size()) {
      throw bad();
    }
    char* end = nullptr;
    f.flip_step = std::strtol(f.spec.c_str() + 5, &end, 10);
    if (end != f.spec.c_str() + colon || f.flip_step < 1) {
      throw bad();
    }
    f.flip_tensor = f.spec.substr(colon + 1);
  } else {
    throw bad();
  }
  return f;
}

RunSummary summary_of(const TrainResult& r, long total, const AppendLog& steps, const AppendLog& evals) {
  RunSummary s;
  s.status = r.status;
  s.steps = r.steps;
  s.total_steps = total;
  if (r.has_train_loss) {
    s.train_loss = r.train_loss;
  }
  s.has_eval_fields = true;
  if (r.has_val) {
    s.val_loss = r.val_loss;
    s.val_accuracy = r.val_accuracy;
  }
  s.wall_seconds = r.wall_seconds;
  s.steps_per_second = r.steps_per_second;
  s.gemm_seconds = r.gemm_seconds;
  s.steps_log = steps.facts();
  s.evals_log = evals.facts();
  return s;
}

std::optional<double> summary_number(const ojson& summary, const char* key) {
  auto it = summary.find(key);
  if (it == summary.end() || it->is_null()) {
    return std::nullopt;
  }
  if (it->is_number()) {
    return it->get<double>();
  }
  const std::string v = it->is_string() ? it->get<std::string>() : "";
  if (v == "NaN") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  if (v == "Infinity" || v == "-Infinity") {
    return v[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  return std::nullopt;
}

void metrics_from_logs(const RunDir& run, TrainResult& r) {
  auto last_line = [&](RunFile f) {
    std::string last;
    std::error_code ec;
    if (std::filesystem::exists(run.file(f), ec)) {
      StepLogReader reader(run.file(f));
      std::string_view line;
      while (reader.next(line)) {
        last.assign(line);
      }
    }
    return last;
  };
  double loss = 0.0;
  if (quick_loss(last_line(RunFile::steps), loss)) {
    r.train_loss = loss;
    r.has_train_loss = true;
  }
  const ojson e = ojson::parse(last_line(RunFile::evals), nullptr, false);
  if (e.is_object()) {
    const auto vl = summary_number(e, "val_loss"), va = summary_number(e, "val_accuracy");
    if (vl && va) {
      r.has_val = true;
      r.val_loss = *vl;
      r.val_accuracy = *va;
    }
  }
}

TrainResult completed_run(const std::string& dir, const ojson& summary) {
  TrainResult r;
  r.status = "complete";
  r.already_complete = true;
  r.run_dir = dir;
  r.steps = summary.value("steps", 0L);
  const auto train_loss = summary_number(summary, "train_loss");
  r.has_train_loss = train_loss.has_value();
  r.train_loss = train_loss.value_or(0.0);
  const auto val_loss = summary_number(summary, "val_loss");
  const auto val_accuracy = summary_number(summary, "val_accuracy");
  r.has_val = val_loss && val_accuracy;
  r.val_loss = val_loss.value_or(0.0);
  r.val_accuracy = val_accuracy.value_or(0.0);
  r.wall_seconds = summary_number(summary, "wall_seconds").value_or(0.0);
  r.steps_per_second = summary_number(summary, "steps_per_second").value_or(0.0);
  return r;
}

} // namespace reprun::train_detail
