// MLP forward and backward, layer by layer, side by side. Every reduction over samples is either
// gemm_acc (one fma chain per element, in sample order) or an explicit loop in sample order, so the
// result does not depend on threads or on how a batch is cut into micro-batches.
#include "reprun/train/model.hpp"

#include "reprun/train/gemm.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/train/mathfn.hpp"
#include "reprun/train/rng.hpp"
#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <atomic>
#include <mutex>
#include <random>

namespace reprun {

namespace {
// Atomic mode: samples per partial gradient. More chunks than threads, so the completion order of
// the partials really varies between runs.
constexpr long k_atomic_chunk = 8;
std::mutex g_atomic_mutex;

// Atomic mode issues the chunks in an order drawn once per process, as a GPU's block scheduler
// varies from launch to launch: completion order then differs between runs even when the threads
// happen to run one after another (a loaded machine), so the demonstration never comes out
// accidentally identical.
uint64_t atomic_issue_seed() {
  static const uint64_t k_seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  return k_seed;
}
std::atomic<uint32_t> g_atomic_calls{0};
} // namespace

Mlp::Mlp(const ModelConfig& mc, long features, long classes)
  : m_cfg(mc), m_features(features), m_classes(classes) {
  long in = features;
  std::vector<long> widths = mc.hidden;
  widths.push_back(classes);
  for (long out : widths) {
    Dense d;
    d.in = in;
    d.out = out;
    d.w.assign(static_cast<size_t>(in * out), 0.0f);
    d.b.assign(static_cast<size_t>(out), 0.0f);
    d.gw.assign(d.w.size(), 0.0f);
    d.gb.assign(d.b.size(), 0.0f);
    d.wt.assign(d.w.size(), 0.0f);
    m_layers.push_back(std::move(d));
    in = out;
  }
}

void Mlp::init(uint64_t seed) {
  // Kaiming-uniform weights U(-sqrt(6/in), sqrt(6/in)) (ReLU) or Xavier-uniform
  // U(-sqrt(6/(in+out)), ...) (tanh); biases zero. sqrt is exactly rounded by IEEE 754.
  for (size_t l = 0; l < m_layers.size(); ++l) {
    Dense& d = m_layers[l];
    double fan = m_cfg.activation == "tanh" ? static_cast<double>(d.in + d.out) : static_cast<double>(d.in);
    float bound = static_cast<float>(std::sqrt(6.0 / fan));
    for (size_t i = 0; i < d.w.size(); i += 4) {
      Philox4 r = draw(seed, Stream::init, static_cast<uint32_t>(l), 0, static_cast<uint32_t>(i / 4));
      for (size_t k = 0; k < 4 && i + k < d.w.size(); ++k) {
        d.w[i + k] = (2.0f * to_unit_float(r[k]) - 1.0f) * bound;
      }
    }
    std::fill(d.b.begin(), d.b.end(), 0.0f);
  }
}

std::vector<ParamRef> Mlp::params() {
  std::vector<ParamRef> out;
  for (size_t l = 0; l < m_layers.size(); ++l) {
    Dense& d = m_layers[l];
    out.push_back({fmt::format("dense_{}.weight", l + 1), {d.in, d.out}, d.w.data(), d.gw.data(), d.w.size()});
    out.push_back({fmt::format("dense_{}.bias", l + 1), {d.out}, d.b.data(), d.gb.data(), d.b.size()});
  }
  return out;
}

long Mlp::parameter_count() const {
  long n = 0;
  for (const auto& d : m_layers) {
    n += static_cast<long>(d.w.size() + d.b.size());
  }
  return n;
}

MlpRunner::MlpRunner(Mlp& model, const ModelConfig& mc, long max_rows, int threads)
  : m_model(model), m_cfg(mc), m_max_rows(max_rows) {
  long widest = model.features();
  for (const auto& d : model.layers()) {
    m_z.emplace_back(static_cast<size_t>(max_rows * d.out));
    widest = std::max(widest, d.out);
  }
  for (size_t l = 0; l + 1 < model.layers().size(); ++l) {
    m_act.emplace_back(static_cast<size_t>(max_rows * model.layers()[l].out));
    m_mask.emplace_back(static_cast<size_t>(max_rows * model.layers()[l].out));
  }
  m_g.resize(static_cast<size_t>(max_rows * widest));
  m_exp.resize(static_cast<size_t>(model.classes()));
  m_dh.resize(static_cast<size_t>(max_rows * widest));
  m_partial.resize(static_cast<size_t>(std::max(1, threads)));
  const size_t L = model.layers().size();
  m_fwd_names.push_back("input");
  for (size_t l = 0; l < L; ++l) {
    if (l + 1 < L) {
      m_fwd_names.push_back(fmt::format("dense_{}.z", l + 1));
      m_fwd_names.push_back(fmt::format("dense_{}.act", l + 1));
    } else {
      m_fwd_names.push_back(fmt::format("dense_{}.logits", l + 1));
    }
  }
  m_bwd_names.push_back("loss.dlogits");
  for (size_t l = L; l >= 1; --l) {
    m_bwd_names.push_back(fmt::format("dense_{}.weight.grad", l));
    m_bwd_names.push_back(fmt::format("dense_{}.bias.grad", l));
    if (l > 1) {
      m_bwd_names.push_back(fmt::format("dense_{}.act.grad", l - 1));
      m_bwd_names.push_back(fmt::format("dense_{}.z.grad", l - 1));
    }
  }
  for (size_t i = 0; i < m_fwd_names.size(); ++i) {
    m_fwd_hash.push_back(std::make_unique<Xxh3Stream>());
  }
  for (size_t i = 0; i < m_bwd_names.size(); ++i) {
    m_bwd_hash.push_back(std::make_unique<Xxh3Stream>());
  }
}

MlpRunner::~MlpRunner() = default;

void MlpRunner::begin_step(const StepContext& ctx) {
  auto& layers = m_model.layers();
  for (size_t l = 0; l < layers.size(); ++l) {
    Dense& d = layers[l];
    std::fill(d.gw.begin(), d.gw.end(), 0.0f);
    std::fill(d.gb.begin(), d.gb.end(), 0.0f);
    if (l == 0) {
      continue; // the first layer's input gradient is never needed, nor its transposed weights
    }
    // Transposed weights for dX = dY * W^T (the weights do not change within a step), in 32x32
    // blocks so that both sides stay in cache.
    constexpr long k_b = 32;
    for (long i0 = 0; i0 < d.in; i0 += k_b) {
      for (long o0 = 0; o0 < d.out; o0 += k_b) {
        const long i1 = std::min(d.in, i0 + k_b), o1 = std::min(d.out, o0 + k_b);
        for (long i = i0; i < i1; ++i) {
          for (long o = o0; o < o1; ++o) {
            d.wt[static_cast<size_t>(o * d.in + i)] = d.w[static_cast<size_t>(i * d.out + o)];
          }
        }
      }
    }
  }
  if (ctx.trace_full) {
    for (auto& h : m_fwd_hash) {
      h->reset();
    }
    for (auto& h : m_bwd_hash) {
      h->reset();
    }
  }
}

void MlpRunner::forward(const StepContext* ctx, const float* x, long m, long row0, bool train,
                        ThreadPool* pool) {
  auto& layers = m_model.layers();
  const size_t L = layers.size();
  const bool trace = ctx && ctx->trace_full;
  size_t fi = 0;
  if (trace) {
    m_fwd_hash[fi]->update(x, static_cast<size_t>(m * m_model.features()) * sizeof(float));
  }
  ++fi;
  const float* a = x;
  for (size_t l = 0; l < L; ++l) {
    Dense& d = layers[l];
    float* z = m_z[l].data();
    // z = a * W + b: each element starts from its bias, then one fma chain over the inputs.
    for (long r = 0; r < m; ++r) {
      std::memcpy(z + r * d.out, d.b.data(), static_cast<size_t>(d.out) * sizeof(float));
    }
    gemm_acc(m, d.out, d.in, MatView{a, d.in, 1}, d.w.data(), d.out, z, d.out, pool);
    const size_t n = static_cast<size_t>(m * d.out);
    if (trace) {
      m_fwd_hash[fi++]->update(z, n * sizeof(float));
    }
    if (l + 1 == L) {
      break;
    }
    float* act = m_act[l].data();
    if (m_cfg.activation == "relu") {
      for (size_t i = 0; i < n; ++i) {
        act[i] = z[i] > 0.0f ? z[i] : 0.0f;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        act[i] = mathfn::tanh(z[i]);
      }
    }
    if (train && m_cfg.dropout > 0.0) {
      // Inverted dropout; the mask is a pure function of (seed, step, layer, sample, unit).
      const float keep_scale = static_cast<float>(1.0 / (1.0 - m_cfg.dropout));
      const float p = static_cast<float>(m_cfg.dropout);
      float* mask = m_mask[l].data();
      for (long r = 0; r < m; ++r) {
        uint32_t row = static_cast<uint32_t>(row0 + r);
        for (long u = 0; u < d.out; u += 4) {
          Philox4 rnd = draw(ctx->seed, Stream::dropout, static_cast<uint32_t>(ctx->step),
                             (static_cast<uint32_t>(l) << 24) | row, static_cast<uint32_t>(u / 4));
          for (long k = 0; k < 4 && u + k < d.out; ++k) {
            size_t i = static_cast<size_t>(r * d.out + u + k);
            mask[i] = to_unit_float(rnd[static_cast<size_t>(k)]) < p ? 0.0f : keep_scale;
            act[i] = act[i] * mask[i];
          }
        }
      }
    }
    if (trace) {
      m_fwd_hash[fi++]->update(act, n * sizeof(float));
    }
    a = act;
  }
}

void MlpRunner::weight_grad(const StepContext& ctx, Dense& d, const float* a, const float* g, long m) {
  if (!ctx.atomic) {
    // gw (in, out) += a^T (in, m) * g (m, out): a chain over samples in order, tiles in parallel.
    gemm_acc(d.in, d.out, m, MatView{a, 1, d.in}, g, d.out, d.gw.data(), d.out, ctx.pool);
    for (long r = 0; r < m; ++r) {
      for (long o = 0; o < d.out; ++o) {
        d.gb[static_cast<size_t>(o)] += g[r * d.out + o];
      }
    }
    return;
  }
  // Atomic mode, deliberately non-deterministic: each chunk's partial gradient is added into the
  // shared one in completion order, as GPU atomics do.
  const int chunks = static_cast<int>((m + k_atomic_chunk - 1) / k_atomic_chunk);
  std::vector<int> issue(static_cast<size_t>(chunks));
  for (int c = 0; c < chunks; ++c) {
    issue[static_cast<size_t>(c)] = c;
  }
  const uint32_t call = g_atomic_calls.fetch_add(1);
  for (int c = chunks; c > 1; --c) {
    Philox4 r = draw(atomic_issue_seed(), Stream::dropout, call, 0xffffffffu, static_cast<uint32_t>(c));
    std::swap(issue[static_cast<size_t>(c - 1)], issue[to_below(r[0], r[1], static_cast<uint32_t>(c))]);
  }
  auto run = [&](int task, int worker) {
    const int c = issue[static_cast<size_t>(task)];
    auto& part = m_partial[static_cast<size_t>(worker)];
    part.assign(d.gw.size() + d.gb.size(), 0.0f);
    long r0 = c * k_atomic_chunk;
    long rows = std::min(k_atomic_chunk, m - r0);
    gemm_acc(d.in, d.out, rows, MatView{a + r0 * d.in, 1, d.in}, g + r0 * d.out, d.out, part.data(), d.out,
             nullptr);
    float* pb = part.data() + d.gw.size();
    for (long r = r0; r < r0 + rows; ++r) {
      for (long o = 0; o < d.out; ++o) {
        pb[o] += g[r * d.out + o];
      }
    }
    std::lock_guard<std::mutex> lock(g_atomic_mutex);
    for (size_t i = 0; i < d.gw.size(); ++i) {
      d.gw[i] += part[i];
    }
    for (size_t i = 0; i < d.gb.size(); ++i) {
      d.gb[i] += pb[i];
    }
  };
  if (ctx.pool) {
    ctx.pool->parallel_for(chunks, run);
  } else {
    for (int c = 0; c < chunks; ++c) {
      run(c, 0);
    }
  }
}

void MlpRunner::micro_batch(const StepContext& ctx, const float* x, const int32_t* y, long m, long row0,
                            double& loss_sum) {
  auto& layers = m_model.layers();
  const size_t L = layers.size();
  forward(&ctx, x, m, row0, true, ctx.pool);
  // Softmax cross-entropy in float64 with our own exp/log; gradient of the batch mean.
  const long C = m_model.classes();
  const float* logits = m_z[L - 1].data();
  float* g = m_g.data();
  const double inv_b = 1.0 / static_cast<double>(ctx.batch_size);
  for (long r = 0; r < m; ++r) {
    const float* z = logits + r * C;
    float zmax = z[0];
    for (long j = 1; j < C; ++j) {
      zmax = std::max(zmax, z[j]);
    }
    double sum = 0.0;
    for (long j = 0; j < C; ++j) {
      m_exp[static_cast<size_t>(j)] = mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax));
      sum += m_exp[static_cast<size_t>(j)];
    }
    loss_sum += mathfn::log(sum) - (static_cast<double>(z[y[r]]) - static_cast<double>(zmax));
    for (long j = 0; j < C; ++j) {
      double p = m_exp[static_cast<size_t>(j)] / sum;
      g[r * C + j] = static_cast<float>((p - (j == y[r] ? 1.0 : 0.0)) * inv_b);
    }
  }
  size_t bi = 0;
  if (ctx.trace_full) {
    m_bwd_hash[bi]->update(g, static_cast<size_t>(m * C) * sizeof(float));
  }
  ++bi;
  for (size_t l = L; l-- > 0;) {
    Dense& d = layers[l];
    const float* a = l == 0 ? x : m_act[l - 1].data();
    weight_grad(ctx, d, a, g, m);
    bi += 2; // weight and bias gradients are hashed once complete, in end_step
    if (l == 0) {
      break;
    }
    // dh (m, in) = g (m, out) * W^T (out, in)
    float* dh = m_dh.data();
    std::fill(dh, dh + m * d.in, 0.0f);
    gemm_acc(m, d.in, d.out, MatView{g, d.out, 1}, d.wt.data(), d.in, dh, d.in, ctx.pool);
    const size_t n = static_cast<size_t>(m * d.in);
    if (m_cfg.dropout > 0.0) {
      const float* mask = m_mask[l - 1].data();
      for (size_t i = 0; i < n; ++i) {
        dh[i] = dh[i] * mask[i];
      }
    }
    if (ctx.trace_full) {
      m_bwd_hash[bi]->update(dh, n * sizeof(float));
    }
    ++bi;
    const float* z = m_z[l - 1].data();
    float* gz = m_g.data();
    if (m_cfg.activation == "relu") {
      for (size_t i = 0; i < n; ++i) {
        gz[i] = z[i] > 0.0f ? dh[i] : 0.0f;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        float t = mathfn::tanh(z[i]);
        gz[i] = dh[i] * (1.0f - t * t);
      }
    }
    if (ctx.trace_full) {
      m_bwd_hash[bi]->update(gz, n * sizeof(float));
    }
    ++bi;
    g = gz;
  }
}

void MlpRunner::end_step(std::vector<TraceEntry>& forward, std::vector<TraceEntry>& backward) {
  forward.clear();
  backward.clear();
  for (size_t i = 0; i < m_fwd_names.size(); ++i) {
    forward.push_back({m_fwd_names[i], m_fwd_hash[i]->digest()});
  }
  auto& layers = m_model.layers();
  const size_t L = layers.size();
  size_t bi = 0;
  backward.push_back({m_bwd_names[bi], m_bwd_hash[bi]->digest()});
  ++bi;
  for (size_t l = L; l-- > 0;) {
    const Dense& d = layers[l];
    backward.push_back({m_bwd_names[bi++], xxh3_64(d.gw.data(), d.gw.size() * sizeof(float))});
    backward.push_back({m_bwd_names[bi++], xxh3_64(d.gb.data(), d.gb.size() * sizeof(float))});
    if (l == 0) {
      break;
    }
    backward.push_back({m_bwd_names[bi], m_bwd_hash[bi]->digest()});
    ++bi;
    backward.push_back({m_bwd_names[bi], m_bwd_hash[bi]->digest()});
    ++bi;
  }
}

void MlpRunner::evaluate(const float* x, const int32_t* y, long m, ThreadPool* pool, double& loss_sum,
                         long& correct) {
  const size_t L = m_model.layers().size();
  const long C = m_model.classes();
  for (long r0 = 0; r0 < m; r0 += m_max_rows) {
    long rows = std::min(m_max_rows, m - r0);
    forward(nullptr, x + r0 * m_model.features(), rows, r0, false, pool);
    const float* logits = m_z[L - 1].data();
    for (long r = 0; r < rows; ++r) {
      const float* z = logits + r * C;
      long best = 0;
      for (long j = 1; j < C; ++j) {
        if (z[j] > z[best]) {
          best = j;
        }
      }
      float zmax = z[best];
      double sum = 0.0;
      for (long j = 0; j < C; ++j) {
        sum += mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax));
      }
      loss_sum += mathfn::log(sum) - (static_cast<double>(z[y[r0 + r]]) - static_cast<double>(zmax));
      correct += best == y[r0 + r] ? 1 : 0;
    }
  }
}

} // namespace reprun
