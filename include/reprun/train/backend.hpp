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
//
// Memory: every pointer a compute call takes is backend memory, from allocate() (through
// Buffer<T>): host memory for the CPU backend, device memory for CUDA. The model's parameters,
// gradients, optimizer state and activations live there for the whole run, and so do the outputs
// of a step (the loss sum, the sums of squares, the per-row losses) until the step record needs
// them. The host reads backend memory only through download() (to_host) and writes it only through
// upload() (to_backend): explicit calls, which the CUDA emulator counts, and which cost nothing on
// the CPU backend, whose memory is the host's (host_memory()). A compute call may return before
// its work is done; a download waits for the work queued before it (docs/ARCHITECTURE.md).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
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
  // Wall time spent in the matrix products (their prologues and epilogues included) since the
  // backend was made, where the products run in the calls (the CPU backend); nullopt where a call
  // only queues its work (CUDA).
  virtual std::optional<double> gemm_seconds() const { return std::nullopt; }

  // ---- memory -------------------------------------------------------------------------------
  // Whether the backend computes on host memory (the CPU backend): then the host may read and
  // write its buffers in place, and to_host/to_backend copy nothing.
  virtual bool host_memory() const = 0;
  // `bytes` of backend memory, contents undefined (the CUDA emulator fills them with NaN).
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // Host to backend memory; backend memory to the host, after the work queued before it.
  virtual void upload(void* dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, const void* src, size_t bytes) = 0;
  // Zero bytes (+0.0 in every float and double).
  virtual void zero(void* p, size_t bytes) = 0;

  // A hint, with no effect on any value: the host will read these `n` rows of `bytes` each (host
  // memory: the next step's batch, gathered from the data set) before the next call of this hint.
  // A backend whose products run on the host may fetch them into the cache a little at a time
  // while its products compute (the CPU backend, at the end of each tile), so that the rows, read
  // at random from a data set larger than the cache, come from it rather than from DRAM.
  virtual void prefetch_rows(const void* const* rows, size_t n, size_t bytes) {
    (void)rows;
    (void)n;
    (void)bytes;
  }

  // ---- compute ------------------------------------------------------------------------------

  // C (M x N, row-major, leading dimension ldc) += A (M x K) * B (K x N, row-major, ldb).
  virtual void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc) = 0;
  // Every row of z (m x n) set to b (n): the start of z = a W + b.
  virtual void fill_rows(float* z, const float* b, long m, long n) = 0;
  // A dense layer's forward pass, z (m x out) = a (m x in) W (in x out) + b: fill_rows, then
  // gemm_acc (each element's chain starts from its bias), then, with `act`, act = f(z)
  // (activation). One call so that a backend may do it in one pass (the bias in the GEMM's
  // prologue, the activation in its epilogue: the same operations in the same order). z and act
  // must not overlap a, w or b.
  virtual void dense_forward(const float* a, const float* w, const float* b, long m, long in, long out, float* z,
                             Activation f, float* act) = 0;
  // A dense layer's backward data pass, dh (m x in) = g (m x out) wt (out x in) with each chain
  // starting from +0; with `mask`, dh *= mask (multiply); then gz = dh * f'(z) (activation_grad).
  // dh and gz must not overlap g or wt (a fused pass writes them while it still reads those).
  virtual void dense_backward_data(const float* g, const float* wt, long m, long out, long in, const float* mask,
                                   Activation f, const float* z, float* dh, float* gz) = 0;
  // wt (cols x rows) = w (rows x cols) transposed.
  virtual void transpose(const float* w, long rows, long cols, float* wt) = 0;
  virtual void activation(Activation f, const float* z, float* act, size_t n) = 0;
  // gz = dh * f'(z).
  virtual void activation_grad(Activation f, const float* z, const float* dh, float* gz, size_t n) = 0;
  // Inverted dropout on act (m x n): writes the mask (0 or 1/(1-p)) and scales act by it.
  virtual void dropout(const DropoutDraw& d, float* act, float* mask, long m, long n) = 0;
  // x *= mask, element-wise.
  virtual void multiply(float* x, const float* mask, size_t n) = 0;
  // Softmax cross-entropy of m rows of C logits: adds each row's loss to *loss_sum (one double in
  // backend memory) in row order, and writes the gradient of the batch mean,
  // g = (softmax - onehot(y)) * inv_batch.
  virtual void softmax_xent(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                            double* loss_sum) = 0;
  // Evaluation: adds each row's loss to *loss_sum in row order and counts the rows whose argmax is
  // y into *correct (both in backend memory).
  virtual void softmax_eval(const float* logits, const int32_t* y, long m, long C, double* loss_sum,
                            long* correct) = 0;
  // A dense layer's gradients from its input a (m x in) and output gradient g (m x out):
  // gw (in x out) += a^T g, gb (out) += column sums of g.
  virtual void weight_grad(Reduction r, const float* a, const float* g, long m, long in, long out, float* gw,
                           float* gb) = 0;
  // The first ordered weight_grad of a step, into gw and gb whatever they hold: the same bits as
  // zeroing them and calling weight_grad (a backend whose products can start from +0.0 in their
  // registers skips the pass that zeroes 1 MB of gradients a step).
  virtual void weight_grad_from_zero(const float* a, const float* g, long m, long in, long out, float* gw, float* gb) {
    zero(gw, static_cast<size_t>(in * out) * sizeof(float));
    zero(gb, static_cast<size_t>(out) * sizeof(float));
    weight_grad(Reduction::ordered, a, g, m, in, out, gw, gb);
  }
  // Applies `rule` to every task; with `sq` (one per task, backend memory), also each task's sum
  // of squares of its updated weights.
  virtual void update(const UpdateRule& rule, const std::vector<UpdateTask>& tasks, double* sq) = 0;
  // The XXH3-64 digest (core/hash.hpp's xxh3_64) of each tensor, n[i] floats of backend memory at
  // tensors[i], into hashes[i] on the host. Where the memory is not the host's, the digests are
  // computed there (xxh3_lanes.hpp) and only they cross.
  virtual void xxh3_tensors(const std::vector<const float*>& tensors, const std::vector<size_t>& n,
                            uint64_t* hashes) = 0;
};

// n values of T in backend memory, released through the backend that allocated them (which must
// outlive the buffer). Movable, not copyable; the contents start undefined.
template <class T> class Buffer {
public:
  Buffer() = default;
  Buffer(Backend& be, size_t n)
    : m_be(&be), m_p(n > 0 ? static_cast<T*>(be.allocate(n * sizeof(T))) : nullptr), m_n(n) {}
  Buffer(Buffer&& o) noexcept : m_be(o.m_be), m_p(o.m_p), m_n(o.m_n) {
    o.m_p = nullptr;
    o.m_n = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      reset();
      m_be = o.m_be;
      m_p = o.m_p;
      m_n = o.m_n;
      o.m_p = nullptr;
      o.m_n = 0;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  T* data() { return m_p; }
  const T* data() const { return m_p; }
  size_t size() const { return m_n; }
  size_t bytes() const { return m_n * sizeof(T); }
  // Sets every value to +0.
  void zero() {
    if (m_p) {
      m_be->zero(m_p, bytes());
    }
  }

private:
  void reset() {
    if (m_p) {
      m_be->release(m_p);
    }
    m_p = nullptr;
    m_n = 0;
  }
  Backend* m_be = nullptr;
  T* m_p = nullptr;
  size_t m_n = 0;
};

// n host values for the backend to read: the host memory itself where the backend computes on host
// memory, else uploaded into `staging` (grown when too small).
template <class T> const T* to_backend(Backend& be, const T* host, size_t n, Buffer<T>& staging) {
  if (be.host_memory() || n == 0) {
    return host;
  }
  if (staging.size() < n) {
    staging = Buffer<T>(be, n);
  }
  be.upload(staging.data(), host, n * sizeof(T));
  return staging.data();
}

// n values of backend memory for the host to read: the memory itself on a host-memory backend,
// else downloaded into `staging`.
template <class T> const T* to_host(Backend& be, const T* p, size_t n, std::vector<T>& staging) {
  if (be.host_memory() || n == 0) {
    return p;
  }
  staging.resize(n);
  be.download(staging.data(), p, n * sizeof(T));
  return staging.data();
}

// One value of backend memory, read on the host.
template <class T> T read_one(Backend& be, const T* p) {
  T v{};
  if (be.host_memory()) {
    v = *p;
  } else {
    be.download(&v, p, sizeof(T));
  }
  return v;
}

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
