// The kernel backend of the trainer: every operation the model and the optimizer perform on
// numbers, behind one interface. model.cpp and optimizer.cpp call only this; the CPU backend
// (backend_cpu.cpp: the portable, AVX2 or AVX-512 GEMM chosen once, the thread pool) is the first
// implementation; the CUDA backend (backend_cuda.cu, determinism.device "cuda") is the second.
//
// The contract every implementation keeps, which is what makes the bits independent of the
// backend, the thread count and the micro-batch split (docs/determinism.md):
// - gemm_acc: each element of C is ONE chain of fused multiply-adds over k = 0..K-1 in order,
//   starting from C's current value; no element's sum is ever split;
// - weight_grad (ordered): gw += a^T g and gb += the column sums of g, one chain per element over
//   the rows in order, continuing across micro-batches;
// - softmax_xent: per row in float64 with mathfn's exp and log; the row losses added to loss_sum
//   in row order;
// - dropout: the mask of (seed, step, layer, sample, unit) is one Philox draw, whatever the split;
// - update: element-wise rules as written (no contraction), and each task's sum of squares of the
//   updated weights in the fixed 8-lane order of weight_norm().
// Pointers are host pointers (or memory the GPU can address); the results are in place when a
// call returns. The CUDA backend copies host memory in and out per call (docs/ARCHITECTURE.md).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace reprun {

class ThreadPool;

// A read-only matrix with arbitrary strides: element (i, j) at data[i * rs + j * cs]. A transposed
// view is the same memory with the strides swapped.
struct MatView {
  const float* data;
  long rs; // stride between rows
  long cs; // stride between columns
  float at(long i, long j) const { return data[i * rs + j * cs]; }
};

enum class Activation { relu, tanh };
enum class Reduction { ordered, atomic };

// The dropout draw of one micro-batch of one layer.
struct DropoutDraw {
  uint64_t seed = 0;
  long step = 0;   // 1-based optimizer step
  long layer = 0;  // 0-based layer index
  long row0 = 0;   // index of the micro-batch's first sample in the step's batch
  double p = 0.0;  // drop probability, 0 < p < 1
};

// One optimizer update rule, with its per-step constants.
struct UpdateRule {
  enum class Kind { sgd, adam } kind = Kind::sgd;
  float lr = 0, weight_decay = 0;
  float momentum = 0;                              // sgd
  float beta1 = 0, beta2 = 0, eps = 0;             // adam
  float bias_correction2_sqrt = 1, step_size = 0;  // adam: sqrt(1 - beta2^t), lr / (1 - beta1^t)
};

// Elements [begin, end) of one parameter and its state.
struct UpdateTask {
  float* w;
  const float* g;
  float* m; // sgd: momentum; adam: first moment
  float* v; // adam: second moment (nullptr for sgd)
  size_t begin, end;
};

class Backend {
public:
  virtual ~Backend() = default;
  // The kernels chosen, for the manifest: {"gemm": "avx512"}.
  virtual nlohmann::ordered_json kernels() const = 0;

  // C (M x N, row-major, leading dimension ldc) += A (M x K) * B (K x N, row-major, ldb).
  virtual void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc) = 0;
  // Every row of z (m x n) set to b (n): the start of z = a W + b.
  virtual void fill_rows(float* z, const float* b, long m, long n) = 0;
  // wt (cols x rows) = w (rows x cols) transposed.
  virtual void transpose(const float* w, long rows, long cols, float* wt) = 0;
  virtual void activation(Activation f, const float* z, float* act, size_t n) = 0;
  // gz = dh * f'(z).
  virtual void activation_grad(Activation f, const float* z, const float* dh, float* gz, size_t n) = 0;
  // Inverted dropout on act (m x n): writes the mask (0 or 1/(1-p)) and scales act by it.
  virtual void dropout(const DropoutDraw& d, float* act, float* mask, long m, long n) = 0;
  // x *= mask, element-wise.
  virtual void multiply(float* x, const float* mask, size_t n) = 0;
  // Softmax cross-entropy of m rows of C logits: adds each row's loss to loss_sum, and writes the
  // gradient of the batch mean, g = (softmax - onehot(y)) * inv_batch.
  virtual void softmax_xent(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                            double& loss_sum) = 0;
  // Evaluation: adds each row's loss to loss_sum and counts the rows whose argmax is y.
  virtual void softmax_eval(const float* logits, const int32_t* y, long m, long C, double& loss_sum,
                            long& correct) = 0;
  // A dense layer's gradients from its input a (m x in) and output gradient g (m x out):
  // gw (in x out) += a^T g, gb (out) += column sums of g.
  virtual void weight_grad(Reduction r, const float* a, const float* g, long m, long in, long out, float* gw,
                           float* gb) = 0;
  // Applies `rule` to every task; with `sq` (one per task), also each task's sum of squares of
  // its updated weights.
  virtual void update(const UpdateRule& rule, const std::vector<UpdateTask>& tasks, double* sq) = 0;
};

// The CPU backend: the best GEMM kernel this CPU has (or REPRUN_GEMM_KERNEL's), work split over
// `pool` (nullptr: this thread only).
std::unique_ptr<Backend> make_cpu_backend(ThreadPool* pool);

// The CUDA backend (backend_cuda.cu): every element computed as the CPU backend computes it, on the
// first GPU. Call only when cuda_unavailable() is empty.
std::unique_ptr<Backend> make_cuda_backend();

// Why the CUDA backend cannot run here, in words ("" when it can): a build without CUDA, no
// driver, no GPU.
std::string cuda_unavailable();

// The kernels a run on this machine uses, for the manifest and `reprun env` ({"gemm": "avx512"}).
nlohmann::ordered_json kernel_facts();

// Sum of squares of n floats in float64: 8 lanes (lane j sums elements j, j+8, ... in index
// order), then the lanes added 0..7. weight_norm and every backend's update use this order.
double sum_squares_8lane(const float* x, size_t n);

} // namespace reprun
