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

// One tensor of optimizer state, in backend memory.
struct StateTensor {
  std::string name; // "dense_1.weight.momentum", "dense_1.weight.adam_m", ...
  float* data;
  size_t size;
};

class Optimizer {
public:
  // The state is allocated in `backend`'s memory, zero; the params are the model's (same backend).
  Optimizer(const OptimizerConfig& cfg, std::vector<ParamRef> params, Backend& backend);
  // Applies one update with the gradients in the params; `t` is the 1-based step number. With
  // `norms`, also sums the squares of the updated weights (see weight_norm), kept in backend
  // memory until fetch_norms().
  void step(long t, bool norms = false);
  // Downloads the sums of squares of the last step(t, true), for norm().
  void fetch_norms();
  // weight_norm() of parameter `i` after the last step(..., true) and fetch_norms().
  double norm(size_t i) const;
  // Optimizer state, in a fixed order, for checkpoints.
  std::vector<StateTensor> state();
  // Sets every state tensor to zero (a fresh optimizer).
  void zero_state();

private:
  OptimizerConfig m_cfg;
  std::vector<ParamRef> m_params;
  Backend& m_be;
  std::vector<Buffer<float>> m_m; // momentum (sgd) or first moment (adam), per param
  std::vector<Buffer<float>> m_v; // second moment (adam)
  std::vector<UpdateTask> m_tasks; // fixed: chunks of k_update_chunk per parameter
  std::vector<size_t> m_task_param; // the parameter of each task
  Buffer<double> m_sq;             // per task: sum of squares after the update (backend memory)
  std::vector<double> m_sq_host;   // the same, fetched
};

} // namespace reprun
