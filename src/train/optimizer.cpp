// Optimizer updates. Compiled with -ffp-contract=off: each expression is evaluated as written.
#include "reprun/optimizer.hpp"

#include "reprun/threadpool.hpp"

#include <algorithm>
#include <cmath>

namespace reprun {

namespace {
constexpr size_t k_update_chunk = 16384; // elements per task, fixed

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

Optimizer::Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params)
  : m_cfg(cfg), m_params(std::move(params)) {
  for (const auto& p : m_params) {
    m_m.emplace_back(p.size, 0.0f);
    if (m_cfg.name == "adam") {
      m_v.emplace_back(p.size, 0.0f);
    }
  }
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

void Optimizer::step(long t, ThreadPool* pool) {
  const float lr = static_cast<float>(m_cfg.lr);
  const float wd = static_cast<float>(m_cfg.weight_decay);
  struct Task {
    size_t param, begin, end;
  };
  std::vector<Task> tasks;
  for (size_t p = 0; p < m_params.size(); ++p) {
    for (size_t b = 0; b < m_params[p].size; b += k_update_chunk) {
      tasks.push_back({p, b, std::min(m_params[p].size, b + k_update_chunk)});
    }
  }
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
  };
  pool->parallel_for(static_cast<int>(tasks.size()), run);
}

} // namespace reprun
