// The training loop, top to bottom: resolve config, load data, build the model, create (or reopen)
// the run directory, then step, log, evaluate and checkpoint until done or stopped.
#include "reprun/train/trainer.hpp"

#include "run_record.hpp"
#include "session.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"
#include "reprun/train/data.hpp"
#include "reprun/train/exchange.hpp"
#include "reprun/train/launch.hpp"
#include "reprun/train/ranks.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/train/model.hpp"
#include "reprun/train/optimizer.hpp"
#include "reprun/record/run_dir.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/train/settings.hpp"
#include "reprun/train/state.hpp"
#include "reprun/record/step_record.hpp"
#include "reprun/record/steplog.hpp"
#include "reprun/meta/snapshot.hpp"
#include "reprun/core/threadpool.hpp"
#include "reprun/meta/world.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;
using namespace train_detail;

namespace {

// Checksum and norm of every weight tensor, one task per tensor (each computed whole by one
// thread). `optim` supplies norms summed during its last update pass (the same order as
// weight_norm), already fetched; nullptr computes them here. On the CPU backend the weights are
// read in place. On a device, with `optim`, the backend hashes them where they are and only the
// digests cross (xxh3_tensors); without it (the step-0 record, a step after the selftest's flip)
// they are downloaded into `staging` (docs/determinism.md, "What crosses").
void tensor_sums(Backend& be, const std::vector<ParamRef>& params, const Optimizer* optim, ThreadPool& pool,
                 std::vector<std::vector<float>>& staging, std::vector<TensorSum>& out) {
  out.resize(params.size());
  if (!be.host_memory() && optim) {
    std::vector<const float*> tensors;
    std::vector<size_t> sizes;
    for (const auto& p : params) {
      tensors.push_back(p.data);
      sizes.push_back(p.size);
    }
    std::vector<uint64_t> hashes(params.size());
    be.xxh3_tensors(tensors, sizes, hashes.data());
    for (size_t i = 0; i < params.size(); ++i) {
      out[i] = {params[i].name, hashes[i], optim->norm(i)};
    }
    return;
  }
  std::vector<const float*> host(params.size());
  staging.resize(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    host[i] = to_host(be, static_cast<const float*>(params[i].data), params[i].size, staging[i]);
  }
  pool.parallel_for(static_cast<int>(params.size()), [&](int i, int) {
    const auto& p = params[static_cast<size_t>(i)];
    const float* x = host[static_cast<size_t>(i)];
    out[static_cast<size_t>(i)] = {p.name, xxh3_64(x, p.size * sizeof(float)),
                                   optim ? optim->norm(static_cast<size_t>(i)) : weight_norm(x, p.size)};
  });
}

// A run over several ranks: what the rank chain cannot do, refused in one line each.
void check_ranks(const Config& cfg, const Plan& plan) {
  const int ranks = cfg.determinism.ranks;
  const std::string where = cfg.source + ": determinism.ranks";
  if (cfg.determinism.reduction != "ordered") {
    throw Error(where, fmt::format("{} ranks need determinism.reduction \"ordered\" (the atomic mode is a "
                                   "single-process demonstration)", ranks));
  }
  if (cfg.determinism.trace == "full") {
    throw Error(where, fmt::format("{} ranks cannot trace \"full\"; the activation trace is per process (check "
                                   "replays a divergence on one rank)", ranks));
  }
  // Every rank holds at least one row of every batch, the last (smallest) of an epoch included.
  const long last = plan.train_samples - (plan.steps_per_epoch - 1) * cfg.training.batch_size;
  const long smallest =
      plan.total_steps >= plan.steps_per_epoch ? std::min(cfg.training.batch_size, last) : cfg.training.batch_size;
  if (ranks > smallest) {
    throw Error(where, fmt::format("{} ranks but a batch of this run has only {} rows (training.batch_size {}, {} "
                                   "training samples): each rank needs a row of every batch; use at most {} ranks",
                                   ranks, smallest, cfg.training.batch_size, plan.train_samples, smallest));
  }
}

// The backend of determinism.device. CUDA is refused in one line, before anything is written, where
// it cannot run: a build without it, no usable GPU, several ranks (one process drives one GPU).
std::unique_ptr<Backend> make_cpu_or_cuda(const TrainOptions& opt, const Config& cfg, ThreadPool* pool) {
  if (device_of(cfg.determinism) == "cpu") {
    return make_cpu_backend(pool);
  }
  const std::string where = opt.device.empty() ? cfg.source + ": determinism.device" : "--device cuda";
  if (cfg.determinism.ranks > 1) {
    throw Error(where, fmt::format("{} ranks: the CUDA backend runs in one process; use ranks 1 or device \"cpu\"",
                                   cfg.determinism.ranks));
  }
  if (const std::string why = cuda_unavailable(); !why.empty()) {
    throw Error(where, why + "; train on the CPU (the bits are the same)");
  }
  return make_cuda_backend();
}

// Phase 1b: data, split, plan, model. Every input is checked here, before any file is written.
void prepare(Session& s) {
  Config& cfg = s.cfg;
  s.pool = std::make_unique<ThreadPool>(cfg.determinism.threads);
  s.backend = make_cpu_or_cuda(s.opt, cfg, s.pool.get());
  if (!s.data_loaded) {
    s.data = load_dataset(cfg, s.pool.get());
  }
  if (s.resuming && s.manifest["data"].value("fingerprint", "") != s.data.fingerprint) {
    throw Error(cfg.source, "the dataset changed since this run started (fingerprint " +
                                s.manifest["data"].value("fingerprint", "") + " -> " + s.data.fingerprint +
                                "); resuming would not reproduce the run");
  }
  s.split = split_dataset(s.data, cfg.data.validation_fraction, data_seed(cfg));
  if (s.split.train.empty()) {
    throw Error(cfg.source, "data.validation_fraction: leaves no training samples");
  }
  if (cfg.training.batch_size > static_cast<long>(s.split.train.size())) {
    throw Error(cfg.source, fmt::format("training.batch_size: {} is larger than the {} training samples",
                                        cfg.training.batch_size, s.split.train.size()));
  }
  if (cfg.data.normalize == "standard") {
    normalize_standard(s.data, s.split);
  }
  Plan& plan = s.plan;
  plan.train_samples = static_cast<long>(s.split.train.size());
  plan.val_samples = static_cast<long>(s.split.val.size());
  plan.steps_per_epoch = (plan.train_samples + cfg.training.batch_size - 1) / cfg.training.batch_size;
  plan.total_steps = cfg.training.steps > 0 ? cfg.training.steps : cfg.training.epochs * plan.steps_per_epoch;
  if (s.resuming) {
    s.manifest["plan"]["total_steps"] = plan.total_steps;
  }
  s.model = std::make_unique<Mlp>(cfg.model, s.data.features, s.data.classes, *s.backend);
  s.model->init(cfg.seed);
  s.optim = std::make_unique<Optimizer>(cfg.optimizer, s.model->params(), *s.backend);
  if (s.fault.flip_step > 0) {
    const auto ps = s.model->params();
    if (std::none_of(ps.begin(), ps.end(), [&](const ParamRef& p) { return p.name == s.fault.flip_tensor; })) {
      throw Error(k_selftest_fault_variable, "no tensor '" + s.fault.flip_tensor + "' in this model");
    }
  }
  const int ranks = cfg.determinism.ranks;
  if (ranks > 1) {
    check_ranks(cfg, plan);
  }
  // Over several ranks, each does its whole slice of a batch at once (the accumulation split
  // cannot change a bit, and a slice is smaller than the batch).
  const long micro_rows = ranks > 1 ? rank_slice_rows(cfg.training.batch_size, ranks)
                                    : (cfg.training.batch_size + cfg.training.accumulation - 1) /
                                          cfg.training.accumulation;
  s.runner = std::make_unique<MlpRunner>(*s.model, cfg.model, std::max(micro_rows, cfg.training.eval_batch_size),
                                         *s.backend);
}

// The logs exist before the manifest: a directory with a manifest is always a readable run,
// whenever the process is killed.
void open_logs_then_manifest(Session& s) {
  if (!s.fault.spec.empty()) {
    // Every fault any process of the run was made with, kept through resumes and forks: a faulted
    // run never passes for a clean one.
    ojson& faults = s.manifest["selftest_faults"];
    if (!faults.is_array()) {
      faults = ojson::array();
    }
    if (std::find(faults.begin(), faults.end(), s.fault.spec) == faults.end()) {
      faults.push_back(s.fault.spec);
    }
  }
  s.steps_log.emplace(s.run->append(RunFile::steps));
  s.evals_log.emplace(s.run->append(RunFile::evals));
  s.run->write_manifest(s.manifest);
}

// A fork from step `step` (> 0) needs the source's checkpoint of that step.
void require_checkpoint(const RunDir& source, long step) {
  if (step <= 0) {
    return;
  }
  std::string have;
  for (const auto& c : source.checkpoints()) {
    if (c.step == step) {
      return;
    }
    have += (have.empty() ? "" : ", ") + std::to_string(c.step);
  }
  throw Error(source.path(), fmt::format("has no checkpoint at step {} (it keeps {}; 0 is the start)", step,
                                         have.empty() ? "none" : "steps " + have));
}

// Phase 2: the run directory (created only now, after every input was checked), locked; the state
// restored from the newest valid checkpoint and the logs cut back to it; the manifest written.
RunLock resume_or_start(Session& s) {
  const TrainOptions& opt = s.opt;
  if (!s.resuming) {
    s.run = RunDir::create_in_new_or_empty(opt.out_dir.empty() ? default_run_dir(opt.config_path) : opt.out_dir);
    RunLock lock = s.run->lock();
    s.manifest = build_manifest(opt, s.cfg, s.config_text_digest, s.data, s.plan, *s.model, *s.backend);
    open_logs_then_manifest(s);
    return lock;
  }
  long from = -1; // resume in place: the newest valid checkpoint
  if (s.forking) {
    // A fork starts at --from-step, or at the source's newest checkpoint (0 when it has none).
    const auto kept = s.source->checkpoints();
    from = opt.from_step >= 0 ? opt.from_step : kept.empty() ? 0 : kept.front().step;
    require_checkpoint(*s.source, from);
    s.run = RunDir::create_in_new_or_empty(opt.out_dir);
  } else {
    s.run = *s.source;
  }
  RunLock lock = s.run->lock();
  if (s.forking) {
    s.run->copy_start_from(*s.source, from);
  }
  auto reset = [&] {
    s.model->init(s.cfg.seed);
    s.optim->zero_state();
  };
  s.start_step = restore_state(*s.run, from, s.digest(), *s.model, *s.optim, reset,
                               [&](const std::string& n) { s.note(n); });
  if (s.fault.drop_state && s.start_step > 0) {
    s.optim->zero_state();
  }
  if (s.fault.restart && !s.forking && s.start_step > 0) {
    reset();
    s.start_step = 0;
  }
  if (s.forking && s.start_step != from) {
    throw Error(s.source->path(), fmt::format("its checkpoint at step {} cannot be read", from));
  }
  s.run->truncate_logs_to(s.start_step);
  if (s.forking) {
    s.manifest["forked_from"] = {{"run", s.source->path()}, {"step", s.start_step}};
    if (s.manifest.contains("search")) {
      // A fork of a search trial is no trial of that search: the trial's facts say where its
      // values came from, under forked_from.
      s.manifest["forked_from"]["search"] = s.manifest["search"];
      s.manifest.erase("search");
    }
    s.manifest["resumes"] = ojson::array();
  }
  const World& world = opt.world ? *opt.world : real_world();
  s.manifest["resumes"].push_back({{"from_step", s.start_step},
                                   {"time", world.now_iso8601()},
                                   {"threads", s.cfg.determinism.threads},
                                   {"ranks", s.cfg.determinism.ranks},
                                   {"command_line", opt.command_line}});
  if (!s.cfg.determinism.device.empty()) {
    s.manifest["resumes"].back()["device"] = s.cfg.determinism.device; // a run may resume on the other device
  }
  open_logs_then_manifest(s);
  s.note(fmt::format("{} {} from step {}", s.forking ? "forked" : "resuming",
                     s.forking ? s.source->path() + " into " + s.run->path() : s.run->path(), s.start_step));
  return lock;
}

// The batch of one step: sample indices from the epoch's order, rows gathered into xb/yb.
class BatchGatherer {
  const Session& m_s;
  long m_b, m_f;
  long m_cached_epoch = -1;
  std::vector<uint32_t> m_order;
  std::vector<const void*> m_next; // hint_next's rows

public:
  explicit BatchGatherer(const Session& s)
      : m_s(s), m_b(s.cfg.training.batch_size), m_f(s.data.features), xb(static_cast<size_t>(m_b * m_f)),
        yb(static_cast<size_t>(m_b)), idx(static_cast<size_t>(m_b)) {}

  // Returns the number of rows of step `step` (1-based) in epoch `epoch`.
  long gather(long step, long epoch) {
    const Plan& plan = m_s.plan;
    if (epoch != m_cached_epoch) {
      m_order = epoch_order(m_s.split.train.size(), m_s.cfg.seed, epoch, m_s.cfg.training.shuffle);
      m_cached_epoch = epoch;
    }
    const long b0 = ((step - 1) % plan.steps_per_epoch) * m_b;
    const long bsz = std::min(m_b, plan.train_samples - b0);
    for (long r = 0; r < bsz; ++r) {
      idx[static_cast<size_t>(r)] = m_s.split.train[m_order[static_cast<size_t>(b0 + r)]];
    }
    copy_rows(bsz);
    hint_next(b0 + bsz);
    return bsz;
  }

  std::vector<float> xb;
  std::vector<int32_t> yb;
  std::vector<uint32_t> idx;

private:
  // The rows of the epoch's next step, from position `b0` of its order, named to the backend
  // (prefetch_rows) so that it may fetch them while this step computes: a hint, no value changes.
  // The first step of an epoch is not hinted (its order is drawn when it starts).
  void hint_next(long b0) {
    const long n = std::min(m_b, m_s.plan.train_samples - b0);
    m_next.clear();
    const size_t F = static_cast<size_t>(m_f);
    for (long r = 0; r < n; ++r) {
      m_next.push_back(&m_s.data.x[static_cast<size_t>(m_s.split.train[m_order[static_cast<size_t>(b0 + r)]]) * F]);
    }
    m_s.backend->prefetch_rows(m_next.data(), m_next.size(), F * sizeof(float));
  }

  // In chunks of 16 rows across the threads (each row has one writer). Rows are scattered over
  // the dataset, so the next ones are prefetched while one is copied.
  void copy_rows(long bsz) {
    const long F = m_f;
    const Dataset& data = m_s.data;
    const size_t row_bytes = static_cast<size_t>(F) * sizeof(float);
    m_s.pool->parallel_for(static_cast<int>((bsz + 15) / 16), [&](int chunk, int) {
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
  }
};

// Phase 3 and 4: the step loop, then the summary.
class Loop {
public:
  explicit Loop(Session& s)
      : m_s(s), m_steps(s.steps_log ? &*s.steps_log : nullptr), m_evals(s.evals_log ? &*s.evals_log : nullptr),
        m_batch(s), m_be(*s.backend), m_params(s.model->params()), m_loss(*s.backend, 1) {
    for (uint32_t i : s.split.val) {
      const long F = s.data.features;
      m_xval.insert(m_xval.end(), s.data.x.begin() + static_cast<long>(i) * F,
                    s.data.x.begin() + static_cast<long>(i + 1) * F);
      m_yval.push_back(s.data.y[i]);
    }
    m_ctx.seed = s.cfg.seed;
    m_ctx.atomic = s.cfg.determinism.reduction == "atomic";
    m_ctx.trace_full = s.cfg.determinism.trace == "full";
    m_res.run_dir = s.run ? s.run->path() : "";
    m_res.status = "running";
    m_res.steps = s.start_step;
    if (s.start_step > 0 && s.run) { // ranks other than 0 hold no run directory (s.run is empty)
      metrics_from_logs(*s.run, m_res);
    }
  }

  TrainResult run(std::chrono::steady_clock::time_point t_start) {
    m_t_start = t_start;
    write_summary();
    const auto t_loop = std::chrono::steady_clock::now();
    m_t_loop = t_loop;
    try {
      if (m_s.start_step == 0 && trace_weights() && m_s.writer) {
        // Step 0: the initial state (weights before any update), so a diff can tell initial-state
        // differences from computation.
        StepRecord init;
        tensor_sums(m_be, m_params, nullptr, *m_s.pool, m_host_params, init.tensors);
        m_steps->append(format_initial_line(init));
      }
      for (long s = m_s.start_step + 1; s <= m_s.plan.total_steps && m_res.status == "running"; ++s) {
        step(s, t_loop);
      }
    } catch (const Error& e) {
      // An I/O error (disk full, file size limit) stops the run: say so in the summary if that
      // can still be written; the last complete checkpoint stays as it was.
      m_res.status = std::string("failed: ") + e.what();
      try {
        write_summary();
      } catch (const Error&) {
      }
      throw;
    }
    if (m_res.status == "running") {
      m_res.status = "complete";
    }
    time_so_far();
    write_summary();
    return m_res;
  }

private:
  bool trace_weights() const { return m_s.cfg.determinism.trace != "loss"; }
  // The process's time and loop speed up to now, for the summary.
  void time_so_far() {
    const auto now = std::chrono::steady_clock::now();
    m_res.wall_seconds = std::chrono::duration<double>(now - m_t_start).count();
    const double loop_s = std::chrono::duration<double>(now - m_t_loop).count();
    m_res.steps_per_second = loop_s > 0 ? static_cast<double>(m_done) / loop_s : 0.0;
    m_res.gemm_seconds = m_be.gemm_seconds();
  }
  // Written at the start, after every checkpoint and at the end. What is not known yet (no step
  // of this run, or none of this process, has been timed) is null, never a zero.
  void write_summary() const {
    if (m_s.writer) {
      RunSummary sum = summary_of(m_res, m_s.plan.total_steps, *m_steps, *m_evals);
      if (m_done == 0) {
        sum.steps_per_second.reset();
        sum.gemm_seconds.reset();
      }
      m_s.run->write_summary(sum);
    }
  }

  // Forward and backward over the step's micro-batches; the optimizer update; the step's line.
  // What crosses to and from the backend's memory: the batch up; the loss down; with trace
  // weights, each weight tensor's digest and the update's sums of squares down; with trace full,
  // every traced tensor down too (docs/determinism.md).
  double compute(long s, long epoch, long bsz) {
    const long F = m_s.data.features;
    m_ctx.step = s;
    m_ctx.batch_size = bsz;
    double loss_sum = 0.0;
    if (m_s.chain) {
      const bool stop = m_s.opt.stop && m_s.opt.stop->load();
      loss_sum = m_s.chain->step(m_ctx, m_batch.xb.data(), m_batch.yb.data(), bsz, F, stop);
    } else {
      const float* x = to_backend(m_be, m_batch.xb.data(), static_cast<size_t>(bsz * F), m_xdev);
      const int32_t* y = to_backend(m_be, m_batch.yb.data(), static_cast<size_t>(bsz), m_ydev);
      m_loss.zero();
      m_s.runner->begin_step(m_ctx);
      const long acc = m_s.cfg.training.accumulation;
      for (long k = 0; k < acc; ++k) {
        const long r0 = k * bsz / acc, r1 = (k + 1) * bsz / acc;
        if (r1 > r0) {
          m_s.runner->micro_batch(m_ctx, x + r0 * F, y + r0, r1 - r0, r0, m_loss.data());
        }
      }
      loss_sum = read_one(m_be, static_cast<const double*>(m_loss.data()));
    }
    const double loss = loss_sum / static_cast<double>(bsz);
    m_rec.step = s;
    m_rec.epoch = epoch;
    m_rec.loss = loss;
    m_rec.batch = xxh3_64(m_batch.idx.data(), static_cast<size_t>(bsz) * sizeof(uint32_t));
    if (m_ctx.trace_full) {
      m_s.runner->end_step(m_rec.forward, m_rec.backward);
    }
    const bool stepped = std::isfinite(loss);
    if (stepped) {
      m_s.optim->step(s, trace_weights());
    }
    const bool flipped = s == m_s.fault.flip_step;
    if (flipped) {
      flip_lowest_bit(m_s.fault.flip_tensor);
    }
    m_rec.tensors.clear();
    if (trace_weights() && m_s.writer) {
      // After a flip the update's norms are stale: computed afresh (same order, same bits).
      const bool fresh = stepped && !flipped;
      if (fresh) {
        m_s.optim->fetch_norms();
      }
      tensor_sums(m_be, m_params, fresh ? m_s.optim.get() : nullptr, *m_s.pool, m_host_params, m_rec.tensors);
    }
    if (m_s.writer) {
      m_steps->append(format_step_line(m_rec));
    }
    return loss;
  }

  // The selftest's bit flip: the lowest bit of the tensor's first value, which all later steps carry.
  void flip_lowest_bit(const std::string& tensor) {
    for (const auto& p : m_params) {
      if (p.name == tensor && p.size > 0) {
        uint32_t bits = 0;
        m_be.download(&bits, p.data, sizeof(bits));
        bits ^= 1u;
        m_be.upload(p.data, &bits, sizeof(bits));
      }
    }
  }

  void evaluate(long step) {
    if (m_yval.empty()) {
      return;
    }
    const long n = static_cast<long>(m_yval.size());
    // The validation set crosses once (the first evaluation); the sums come back per evaluation.
    if (!m_val_up) {
      m_xval_at = to_backend(m_be, m_xval.data(), m_xval.size(), m_xval_dev);
      m_yval_at = to_backend(m_be, m_yval.data(), m_yval.size(), m_yval_dev);
      m_eval_loss = Buffer<double>(m_be, 1);
      m_eval_correct = Buffer<long>(m_be, 1);
      m_val_up = true;
    }
    m_eval_loss.zero();
    m_eval_correct.zero();
    m_s.runner->evaluate(m_xval_at, m_yval_at, n, m_s.cfg.training.eval_batch_size, m_eval_loss.data(),
                         m_eval_correct.data());
    const double loss_sum = read_one(m_be, static_cast<const double*>(m_eval_loss.data()));
    const long correct = read_one(m_be, static_cast<const long*>(m_eval_correct.data()));
    m_res.has_val = true;
    m_res.val_loss = loss_sum / static_cast<double>(n);
    m_res.val_accuracy = static_cast<double>(correct) / static_cast<double>(n);
    m_evals->append(format_eval_line({step, m_res.val_loss, m_res.val_accuracy, n}));
  }

  void step(long s, std::chrono::steady_clock::time_point t_loop) {
    const TrainOptions& opt = m_s.opt;
    const TrainingConfig& tc = m_s.cfg.training;
    const long epoch = (s - 1) / m_s.plan.steps_per_epoch;
    const long bsz = m_batch.gather(s, epoch);
    const double loss = compute(s, epoch, bsz);
    m_res.steps = s;
    m_res.train_loss = loss;
    m_res.has_train_loss = true;
    ++m_done;
    const bool kill = opt.kill_after_step == s &&
                      (opt.kill_rank < 0 || opt.kill_rank == (m_s.ranks ? m_s.ranks->rank() : 0));
    if (kill && !opt.kill_after_save) {
      ::raise(SIGKILL); // the step is logged; its evaluation and checkpoint, if it has them, are not
    }
    if (!std::isfinite(loss)) {
      m_res.status = fmt::format("failed: non-finite loss at step {}", s);
      m_res.code = ExitCode::different;
      return;
    }
    const bool last = s == m_s.plan.total_steps;
    // Over several ranks rank 0 decides (its request travelled with the step's loss sum), so that
    // every rank stops after the same step.
    const bool stopping = m_s.chain ? m_s.chain->stop_after() : opt.stop && opt.stop->load();
    const bool evaluated = (s % tc.eval_every == 0 || last) && m_s.writer;
    if (evaluated) {
      evaluate(s);
    }
    if ((s % tc.checkpoint_every == 0 || last || stopping) && m_s.writer) {
      save_state(*m_s.run, s, m_s.digest(), *m_s.model, *m_s.optim, tc.checkpoint_keep);
      time_so_far();
      write_summary(); // a run killed from here on says what its newest checkpoint holds
    }
    if (kill) {
      // --kill-after-save: the step's checkpoint, when it has one, is on disk. Every rank waits for
      // rank 0 to write it before any of them dies (mpirun would end rank 0 with the first).
      if (m_s.ranks && opt.kill_rank < 0) {
        m_s.ranks->barrier();
      }
      ::raise(SIGKILL);
    }
    if (opt.on_progress && m_s.writer) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_loop).count();
      opt.on_progress({s, m_s.plan.total_steps, epoch, loss, el, el > 0 ? static_cast<double>(m_done) / el : 0.0,
                       evaluated && m_res.has_val, m_res.val_loss, m_res.val_accuracy});
    }
    if (stopping && !last) {
      m_res.status = "interrupted";
      m_res.code = ExitCode::interrupted;
    }
  }

  Session& m_s;
  AppendLog *m_steps, *m_evals; // nullptr on ranks other than 0
  BatchGatherer m_batch;
  Backend& m_be;
  const std::vector<ParamRef> m_params; // named once, not per step
  std::vector<std::vector<float>> m_host_params; // the weights downloaded (the step-0 record)
  Buffer<float> m_xdev;     // the step's batch in backend memory (unused where that is host memory)
  Buffer<int32_t> m_ydev;
  Buffer<double> m_loss;    // the step's loss sum, in backend memory until the step record
  std::vector<float> m_xval;
  std::vector<int32_t> m_yval;
  bool m_val_up = false;    // the validation set is in backend memory
  Buffer<float> m_xval_dev;
  Buffer<int32_t> m_yval_dev;
  const float* m_xval_at = nullptr;
  const int32_t* m_yval_at = nullptr;
  Buffer<double> m_eval_loss;
  Buffer<long> m_eval_correct;
  StepContext m_ctx;
  StepRecord m_rec;
  TrainResult m_res;
  long m_done = 0; // steps computed by this process
  std::chrono::steady_clock::time_point m_t_start, m_t_loop; // the process's start, the loop's
};

// Ranks other than 0 start where rank 0 does: its step and its state (restored, or initial).
void share_start(Session& s) {
  Exchange& ex = *s.ranks;
  ex.broadcast(&s.start_step, sizeof s.start_step, 0);
  for (const auto& p : s.model->params()) {
    ex.broadcast(p.data, p.size * sizeof(float), 0);
  }
  // Several ranks run on the CPU backend only (make_cpu_or_cuda): the state is host memory.
  for (auto& st : s.optim->state()) {
    ex.broadcast(st.data, st.size * sizeof(float), 0);
  }
}

// `--ranks P` (or determinism.ranks P) outside an MPI launcher: this same command under
// `mpirun -np P`. A rank that dies leaves the run marked failed, naming it.
TrainResult run_on_ranks(Session& s) {
  const TrainOptions& opt = s.opt;
  if (mpi_library().empty()) {
    throw Error(s.cfg.source + ": determinism.ranks",
                fmt::format("{} ranks, but this reprun was built without MPI; rebuild with libopenmpi-dev installed "
                            "(cmake -DREPRUN_MPI=ON), or train on 1 rank",
                            s.cfg.determinism.ranks));
  }
  std::vector<std::string> args(opt.command_line.begin() + (opt.command_line.empty() ? 0 : 1),
                                opt.command_line.end());
  std::string dir = s.forking ? opt.out_dir : s.resuming ? opt.resume_dir : opt.out_dir;
  if (dir.empty()) {
    dir = default_run_dir(opt.config_path);
    args.insert(args.end(), {"-o", dir});
  }
  const RankLaunch r = launch_ranks(s.cfg.determinism.ranks, args, s.opt.stop);
  std::optional<RunDir> run;
  try {
    run = RunDir::open(dir);
  } catch (const Error&) {
  }
  // 0 complete, 1 a non-finite loss, 130 interrupted: the ranks ended together, rank 0 reported.
  // The exit code follows the status rank 0 wrote: mpirun itself ends with 1 when it was
  // interrupted too (a Ctrl-C reaches the whole process group), however the ranks ended.
  if ((r.exit_code == 0 || r.exit_code == 1 || r.exit_code == 130) && run) {
    TrainResult res = completed_run(run->path(), run->read_summary());
    res.status = run->read_summary().value("status", "unknown");
    res.already_complete = false;
    res.launched = true;
    // A signal that lands after the last step finds the ranks done: complete is complete (exit 0),
    // whatever mpirun, signalled while it tore the job down, says.
    res.code = res.status == "interrupted" ? ExitCode::interrupted
               : res.status == "complete"  ? ExitCode::ok
                                           : static_cast<ExitCode>(r.exit_code);
    return res;
  }
  if (r.dead_rank.empty() || !run) {
    throw Error("mpirun", fmt::format("the {} ranks ended with exit status {}", s.cfg.determinism.ranks, r.exit_code));
  }
  const std::string why = r.dead_rank + " ended, and mpirun stopped the others";
  run->mark_failed(why);
  if (opt.kill_after_step > 0 && opt.kill_rank < 0) {
    ::raise(SIGKILL); // the testing aid killed every rank: this process ends as one process would
  }
  const auto kept = run->checkpoints();
  throw Error(run->path(), fmt::format("{}; the run is marked failed, its checkpoints are intact ({}): resume with "
                                       "reprun train --resume {}",
                                       why, kept.empty() ? "none yet" : fmt::format("newest: step {}", kept.front().step),
                                       run->path()));
}

} // namespace

TrainResult run_training(const TrainOptions& opt) {
  const auto t_start = std::chrono::steady_clock::now();
  Session s(opt);
  resolve_config(s);
  if (s.resuming && !s.forking && opt.overrides.empty()) {
    const ojson summary = s.source->read_summary();
    if (summary.value("status", "") == "complete") {
      s.note("run is already complete, nothing to train: " + s.source->path());
      return completed_run(s.source->path(), summary);
    }
  }
  prepare(s);
  if (s.cfg.determinism.ranks > 1 && launched_rank() < 0) {
    return run_on_ranks(s); // every input checked: now under mpirun
  }
  s.ranks = mpi_world(opt.stop);
  if (s.ranks) {
    s.writer = s.ranks->rank() == 0;
    s.chain = std::make_unique<RankChain>(*s.ranks, *s.model, *s.runner);
    s.ranks->barrier(); // every rank has read the run before rank 0 changes it (a broadcast would not wait)
  }
  std::optional<RunLock> lock;
  if (s.writer) {
    lock.emplace(resume_or_start(s));
    s.note("data: " + describe_data(s.data, s.plan.val_samples)); // once every input was accepted
    for (const auto& w : s.data.warnings) {
      s.note("warning: data: " + w);
    }
  }
  if (s.ranks) {
    share_start(s);
  }
  TrainResult res = Loop(s).run(t_start);
  res.other_rank = !s.writer;
  return res;
}

} // namespace reprun
