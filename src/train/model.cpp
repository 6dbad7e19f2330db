// MLP forward and backward, layer by layer, side by side. Every number is computed by the kernel
// backend (backend.hpp), whose contract makes the result independent of threads, of the backend
// and of how a batch is cut into micro-batches; this file only says what is computed, in order.
// Every tensor is backend memory; the host reads one only for the trace (to_host).
#include "reprun/train/model.hpp"

#include "reprun/core/hash.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/rng.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace reprun {

namespace {
Activation activation_of(const ModelConfig& mc) { return mc.activation == "tanh" ? Activation::tanh : Activation::relu; }
} // namespace

Mlp::Mlp(const ModelConfig& mc, long features, long classes, Backend& backend)
  : m_cfg(mc), m_features(features), m_classes(classes), m_be(backend) {
  std::vector<long> widths = mc.hidden;
  widths.push_back(classes);
  // The gradients in one allocation, each tensor 64-byte aligned as an allocation of its own is.
  auto padded = [](size_t n) { return (n + 15) / 16 * 16; };
  size_t grads = 0;
  long fan_in = features;
  for (long out : widths) {
    grads += padded(static_cast<size_t>(fan_in * out)) + padded(static_cast<size_t>(out));
    fan_in = out;
  }
  m_grads = Buffer<float>(backend, grads);
  size_t at = 0;
  long in = features;
  for (long out : widths) {
    Dense d;
    d.in = in;
    d.out = out;
    const size_t nw = static_cast<size_t>(in * out), nb = static_cast<size_t>(out);
    d.w = Buffer<float>(backend, nw);
    d.b = Buffer<float>(backend, nb);
    d.gw = {m_grads.data() + at, nw};
    at += padded(nw);
    d.gb = {m_grads.data() + at, nb};
    at += padded(nb);
    d.wt = Buffer<float>(backend, nw);
    d.w.zero();
    d.b.zero();
    d.wt.zero();
    m_layers.push_back(std::move(d));
    in = out;
  }
  zero_grads();
}

void Mlp::init(uint64_t seed) {
  // Kaiming-uniform weights U(-sqrt(6/in), sqrt(6/in)) (ReLU) or Xavier-uniform
  // U(-sqrt(6/(in+out)), ...) (tanh); biases zero. sqrt is exactly rounded by IEEE 754. Drawn on
  // the host, once per run, and uploaded.
  std::vector<float> w;
  for (size_t l = 0; l < m_layers.size(); ++l) {
    Dense& d = m_layers[l];
    double fan = m_cfg.activation == "tanh" ? static_cast<double>(d.in + d.out) : static_cast<double>(d.in);
    float bound = static_cast<float>(std::sqrt(6.0 / fan));
    w.resize(d.w.size());
    for (size_t i = 0; i < w.size(); i += 4) {
      Philox4 r = draw(seed, Stream::init, static_cast<uint32_t>(l), 0, static_cast<uint32_t>(i / 4));
      for (size_t k = 0; k < 4 && i + k < w.size(); ++k) {
        w[i + k] = (2.0f * to_unit_float(r[k]) - 1.0f) * bound;
      }
    }
    if (!w.empty()) {
      m_be.upload(d.w.data(), w.data(), d.w.bytes());
    }
    d.b.zero();
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

MlpRunner::MlpRunner(Mlp& model, const ModelConfig& mc, long max_rows, Backend& backend)
  : m_model(model), m_cfg(mc), m_max_rows(max_rows), m_be(backend) {
  long widest = model.features();
  for (const auto& d : model.layers()) {
    m_z.emplace_back(backend, static_cast<size_t>(max_rows * d.out));
    widest = std::max(widest, d.out);
  }
  for (size_t l = 0; l + 1 < model.layers().size(); ++l) {
    m_act.emplace_back(backend, static_cast<size_t>(max_rows * model.layers()[l].out));
    m_mask.emplace_back(backend, static_cast<size_t>(max_rows * model.layers()[l].out));
  }
  m_g[0] = Buffer<float>(backend, static_cast<size_t>(max_rows * widest));
  m_g[1] = Buffer<float>(backend, static_cast<size_t>(max_rows * widest));
  m_dh = Buffer<float>(backend, static_cast<size_t>(max_rows * widest));
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
  // One process, ordered: the step's first micro-batch writes every gradient from zero
  // (weight_grad_from_zero), no pass zeroes them first. The chains of ranks continue from zeros,
  // and atomic mode adds its partials into them.
  m_grads_unset = !m_keep && !ctx.atomic;
  if (!m_grads_unset) {
    m_model.zero_grads();
  }
  for (size_t l = 0; l < layers.size(); ++l) {
    Dense& d = layers[l];
    if (l == 0) {
      continue; // the first layer's input gradient is never needed, nor its transposed weights
    }
    // Transposed weights for dX = dY * W^T (the weights do not change within a step).
    m_be.transpose(d.w.data(), d.in, d.out, d.wt.data());
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

void MlpRunner::trace(Xxh3Stream& h, const float* p, size_t n) {
  const float* host = to_host(m_be, p, n, m_host);
  h.update(host, n * sizeof(float));
}

void MlpRunner::forward(const StepContext* ctx, const float* x, long m, long row0, bool train) {
  auto& layers = m_model.layers();
  const size_t L = layers.size();
  const bool trace_full = ctx && ctx->trace_full;
  size_t fi = 0;
  if (trace_full) {
    trace(*m_fwd_hash[fi], x, static_cast<size_t>(m * m_model.features()));
  }
  ++fi;
  const float* a = x;
  for (size_t l = 0; l < L; ++l) {
    Dense& d = layers[l];
    float* z = m_z[l].data();
    const bool hidden = l + 1 < L;
    float* act = hidden ? m_act[l].data() : nullptr;
    // z = a * W + b: each element starts from its bias, then one fma chain over the inputs; then
    // the activation of a hidden layer.
    m_be.dense_forward(a, d.w.data(), d.b.data(), m, d.in, d.out, z, activation_of(m_cfg), act);
    const size_t n = static_cast<size_t>(m * d.out);
    if (trace_full) {
      trace(*m_fwd_hash[fi++], z, n);
    }
    if (!hidden) {
      break;
    }
    if (train && m_cfg.dropout > 0.0) {
      // Inverted dropout; the mask is a pure function of (seed, step, layer, sample, unit).
      m_be.dropout({ctx->seed, ctx->step, static_cast<long>(l), row0, m_cfg.dropout}, act, m_mask[l].data(), m,
                   d.out);
    }
    if (trace_full) {
      trace(*m_fwd_hash[fi++], act, n);
    }
    a = act;
  }
}

void MlpRunner::micro_batch(const StepContext& ctx, const float* x, const int32_t* y, long m, long row0,
                            double* loss_sum) {
  auto& layers = m_model.layers();
  const size_t L = layers.size();
  forward(&ctx, x, m, row0, true);
  // Softmax cross-entropy in float64 with our own exp/log; gradient of the batch mean.
  const long C = m_model.classes();
  float* g = m_keep ? m_gl[L - 1].data() : m_g[0].data();
  const double inv_batch = 1.0 / static_cast<double>(ctx.batch_size);
  if (m_keep) {
    // Each sample's loss on its own (0.0 + loss is the loss exactly), added later in sample order
    // into the chain another rank began (add_row_losses).
    m_row_loss.zero();
    for (long r = 0; r < m; ++r) {
      m_be.softmax_xent(m_z[L - 1].data() + r * C, y + r, 1, C, inv_batch, g + r * C, m_row_loss.data() + r);
    }
  } else {
    m_be.softmax_xent(m_z[L - 1].data(), y, m, C, inv_batch, g, loss_sum);
  }
  size_t bi = 0;
  if (ctx.trace_full) {
    trace(*m_bwd_hash[bi], g, static_cast<size_t>(m * C));
  }
  ++bi;
  for (size_t l = L; l-- > 0;) {
    Dense& d = layers[l];
    const float* a = l == 0 ? x : m_act[l - 1].data();
    if (m_grads_unset) {
      m_be.weight_grad_from_zero(a, g, m, d.in, d.out, d.gw.data(), d.gb.data());
    } else if (!m_keep) {
      m_be.weight_grad(ctx.atomic ? Reduction::atomic : Reduction::ordered, a, g, m, d.in, d.out, d.gw.data(),
                       d.gb.data());
    }
    bi += 2; // weight and bias gradients are hashed once complete, in end_step
    if (l == 0) {
      break;
    }
    // dh (m, in) = g (m, out) * W^T (out, in), times the dropout mask; gz = dh * f'(z).
    float* dh = m_dh.data();
    float* gz = m_keep ? m_gl[l - 1].data() : m_g[g == m_g[0].data() ? 1 : 0].data();
    const float* mask = m_cfg.dropout > 0.0 ? m_mask[l - 1].data() : nullptr;
    m_be.dense_backward_data(g, d.wt.data(), m, d.out, d.in, mask, activation_of(m_cfg), m_z[l - 1].data(), dh, gz);
    const size_t n = static_cast<size_t>(m * d.in);
    if (ctx.trace_full) {
      trace(*m_bwd_hash[bi], dh, n);
    }
    ++bi;
    if (ctx.trace_full) {
      trace(*m_bwd_hash[bi], gz, n);
    }
    ++bi;
    g = gz;
  }
  m_grads_unset = false; // every layer's gradients written: later micro-batches add to them
}

void MlpRunner::keep_for_chains(bool on) {
  m_keep = on;
  if (on && m_gl.empty()) {
    for (const auto& d : m_model.layers()) {
      m_gl.emplace_back(m_be, static_cast<size_t>(m_max_rows * d.out));
    }
    m_row_loss = Buffer<double>(m_be, static_cast<size_t>(m_max_rows));
  }
}

void MlpRunner::chain_weight_grad(size_t l, long i0, long i1, const float* x, long m) {
  Dense& d = m_model.layers()[l];
  const float* a = l == 0 ? x : m_act[l - 1].data();
  const float* g = m_gl[l].data();
  // Rows [i0, i1) of gw (in, out) += a^T g: the same chain per element as weight_grad's, over
  // this slice's samples, continuing from gw's current value.
  m_be.gemm_acc(i1 - i0, d.out, m, MatView{a + i0, 1, d.in}, g, d.out, d.gw.data() + i0 * d.out, d.out);
}

void MlpRunner::chain_bias_grad(size_t l, long m) {
  Dense& d = m_model.layers()[l];
  // weight_grad with no input column: only gb += the column sums of g, in row order.
  m_be.weight_grad(Reduction::ordered, nullptr, m_gl[l].data(), m, 0, d.out, d.gw.data(), d.gb.data());
}

void MlpRunner::add_row_losses(long m, double& loss_sum) {
  const double* rows = to_host(m_be, m_row_loss.data(), static_cast<size_t>(m), m_host_rows);
  for (long r = 0; r < m; ++r) {
    loss_sum += rows[r];
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
    const float* gw = to_host(m_be, d.gw.data(), d.gw.size(), m_host);
    backward.push_back({m_bwd_names[bi++], xxh3_64(gw, d.gw.size() * sizeof(float))});
    const float* gb = to_host(m_be, d.gb.data(), d.gb.size(), m_host);
    backward.push_back({m_bwd_names[bi++], xxh3_64(gb, d.gb.size() * sizeof(float))});
    if (l == 0) {
      break;
    }
    backward.push_back({m_bwd_names[bi], m_bwd_hash[bi]->digest()});
    ++bi;
    backward.push_back({m_bwd_names[bi], m_bwd_hash[bi]->digest()});
    ++bi;
  }
}

void MlpRunner::evaluate(const float* x, const int32_t* y, long m, long batch_rows, double* loss_sum, long* correct) {
  const size_t L = m_model.layers().size();
  // Each logit is one chain over its inputs whatever the number of rows, and softmax_eval adds
  // row by row into the one loss_sum: no per-batch partial sum, so the cut cannot change a bit.
  const long step = std::clamp(batch_rows, 1L, m_max_rows);
  for (long r0 = 0; r0 < m; r0 += step) {
    const long rows = std::min(step, m - r0);
    forward(nullptr, x + r0 * m_model.features(), rows, r0, false);
    m_be.softmax_eval(m_z[L - 1].data(), y + r0, rows, m_model.classes(), loss_sum, correct);
  }
}

} // namespace reprun
