// Optimizer state and the per-step constants of its update rules; the updates themselves run on
// the kernel backend (backend.hpp).
#include "reprun/train/optimizer.hpp"


#include <algorithm>
#include <cmath>

namespace reprun {

namespace {
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
    sq += sum_squares_8lane(x + b, std::min(k_update_chunk, n - b));
  }
  return std::sqrt(sq);
}

Optimizer::Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params, Backend& backend)
  : m_cfg(cfg), m_params(std::move(params)), m_be(backend) {
  for (size_t p = 0; p < m_params.size(); ++p) {
    m_m.emplace_back(backend, m_params[p].size);
    if (m_cfg.name == "adam") {
      m_v.emplace_back(backend, m_params[p].size);
    }
  }
  zero_state();
  // The tasks point into m_m and m_v, which are not resized after this.
  for (size_t p = 0; p < m_params.size(); ++p) {
    for (size_t b = 0; b < m_params[p].size; b += k_update_chunk) {
      m_tasks.push_back({m_params[p].data, m_params[p].grad, m_m[p].data(),
                         m_cfg.name == "adam" ? m_v[p].data() : nullptr, b,
                         std::min(m_params[p].size, b + k_update_chunk)});
      m_task_param.push_back(p);
    }
  }
  m_sq = Buffer<double>(backend, m_tasks.size());
  m_sq.zero();
  m_sq_host.assign(m_tasks.size(), 0.0);
}

void Optimizer::fetch_norms() {
  if (!m_tasks.empty()) {
    m_be.download(m_sq_host.data(), m_sq.data(), m_sq.bytes());
  }
}

double Optimizer::norm(size_t i) const {
  double sq = 0.0;
  for (size_t t = 0; t < m_tasks.size(); ++t) {
    if (m_task_param[t] == i) {
      sq += m_sq_host[t];
    }
  }
  return std::sqrt(sq);
}

void Optimizer::zero_state() {
  for (auto& b : m_m) {
    b.zero();
  }
  for (auto& b : m_v) {
    b.zero();
  }
}

std::vector<StateTensor> Optimizer::state() {
  std::vector<StateTensor> s;
  for (size_t i = 0; i < m_params.size(); ++i) {
    if (m_cfg.name == "sgd") {
      s.push_back({m_params[i].name + ".momentum", m_m[i].data(), m_m[i].size()});
    } else {
      s.push_back({m_params[i].name + ".adam_m", m_m[i].data(), m_m[i].size()});
      s.push_back({m_params[i].name + ".adam_v", m_v[i].data(), m_v[i].size()});
    }
  }
  return s;
}

void Optimizer::step(long t, bool norms) {
  UpdateRule rule;
  rule.lr = static_cast<float>(m_cfg.lr);
  rule.weight_decay = static_cast<float>(m_cfg.weight_decay);
  if (m_cfg.name == "sgd") {
    rule.kind = UpdateRule::Kind::sgd;
    rule.momentum = static_cast<float>(m_cfg.momentum);
  } else {
    rule.kind = UpdateRule::Kind::adam;
    rule.beta1 = static_cast<float>(m_cfg.beta1);
    rule.beta2 = static_cast<float>(m_cfg.beta2);
    rule.eps = static_cast<float>(m_cfg.eps);
    const float bc1 = static_cast<float>(1.0 - powi(m_cfg.beta1, t));
    rule.bias_correction2_sqrt = static_cast<float>(std::sqrt(1.0 - powi(m_cfg.beta2, t)));
    rule.step_size = rule.lr / bc1;
  }
  m_be.update(rule, m_tasks, norms ? m_sq.data() : nullptr);
}

} // namespace reprun
