// The training loop, top to bottom: resolve config, load data, build the model, create (or reopen)
// the run directory, then step, log, evaluate and checkpoint until done or stopped.
#include "reprun/trainer.hpp"

#include "reprun/atomic_file.hpp"
#include "reprun/checkpoint.hpp"
#include "reprun/config.hpp"
#include "reprun/data.hpp"
#include "reprun/hash.hpp"
#include "reprun/model.hpp"
#include "reprun/optimizer.hpp"
#include "reprun/record.hpp"
#include "reprun/rng.hpp"
#include "reprun/snapshot.hpp"
#include "reprun/threadpool.hpp"
#include "reprun/world.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

std::string result_config_digest(const std::string& resolved_config_json) {
  ojson c = ojson::parse(resolved_config_json);
  // Keys guaranteed not to change a result (docs/determinism.md).
  if (c.contains("determinism")) {
    c["determinism"].erase("threads");
    c["determinism"].erase("trace");
  }
  if (c.contains("training")) {
    // The run length does not change any step: a checkpoint at step s continues any longer run.
    c["training"].erase("epochs");
    c["training"].erase("steps");
    // Ordered reduction is one chain per element in sample order, whatever the micro-batch split.
    c["training"].erase("accumulation");
    c["training"].erase("checkpoint_every");
    c["training"].erase("checkpoint_keep");
    c["training"].erase("eval_every");
  }
  return sha256_hex(c.dump());
}

namespace {

struct Plan {
  long train_samples = 0;
  long val_samples = 0;
  long steps_per_epoch = 0;
  long total_steps = 0;
};

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

ojson stream_table(uint64_t seed) {
  ojson s;
  const std::pair<const char*, Stream> streams[] = {
      {"init", Stream::init},       {"split", Stream::split},           {"shuffle", Stream::shuffle},
      {"dropout", Stream::dropout}, {"data_means", Stream::data_means}, {"data_noise", Stream::data_noise},
      {"data_labels", Stream::data_labels}};
  for (const auto& [name, id] : streams) {
    s[name] = {{"generator", "philox4x32-10"},
               {"key", {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}},
               {"counter_word3", static_cast<uint32_t>(id)}};
  }
  return s;
}

ojson build_manifest(const TrainOptions& opt, const Config& cfg, const std::string& config_text_digest,
                     const Dataset& data, const Plan& plan, Mlp& model) {
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
                      {"overrides", opt.overrides}};
  ojson resolved = config_to_json(cfg);
  m["config"] = resolved;
  m["config_digest"] = result_config_digest(resolved.dump());
  m["seeds"] = {{"experiment", cfg.seed}, {"drawn_from_os", cfg.seed_drawn}, {"streams", stream_table(cfg.seed)}};
  ojson files = ojson::array();
  for (const auto& f : data.files) {
    files.push_back({{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}});
  }
  m["data"] = {{"kind", cfg.data.kind},
               {"fingerprint", data.fingerprint},
               {"samples", data.n},
               {"features", data.features},
               {"classes", data.classes},
               {"files", files}};
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
  ojson snap = machine_snapshot(world, so);
  for (auto it = snap.begin(); it != snap.end(); ++it) {
    m[it.key()] = *it;
  }
  m["resumes"] = ojson::array();
  return m;
}

void write_summary(const std::string& dir, const TrainResult& r, long total) {
  ojson s;
  s["format"] = k_run_format;
  s["status"] = r.status;
  s["steps"] = r.steps;
  s["total_steps"] = total;
  s["train_loss"] = std::isfinite(r.train_loss) ? ojson(r.train_loss) : ojson(json_number(r.train_loss));
  s["val_loss"] = r.has_val ? ojson(r.val_loss) : ojson(nullptr);
  s["val_accuracy"] = r.has_val ? ojson(r.val_accuracy) : ojson(nullptr);
  s["wall_seconds"] = r.wall_seconds;
  s["steps_per_second"] = r.steps_per_second;
  write_file_atomic((fs::path(dir) / "summary.json").string(), s.dump(2) + "\n");
}

std::vector<NamedTensor> checkpoint_tensors(Mlp& model, Optimizer& optim) {
  // Names from Mlp::params(), which lists each layer's weight then bias.
  const auto params = model.params();
  std::vector<NamedTensor> t;
  for (size_t l = 0; l < model.layers().size(); ++l) {
    t.push_back({params[2 * l].name, &model.layers()[l].w});
    t.push_back({params[2 * l + 1].name, &model.layers()[l].b});
  }
  for (const auto& s : optim.state()) {
    t.push_back({s.name, s.data});
  }
  return t;
}

// Checksum and norm of every weight tensor, one task per tensor (each computed whole by one
// thread). `optim` supplies norms summed during its last update pass (the same order as
// weight_norm); nullptr computes them here.
void tensor_sums(const std::vector<ParamRef>& params, const Optimizer* optim, ThreadPool& pool,
                 std::vector<TensorSum>& out) {
  out.resize(params.size());
  pool.parallel_for(static_cast<int>(params.size()), [&](int i, int) {
    const auto& p = params[static_cast<size_t>(i)];
    out[static_cast<size_t>(i)] = {p.name, xxh3_64(p.data, p.size * sizeof(float)),
                                   optim ? optim->norm(static_cast<size_t>(i)) : weight_norm(p.data, p.size)};
  });
}

void prune_checkpoints(const std::string& run_dir, long keep) {
  auto list = list_checkpoints(run_dir);
  for (size_t i = static_cast<size_t>(keep); i < list.size(); ++i) {
    std::error_code ec;
    fs::remove(list[i], ec);
  }
}

} // namespace

TrainResult run_training(const TrainOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  const bool resuming = !opt.resume_dir.empty();
  Config cfg;
  ojson manifest;
  std::string config_digest_text;
  std::string run_dir;
  if (resuming) {
    run_dir = opt.resume_dir;
    manifest = read_manifest(run_dir);
    std::string mpath = (fs::path(run_dir) / "manifest.json").string();
    if (manifest.value("kind", "") != "train" || !manifest.contains("config")) {
      throw Error(mpath, "not a run of `reprun train`; only those can be resumed");
    }
    cfg = config_from_json(manifest["config"], mpath + ": config");
    cfg.source = manifest["config_file"].value("path", mpath);
    cfg.base_dir = manifest["config_file"].value("dir", "");
    if (!opt.config_path.empty()) {
      Config given = load_config_file(opt.config_path, opt.overrides);
      given.seed = given.seed_drawn ? cfg.seed : given.seed;
      if (result_config_digest(config_to_json(given).dump()) != manifest.value("config_digest", "")) {
        throw Error(opt.config_path, "differs from the configuration of the run being resumed (" + mpath +
                                         "); resume without a config, or start a new run");
      }
    }
    ojson summary = read_summary(run_dir);
    if (summary.value("status", "") == "complete") {
      TrainResult r;
      r.status = "complete";
      r.run_dir = run_dir;
      r.steps = summary.value("steps", 0L);
      if (opt.on_note) {
        opt.on_note("run is already complete: " + run_dir);
      }
      return r;
    }
  } else {
    cfg = load_config_file(opt.config_path, opt.overrides);
    config_digest_text = sha256_file(opt.config_path);
  }
  if (opt.threads > 0) {
    cfg.determinism.threads = opt.threads;
  }
  ThreadPool pool(cfg.determinism.threads);

  Dataset data = load_dataset(cfg, &pool);
  if (resuming && manifest["data"].value("fingerprint", "") != data.fingerprint) {
    throw Error(cfg.source, "the dataset changed since this run started (fingerprint " +
                                manifest["data"].value("fingerprint", "") + " -> " + data.fingerprint +
                                "); resuming would not reproduce the run");
  }
  Split split = split_dataset(data, cfg.data.validation_fraction, cfg.seed);
  if (split.train.empty()) {
    throw Error(cfg.source, "data.validation_fraction: leaves no training samples");
  }
  if (cfg.training.batch_size > static_cast<long>(split.train.size())) {
    throw Error(cfg.source, fmt::format("training.batch_size: {} is larger than the {} training samples",
                                        cfg.training.batch_size, split.train.size()));
  }
  if (cfg.data.normalize == "standard") {
    normalize_standard(data, split);
  }
  Plan plan;
  plan.train_samples = static_cast<long>(split.train.size());
  plan.val_samples = static_cast<long>(split.val.size());
  plan.steps_per_epoch = (plan.train_samples + cfg.training.batch_size - 1) / cfg.training.batch_size;
  plan.total_steps = cfg.training.steps > 0 ? cfg.training.steps : cfg.training.epochs * plan.steps_per_epoch;

  Mlp model(cfg.model, data.features, data.classes);
  model.init(cfg.seed);
  Optimizer optim(cfg.optimizer, model.params());
  const long micro_rows = (cfg.training.batch_size + cfg.training.accumulation - 1) / cfg.training.accumulation;
  MlpRunner runner(model, cfg.model, std::max(micro_rows, 256L), pool.size());

  // The run directory: created only now, after every input has been checked.
  if (!resuming) {
    run_dir = opt.out_dir.empty() ? default_run_dir(opt.config_path) : opt.out_dir;
    std::error_code ec;
    if (fs::exists(fs::path(run_dir) / "manifest.json", ec)) {
      throw Error(run_dir, "already holds a run; continue it with --resume or choose another -o");
    }
    fs::create_directories(fs::path(run_dir) / "checkpoints", ec);
    if (ec) {
      throw Error(run_dir, "cannot create run directory: " + ec.message());
    }
  }
  RunLock lock(run_dir);
  const std::string steps_path = (fs::path(run_dir) / "steps.jsonl").string();
  const std::string evals_path = (fs::path(run_dir) / "evals.jsonl").string();
  const std::string manifest_path = (fs::path(run_dir) / "manifest.json").string();
  long start_step = 0;
  if (!resuming) {
    manifest = build_manifest(opt, cfg, config_digest_text, data, plan, model);
  } else {
    // Latest valid checkpoint; a corrupt one is reported and skipped.
    auto tensors = checkpoint_tensors(model, optim);
    for (const auto& path : list_checkpoints(run_dir)) {
      try {
        start_step = read_checkpoint(path, manifest.value("config_digest", ""), tensors);
        break;
      } catch (const Error& e) {
        if (opt.on_note) {
          opt.on_note(std::string("skipping checkpoint: ") + e.what());
        }
        model.init(cfg.seed); // a failed read may have filled some tensors
        for (auto& s : optim.state()) {
          std::fill(s.data->begin(), s.data->end(), 0.0f);
        }
      }
    }
    // From no checkpoint the step-0 line is written again, so it goes too.
    truncate_log_to_step(steps_path, start_step == 0 ? -1 : start_step);
    truncate_log_to_step(evals_path, start_step);
    manifest["resumes"].push_back({{"from_step", start_step},
                                   {"time", real_world().now_iso8601()},
                                   {"threads", cfg.determinism.threads},
                                   {"command_line", opt.command_line}});
    if (opt.on_note) {
      opt.on_note(fmt::format("resuming {} from step {}", run_dir, start_step));
    }
  }
  // The logs exist before the manifest: a directory with a manifest is always a readable run,
  // whenever the process is killed.
  AppendLog steps_log(steps_path);
  AppendLog evals_log(evals_path);
  TrainResult res;
  res.run_dir = run_dir;
  res.status = "running";
  res.steps = start_step;
  write_file_atomic(manifest_path, manifest.dump(2) + "\n");
  write_summary(run_dir, res, plan.total_steps);
  const long B = cfg.training.batch_size;
  const long F = data.features;
  std::vector<float> xb(static_cast<size_t>(B * F));
  std::vector<int32_t> yb(static_cast<size_t>(B));
  std::vector<uint32_t> idx(static_cast<size_t>(B));
  std::vector<float> xval;
  std::vector<int32_t> yval;
  for (uint32_t i : split.val) {
    xval.insert(xval.end(), data.x.begin() + static_cast<long>(i) * F, data.x.begin() + static_cast<long>(i + 1) * F);
    yval.push_back(data.y[i]);
  }
  auto evaluate = [&](long step) {
    if (split.val.empty()) {
      return;
    }
    double loss_sum = 0.0;
    long correct = 0;
    runner.evaluate(xval.data(), yval.data(), static_cast<long>(yval.size()), &pool, loss_sum, correct);
    res.has_val = true;
    res.val_loss = loss_sum / static_cast<double>(yval.size());
    res.val_accuracy = static_cast<double>(correct) / static_cast<double>(yval.size());
    evals_log.append(fmt::format("{{\"step\":{},\"val_loss\":{},\"val_accuracy\":{},\"val_samples\":{}}}\n", step,
                                 json_number(res.val_loss), json_number(res.val_accuracy), yval.size()));
  };

  const bool trace_weights = cfg.determinism.trace != "loss";
  StepContext ctx;
  ctx.seed = cfg.seed;
  ctx.atomic = cfg.determinism.reduction == "atomic";
  ctx.trace_full = cfg.determinism.trace == "full";
  ctx.pool = &pool;
  long cached_epoch = -1;
  std::vector<uint32_t> order;
  auto params = model.params();
  StepRecord rec;
  const auto t_loop = std::chrono::steady_clock::now();
  long steps_this_process = 0;

  if (start_step == 0 && trace_weights) {
    // Step 0: the initial state (weights before any update), so a diff can tell initial-state
    // differences from computation.
    StepRecord init;
    tensor_sums(params, nullptr, pool, init.tensors);
    steps_log.append(format_initial_line(init));
  }
  try {
  for (long s = start_step + 1; s <= plan.total_steps; ++s) {
    const long epoch = (s - 1) / plan.steps_per_epoch;
    const long pos = (s - 1) % plan.steps_per_epoch;
    if (epoch != cached_epoch) {
      order = epoch_order(split.train.size(), cfg.seed, epoch, cfg.training.shuffle);
      cached_epoch = epoch;
    }
    const long b0 = pos * B;
    const long bsz = std::min(B, plan.train_samples - b0);
    for (long r = 0; r < bsz; ++r) {
      idx[static_cast<size_t>(r)] = split.train[order[static_cast<size_t>(b0 + r)]];
    }
    // Gather the batch's rows, in chunks of 16 rows across the threads (each row has one writer).
    // Rows are scattered over the dataset, so the next ones are prefetched while one is copied.
    const size_t row_bytes = static_cast<size_t>(F) * sizeof(float);
    pool.parallel_for(static_cast<int>((bsz + 15) / 16), [&](int chunk, int) {
      constexpr long k_ahead = 4;
      const long r0 = chunk * 16L, r1 = std::min(bsz, r0 + 16);
      for (long r = r0; r < r1; ++r) {
        if (r + k_ahead < r1) {
          const char* next = reinterpret_cast<const char*>(
              &data.x[static_cast<size_t>(idx[static_cast<size_t>(r + k_ahead)]) * static_cast<size_t>(F)]);
          for (size_t off = 0; off < row_bytes; off += 64) {
            __builtin_prefetch(next + off);
          }
        }
        const uint32_t sample = idx[static_cast<size_t>(r)];
        std::memcpy(&xb[static_cast<size_t>(r * F)], &data.x[static_cast<size_t>(sample) * static_cast<size_t>(F)],
                    row_bytes);
        yb[static_cast<size_t>(r)] = data.y[sample];
      }
    });
    ctx.step = s;
    ctx.batch_size = bsz;
    runner.begin_step(ctx);
    double loss_sum = 0.0;
    const long acc = cfg.training.accumulation;
    for (long k = 0; k < acc; ++k) {
      long r0 = k * bsz / acc;
      long r1 = (k + 1) * bsz / acc;
      if (r1 > r0) {
        runner.micro_batch(ctx, &xb[static_cast<size_t>(r0 * F)], &yb[static_cast<size_t>(r0)], r1 - r0, r0, loss_sum);
      }
    }
    const double loss = loss_sum / static_cast<double>(bsz);
    rec.step = s;
    rec.epoch = epoch;
    rec.loss = loss;
    rec.batch = xxh3_64(idx.data(), static_cast<size_t>(bsz) * sizeof(uint32_t));
    if (ctx.trace_full) {
      runner.end_step(rec.forward, rec.backward);
    }
    const bool stepped = std::isfinite(loss);
    if (stepped) {
      optim.step(s, &pool, trace_weights);
    }
    rec.tensors.clear();
    if (trace_weights) {
      tensor_sums(params, stepped ? &optim : nullptr, pool, rec.tensors);
    }
    steps_log.append(format_step_line(rec));
    res.steps = s;
    res.train_loss = loss;
    ++steps_this_process;
    if (opt.kill_after_step == s) {
      ::raise(SIGKILL);
    }
    if (!std::isfinite(loss)) {
      res.status = fmt::format("failed: non-finite loss at step {}", s);
      res.code = ExitCode::different;
      break;
    }
    const bool last = s == plan.total_steps;
    const bool stopping = opt.stop && opt.stop->load();
    bool evaluated = false;
    if (s % cfg.training.eval_every == 0 || last) {
      evaluate(s);
      evaluated = true;
    }
    if (s % cfg.training.checkpoint_every == 0 || last || stopping) {
      write_checkpoint(checkpoint_path(run_dir, s), s, manifest.value("config_digest", ""),
                       checkpoint_tensors(model, optim));
      prune_checkpoints(run_dir, cfg.training.checkpoint_keep);
    }
    if (opt.on_progress) {
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loop).count();
      Progress p{s, plan.total_steps, epoch, loss, el, el > 0 ? static_cast<double>(steps_this_process) / el : 0.0,
                 evaluated && res.has_val, res.val_loss, res.val_accuracy};
      opt.on_progress(p);
    }
    if (stopping && !last) {
      res.status = "interrupted";
      res.code = ExitCode::interrupted;
      break;
    }
  }
  } catch (const Error& e) {
    // An I/O error (disk full, file size limit) stops the run: say so in the summary if that can
    // still be written; the last complete checkpoint stays as it was.
    res.status = std::string("failed: ") + e.what();
    try {
      write_summary(run_dir, res, plan.total_steps);
    } catch (const Error&) {
    }
    throw;
  }
  if (res.status == "running") {
    res.status = "complete";
  }
  const auto t_end = std::chrono::steady_clock::now();
  res.wall_seconds = std::chrono::duration<double>(t_end - t_start).count();
  double loop_s = std::chrono::duration<double>(t_end - t_loop).count();
  res.steps_per_second = loop_s > 0 ? static_cast<double>(steps_this_process) / loop_s : 0.0;
  write_summary(run_dir, res, plan.total_steps);
  return res;
}

} // namespace reprun
