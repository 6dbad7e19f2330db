// SGD with momentum and Adam, with PyTorch's update rules (L2 weight decay added to the gradient).
// Updates are element-wise, so splitting them across threads cannot change a bit.
#pragma once

#include "reprun/config.hpp"
#include "reprun/model.hpp"

#include <string>
#include <vector>

namespace reprun {

class ThreadPool;

struct StateTensor {
  std::string name; // "dense_1.weight.momentum", "dense_1.weight.adam_m", ...
  std::vector<float>* data;
};

class Optimizer {
public:
  Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params);
  // Applies one update with the gradients in the params; `t` is the 1-based step number.
  void step(long t, ThreadPool* pool);
  // Optimizer state, in a fixed order, for checkpoints.
  std::vector<StateTensor> state();

private:
  OptimizerConfig m_cfg;
  std::vector<ParamRef> m_params;
  std::vector<std::vector<float>> m_m; // momentum (sgd) or first moment (adam), per param
  std::vector<std::vector<float>> m_v; // second moment (adam)
};

} // namespace reprun
