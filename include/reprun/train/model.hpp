// The MLP: dense layers with ReLU or tanh and inverted dropout, softmax cross-entropy on top.
// Forward and backward of each layer sit side by side in model.cpp; every number is computed by
// the kernel backend (backend.hpp), whose contract fixes the order of every sum. Every tensor lives
// in the backend's memory (Buffer): on the GPU for the whole run with the CUDA backend.
#pragma once

#include "reprun/record/step_record.hpp"
#include "reprun/train/backend.hpp"
#include "reprun/train/config.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace reprun {

class Xxh3Stream;

// n floats of backend memory that another buffer owns.
struct TensorView {
  float* p = nullptr;
  size_t n = 0;
  float* data() const { return p; }
  size_t size() const { return n; }
};

// One dense layer; every buffer in backend memory.
struct Dense {
  long in = 0;
  long out = 0;
  Buffer<float> w;  // (in, out)
  Buffer<float> b;  // (out)
  TensorView gw;    // (in, out) gradient, summed over the step's micro-batches (in Mlp's gradients)
  TensorView gb;    // (out)
  Buffer<float> wt; // (out, in) transposed copy of w for the backward data pass
};

// A named view of one parameter tensor, in model order. `data` and `grad` are backend memory.
struct ParamRef {
  std::string name; // "dense_1.weight", "dense_1.bias", ...
  std::vector<long> shape;
  float* data;
  float* grad;
  size_t size;
};


class Mlp {
public:
  // The parameters and gradients are allocated in `backend`'s memory (gradients zero).
  Mlp(const ModelConfig& mc, long features, long classes, Backend& backend);
  // Initial weights (computed on the host, uploaded) and zero biases.
  void init(uint64_t seed);
  Backend& backend() const { return m_be; }
  // Sets every gradient to +0: one call, since the gradients are one allocation (on a GPU one
  // memset a step instead of one per tensor).
  void zero_grads() { m_grads.zero(); }
  std::vector<ParamRef> params();
  long parameter_count() const;
  const std::vector<Dense>& layers() const { return m_layers; }
  std::vector<Dense>& layers() { return m_layers; }
  long classes() const { return m_classes; }
  long features() const { return m_features; }

private:
  ModelConfig m_cfg;
  long m_features;
  long m_classes;
  Backend& m_be;
  Buffer<float> m_grads; // every layer's gw then gb, each at a multiple of 16 floats (64 bytes)
  std::vector<Dense> m_layers;
};

// Scratch and settings for one training step, kept across steps (no allocation per step).
struct StepContext {
  uint64_t seed = 0;
  long step = 0;            // 1-based step number being computed (dropout coordinates)
  long batch_size = 0;      // samples in the whole step (loss is the mean over them)
  bool atomic = false;      // reduction "atomic": weight-gradient partials summed in completion order
  bool trace_full = false;
};

class MlpRunner {
public:
  // `max_rows`: the most rows of one micro-batch or evaluation chunk. Computes on `backend`.
  MlpRunner(Mlp& model, const ModelConfig& mc, long max_rows, Backend& backend);
  ~MlpRunner();
  MlpRunner(const MlpRunner&) = delete;
  MlpRunner& operator=(const MlpRunner&) = delete;

  // Zeroes gradients and starts a step's trace.
  void begin_step(const StepContext& ctx);
  // Forward and backward over rows [row0, row0+m) of the step's batch; x (m, features) and y (m)
  // in backend memory. Adds to the gradients, and each sample's loss to *loss_sum (one double in
  // backend memory: float64, one chain in sample order across micro-batches, so the split cannot
  // change the sum; left alone with keep_for_chains).
  void micro_batch(const StepContext& ctx, const float* x, const int32_t* y, long m, long row0,
                   double* loss_sum);
  // Data-parallel ranks (ranks.cpp): with `on`, micro_batch computes the per-sample work only (the
  // whole of a rank's slice in one call, at most max_rows): it keeps each layer's output gradient
  // and each sample's loss, and leaves the weight gradients and loss_sum alone. The chains then
  // run, continuing those of the ranks before, through the three calls below.
  void keep_for_chains(bool on);
  // Rows [i0, i1) of layer l's weight gradient += the slice's a^T g (x: the slice's input).
  void chain_weight_grad(size_t l, long i0, long i1, const float* x, long m);
  // Layer l's bias gradient += the column sums of the slice's g.
  void chain_bias_grad(size_t l, long m);
  // loss_sum += each of the slice's m sample losses, in sample order (on the host).
  void add_row_losses(long m, double& loss_sum);

  // Final trace entries of the step (forward and backward lists).
  void end_step(std::vector<TraceEntry>& forward, std::vector<TraceEntry>& backward);

  // Evaluation forward pass (no dropout) over m rows (x, y in backend memory), `batch_rows`
  // (<= max_rows) at a time: adds each row's loss to *loss_sum in row order, and the correct count
  // to *correct (both backend memory). The batch size cannot change a bit of either
  // (docs/determinism.md).
  void evaluate(const float* x, const int32_t* y, long m, long batch_rows, double* loss_sum, long* correct);

private:
  void forward(const StepContext* ctx, const float* x, long m, long row0, bool train);
  // Trace full: adds n floats of backend memory to a trace hash (downloaded when not host memory).
  void trace(Xxh3Stream& h, const float* p, size_t n);

  Mlp& m_model;
  ModelConfig m_cfg;
  long m_max_rows;
  Backend& m_be;
  // Activations and gradients in backend memory.
  std::vector<Buffer<float>> m_z;    // per layer (rows, out): pre-activation
  std::vector<Buffer<float>> m_act;  // per hidden layer (rows, out): activation after dropout
  std::vector<Buffer<float>> m_mask; // per hidden layer (rows, out): dropout scale (0 or 1/(1-p))
  // (rows, widest) gradient flowing back, in two buffers used in turn: a layer's input gradient
  // is never written over the output gradient it is computed from (dense_backward_data may write
  // gz while it still reads g).
  Buffer<float> m_g[2];
  Buffer<float> m_dh;  // (rows, widest)
  bool m_keep = false;                    // keep_for_chains
  bool m_grads_unset = false;             // begin_step left the gradients to the step's first weight_grad
  std::vector<Buffer<float>> m_gl;   // per layer (rows, out): kept output gradient
  Buffer<double> m_row_loss;         // (rows): kept sample losses
  std::vector<float> m_host;         // trace full: a tensor downloaded to be hashed
  std::vector<double> m_host_rows;   // add_row_losses: the kept losses downloaded
  std::vector<std::unique_ptr<Xxh3Stream>> m_fwd_hash, m_bwd_hash; // trace full, per entry
  std::vector<std::string> m_fwd_names, m_bwd_names;
};

} // namespace reprun
