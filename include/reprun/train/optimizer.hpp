// SGD with momentum and Adam, with PyTorch's update rules (L2 weight decay added to the gradient).
// Updates are element-wise, so splitting them across threads cannot change a bit.
#pragma once

#include "reprun/train/config.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/model.hpp"

#include <string>
#include <vector>

namespace reprun {


// Elements per optimizer task; also the chunk of the norm's fixed summation order.
inline constexpr size_t k_update_chunk = 16384;

// L2 norm in float64 with one fixed order: per chunk of k_update_chunk elements, 8 lanes (lane j
// sums elements j, j+8, ... in index order) added 0..7; then the chunk sums in chunk order. The
// optimizer computes the same sums during its update pass, so both give the same bits.
double weight_norm(const float* x, size_t n);

struct StateTensor {
  std::string name; // "dense_1.weight.momentum", "dense_1.weight.adam_m", ...
  std::vector<float>* data;
};

class Optimizer {
public:
  Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params);
  // Applies one update with the gradients in the params; `t` is the 1-based step number. With
  // `norms`, also sums the squares of the updated weights (see weight_norm) for norm().
  void step(long t, Backend& backend, bool norms = false);
  // weight_norm() of parameter `i` after the last step(..., true).
  double norm(size_t i) const;
  // Optimizer state, in a fixed order, for checkpoints.
  std::vector<StateTensor> state();

private:
  OptimizerConfig m_cfg;
  std::vector<ParamRef> m_params;
  std::vector<std::vector<float>> m_m; // momentum (sgd) or first moment (adam), per param
  std::vector<std::vector<float>> m_v; // second moment (adam)
  std::vector<UpdateTask> m_tasks; // fixed: chunks of k_update_chunk per parameter
  std::vector<size_t> m_task_param; // the parameter of each task
  std::vector<double> m_sq;    // per task: sum of squares after the update
};

} // namespace reprun
