// Optimizer updates. Compiled with -ffp-contract=off: each expression is evaluated as written.
#include "reprun/train/optimizer.hpp"

#include "reprun/core/threadpool.hpp"

#include <algorithm>
#include <cmath>

namespace reprun {

namespace {
// Sum of squares of one chunk: 8 lanes in index order, then the lanes 0..7.
double chunk_sq(const float* x, size_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (size_t j = 0; j < 8; ++j) {
      const double v = static_cast<double>(x[i + j]);
      lane[j] += v * v;
    }
  }
  for (size_t j = 0; i < n; ++i, ++j) {
    lane[j] += static_cast<double>(x[i]) * static_cast<double>(x[i]);
  }
  double s = 0.0;
  for (double l : lane) {
    s += l;
  }
  return s;
}

double powi(double base, long e) {
  double r = 1.0;
  double b = base;
  while (e > 0) {
    if (e & 1) {
      r *= b;
    }
    b *= b;
    e >>= 1;
  }
  return r;
}
} // namespace

double weight_norm(const float* x, size_t n) {
  double sq = 0.0;
  for (size_t b = 0; b < n; b += k_update_chunk) {
    sq += chunk_sq(x + b, std::min(k_update_chunk, n - b));
  }
  return std::sqrt(sq);
}

Optimizer::Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params)
  : m_cfg(cfg), m_params(std::move(params)) {
  for (size_t p = 0; p < m_params.size(); ++p) {
    m_m.emplace_back(m_params[p].size, 0.0f);
    if (m_cfg.name == "adam") {
      m_v.emplace_back(m_params[p].size, 0.0f);
    }
    for (size_t b = 0; b < m_params[p].size; b += k_update_chunk) {
      m_tasks.push_back({p, b, std::min(m_params[p].size, b + k_update_chunk)});
    }
  }
  m_sq.assign(m_tasks.size(), 0.0);
}

double Optimizer::norm(size_t i) const {
  double sq = 0.0;
  for (size_t t = 0; t < m_tasks.size(); ++t) {
    if (m_tasks[t].param == i) {
      sq += m_sq[t];
    }
  }
  return std::sqrt(sq);
}

std::vector<StateTensor> Optimizer::state() {
  std::vector<StateTensor> s;
  for (size_t i = 0; i < m_params.size(); ++i) {
    if (m_cfg.name == "sgd") {
      s.push_back({m_params[i].name + ".momentum", &m_m[i]});
    } else {
      s.push_back({m_params[i].name + ".adam_m", &m_m[i]});
      s.push_back({m_params[i].name + ".adam_v", &m_v[i]});
    }
  }
  return s;
}

void Optimizer::step(long t, ThreadPool* pool, bool norms) {
  const float lr = static_cast<float>(m_cfg.lr);
  const float wd = static_cast<float>(m_cfg.weight_decay);
  const std::vector<Task>& tasks = m_tasks;
  if (m_cfg.name == "sgd") {
    const float mu = static_cast<float>(m_cfg.momentum);
    auto run = [&](int ti, int) {
      const Task& k = tasks[static_cast<size_t>(ti)];
      float* w = m_params[k.param].data;
      const float* g = m_params[k.param].grad;
      float* v = m_m[k.param].data();
      // Branch-free loops per case, so they vectorize; each is the same expression as written.
      if (wd != 0.0f) {
        for (size_t i = k.begin; i < k.end; ++i) {
          float gi = g[i] + wd * w[i];
          v[i] = mu * v[i] + gi;
          w[i] = w[i] - lr * v[i];
        }
      } else {
        for (size_t i = k.begin; i < k.end; ++i) {
          v[i] = mu * v[i] + g[i];
          w[i] = w[i] - lr * v[i];
        }
      }
      if (norms) {
        m_sq[static_cast<size_t>(ti)] = chunk_sq(w + k.begin, k.end - k.begin); // still in cache
      }
    };
    pool->parallel_for(static_cast<int>(tasks.size()), run);
    return;
  }
  const float b1 = static_cast<float>(m_cfg.beta1);
  const float b2 = static_cast<float>(m_cfg.beta2);
  const float eps = static_cast<float>(m_cfg.eps);
  const float bc1 = static_cast<float>(1.0 - powi(m_cfg.beta1, t));
  const float bc2_sqrt = static_cast<float>(std::sqrt(1.0 - powi(m_cfg.beta2, t)));
  const float step_size = lr / bc1;
  auto run = [&](int ti, int) {
    const Task& k = tasks[static_cast<size_t>(ti)];
    float* w = m_params[k.param].data;
    const float* g = m_params[k.param].grad;
    float* m = m_m[k.param].data();
    float* v = m_v[k.param].data();
    for (size_t i = k.begin; i < k.end; ++i) {
      float gi = wd != 0.0f ? g[i] + wd * w[i] : g[i];
      m[i] = b1 * m[i] + (1.0f - b1) * gi;
      v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
      float denom = std::sqrt(v[i]) / bc2_sqrt + eps;
      w[i] = w[i] - step_size * (m[i] / denom);
    }
    if (norms) {
      m_sq[static_cast<size_t>(ti)] = chunk_sq(w + k.begin, k.end - k.begin);
    }
  };
  pool->parallel_for(static_cast<int>(tasks.size()), run);
}

} // namespace reprun
