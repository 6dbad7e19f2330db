// The CUDA kernel backend: see include/reprun/train/backend.hpp for the contract. Every element is
// computed by the functions of elementwise.hpp (the same source the unit tests run on the CPU) or,
// for the GEMM, by one __fmaf_rn chain over k in increasing order starting from C's value: tiled
// SIMT, no split-K, no tensor cores, no cuBLAS. Compiled with -fmad=false (CMakeLists.txt).
// Not here: anything faster at the price of another order (docs/determinism.md says what is avoided).
//
// Memory: the interface passes host pointers (model.cpp owns std::vector buffers, and the step
// log, checksums and checkpoints read them). Each call binds its pointers: memory the GPU can
// already address (cudaMalloc'd or managed) is used in place; host memory is copied into a device
// buffer kept per argument slot, and the outputs are copied back before the call returns. So
// after every call the host sees every result, and the training loop and the model do not know
// the backend (docs/ARCHITECTURE.md). The copies cost time, not bits.
#include "reprun/train/backend.hpp"

#include "reprun/core/error.hpp"
#include "reprun/train/elementwise.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

// Every kernel is launched as REPRUN_LAUNCH(kernel, grid, block)(arguments): nvcc's <<<grid, block>>>
// here; the CPU emulator of the tests (tests/cuda_emu/cuda_runtime.h) defines it to run the kernel
// on the host, so that CI, which has no GPU, runs this file's kernels.
#ifndef REPRUN_LAUNCH
#define REPRUN_LAUNCH(kernel, grid, block) kernel<<<grid, block>>>
#endif

#ifndef REPRUN_CUDA_ARCHITECTURES
#define REPRUN_CUDA_ARCHITECTURES ""
#endif

namespace reprun {

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear
    throw Error("cuda", std::string(what) + ": " + cudaGetErrorString(e));
  }
}

// After a launch: a bad configuration is reported now, a fault in the kernel at the next sync.
void check_launch(const char* kernel) { check(cudaGetLastError(), kernel); }

constexpr int k_threads = 256;

unsigned blocks_for(size_t n) { return static_cast<unsigned>((n + k_threads - 1) / k_threads); }

// ---- kernels ---------------------------------------------------------------------------------

// C (M x N, ldc) += A (M x K, strides rs/cs) * B (K x N, ldb). A block of 16 x 16 threads computes
// a 128 x 128 tile of C; thread (tx, ty) owns the 8 x 8 elements of rows ty + 16 mi and columns
// tx + 16 ni (so a warp's shared-memory reads fall in distinct banks or are broadcasts). Each
// element's chain starts from C's value and runs over k = 0..K-1 in order, one __fmaf_rn per k:
// the 16-deep shared-memory tiles only stage the operands, and a k beyond K is never applied
// (fma(0, x, -0) would turn -0 into +0). No split-K, no tensor cores: the CPU's chain, element by
// element.
constexpr int k_bm = 128, k_bn = 128, k_bk = 16, k_tdim = 16, k_tm = k_bm / k_tdim, k_tn = k_bn / k_tdim;
constexpr int k_apad = 4; // as[kk][ii]: a row-major A's loads store k-fastest; the pad spreads the banks

// At most 128 registers a thread, so that two blocks fit on an SM.
__global__ void __launch_bounds__(k_tdim * k_tdim, 2)
    gemm_tiled(long M, long N, long K, const float* a, long rs, long cs, const float* b, long ldb, float* C, long ldc) {
  __shared__ float as[k_bk][k_bm + k_apad];
  __shared__ float bs[k_bk][k_bn];
  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % k_tdim, ty = t / k_tdim;
  const long i0 = static_cast<long>(blockIdx.y) * k_bm, j0 = static_cast<long>(blockIdx.x) * k_bn;
  float acc[k_tm][k_tn];
  for (int mi = 0; mi < k_tm; ++mi) {
    for (int ni = 0; ni < k_tn; ++ni) {
      const long i = i0 + ty + k_tdim * mi, j = j0 + tx + k_tdim * ni;
      acc[mi][ni] = i < M && j < N ? C[i * ldc + j] : 0.0f;
    }
  }
  // Loads run along A's contiguous direction: k when A is row-major (cs == 1), else i.
  const bool k_fastest = cs == 1;
  for (long k0 = 0; k0 < K; k0 += k_bk) {
    const int kmax = static_cast<int>(K - k0 < k_bk ? K - k0 : k_bk);
    for (int e = t; e < k_bk * k_bm; e += k_tdim * k_tdim) {
      const int kk = k_fastest ? e % k_bk : e / k_bm, ii = k_fastest ? e / k_bk : e % k_bm;
      const long i = i0 + ii, k = k0 + kk;
      as[kk][ii] = i < M && k < K ? a[i * rs + k * cs] : 0.0f;
    }
    for (int e = t; e < k_bk * k_bn; e += k_tdim * k_tdim) {
      const int kk = e / k_bn, jj = e % k_bn;
      const long j = j0 + jj, k = k0 + kk;
      bs[kk][jj] = j < N && k < K ? b[k * ldb + j] : 0.0f;
    }
    __syncthreads();
    for (int kk = 0; kk < kmax; ++kk) {
      float av[k_tm], bv[k_tn];
      for (int mi = 0; mi < k_tm; ++mi) {
        av[mi] = as[kk][ty + k_tdim * mi];
      }
      for (int ni = 0; ni < k_tn; ++ni) {
        bv[ni] = bs[kk][tx + k_tdim * ni];
      }
      for (int mi = 0; mi < k_tm; ++mi) {
        for (int ni = 0; ni < k_tn; ++ni) {
          acc[mi][ni] = hd::fma(av[mi], bv[ni], acc[mi][ni]);
        }
      }
    }
    __syncthreads();
  }
  for (int mi = 0; mi < k_tm; ++mi) {
    for (int ni = 0; ni < k_tn; ++ni) {
      const long i = i0 + ty + k_tdim * mi, j = j0 + tx + k_tdim * ni;
      if (i < M && j < N) {
        C[i * ldc + j] = acc[mi][ni];
      }
    }
  }
}

// The reference form: one thread per element running elem::gemm_chain (REPRUN_CUDA_GEMM=naive),
// so a GPU test can hold the tiled kernel against the unit-tested function.
__global__ void gemm_naive(long M, long N, long K, const float* a, long rs, long cs, const float* b, long ldb,
                           float* C, long ldc) {
  const long e = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= M * N) {
    return;
  }
  const long i = e / N, j = e % N;
  C[i * ldc + j] = elem::gemm_chain(a, rs, cs, b, ldb, i, j, K, C[i * ldc + j]);
}

__global__ void fill_rows_kernel(float* z, const float* bias, long m, long n) {
  const long e = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < m * n) {
    z[e] = bias[e % n];
  }
}

__global__ void transpose_kernel(const float* w, long rows, long cols, float* wt) {
  const long e = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < rows * cols) {
    const long i = e / cols, o = e % cols;
    wt[o * rows + i] = w[e];
  }
}

__global__ void activation_kernel(bool use_tanh, const float* z, float* act, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    act[i] = use_tanh ? mathfn::tanh(z[i]) : elem::relu(z[i]);
  }
}

__global__ void activation_grad_kernel(bool use_tanh, const float* z, const float* dh, float* gz, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    gz[i] = use_tanh ? elem::tanh_grad(z[i], dh[i]) : elem::relu_grad(z[i], dh[i]);
  }
}

// One thread per (row, group of 4 units): one Philox draw each, as the CPU draws them.
__global__ void dropout_kernel(uint64_t seed, long step, long layer, long row0, float p, float keep_scale, float* act,
                               float* mask, long m, long n) {
  const long quads = (n + 3) / 4;
  const long e = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e >= m * quads) {
    return;
  }
  const long r = e / quads, u = (e % quads) * 4;
  elem::dropout_quad(seed, step, layer, static_cast<uint32_t>(row0 + r), u, n, p, keep_scale, act + r * n,
                     mask + r * n);
}

__global__ void multiply_kernel(float* x, const float* mask, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] = x[i] * mask[i];
  }
}

// One thread per row; the row losses are added on the host in row order.
__global__ void softmax_xent_kernel(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                                    double* row_loss) {
  const long r = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < m) {
    row_loss[r] = elem::softmax_xent_row(logits + r * C, y[r], C, inv_batch, g + r * C);
  }
}

__global__ void softmax_eval_kernel(const float* logits, const int32_t* y, long m, long C, double* row_loss,
                                    int* hit) {
  const long r = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r < m) {
    row_loss[r] = elem::softmax_eval_row(logits + r * C, y[r], C, hit + r);
  }
}

// gb[o] += the column sum of g, one chain per column over the rows in order.
__global__ void column_sums_kernel(const float* g, long m, long out, float* gb) {
  const long o = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o < out) {
    gb[o] = elem::column_sum(g, m, out, o, gb[o]);
  }
}

// Atomic mode, deliberately non-deterministic: blockIdx.y is a chunk of k_atomic_rows samples; its
// partial gradient (a chain from zero over the chunk) is added with float atomicAdd, in whatever
// order the blocks happen to run. Thread e < in*out adds weight element e, the next `out` threads
// the bias.
constexpr long k_atomic_rows = 8;

__global__ void atomic_grad_kernel(const float* a, const float* g, long m, long in, long out, float* gw, float* gb) {
  const long e = static_cast<long>(blockIdx.x) * blockDim.x + threadIdx.x;
  const long r0 = static_cast<long>(blockIdx.y) * k_atomic_rows;
  const long rows = m - r0 < k_atomic_rows ? m - r0 : k_atomic_rows;
  if (e < in * out) {
    const long i = e / out, o = e % out;
    atomicAdd(gw + e, elem::gemm_chain(a + r0 * in, 1, in, g + r0 * out, out, i, o, rows, 0.0f));
  } else if (e < in * out + out) {
    const long o = e - in * out;
    atomicAdd(gb + o, elem::column_sum(g + r0 * out, rows, out, o, 0.0f));
  }
}

// One update task on the device: elements [0, n) of w, g, m, v (already offset to the task).
struct DeviceTask {
  float* w;
  const float* g;
  float* m;
  float* v;
  size_t n;
};

// blockIdx.y is the task.
__global__ void update_kernel(UpdateRule u, const DeviceTask* tasks) {
  const DeviceTask t = tasks[blockIdx.y];
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= t.n) {
    return;
  }
  if (u.kind == UpdateRule::Kind::sgd) {
    elem::sgd(u.lr, u.weight_decay, u.momentum, t.w, t.g, t.m, i);
  } else {
    elem::adam(u.weight_decay, u.beta1, u.beta2, u.eps, u.bias_correction2_sqrt, u.step_size, t.w, t.g, t.m, t.v, i);
  }
}

// Each task's 8 lanes of sum_squares_8lane (thread j of block t: lane j of task t).
__global__ void square_lanes_kernel(const DeviceTask* tasks, double* lanes) {
  const DeviceTask t = tasks[blockIdx.x];
  const int j = static_cast<int>(threadIdx.x);
  lanes[blockIdx.x * 8 + j] = elem::square_lane(t.w, t.n, j);
}

// ---- binding host memory -----------------------------------------------------------------------

bool device_addressable(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

enum class Dir { in, out, inout };

// The device side of one call's pointers. bind() gives the pointer a kernel uses; finish() waits
// for the kernels and copies every staged output back to where the host expects it.
class Binding {
public:
  ~Binding() {
    for (auto& b : m_buffers) {
      cudaFree(b.ptr);
    }
  }

  template <class T> T* bind(int slot, T* host, size_t count, Dir dir) {
    return static_cast<T*>(bind_bytes(slot, const_cast<void*>(static_cast<const void*>(host)), count * sizeof(T), dir));
  }
  template <class T> const T* bind(int slot, const T* host, size_t count) {
    return static_cast<const T*>(bind_bytes(slot, const_cast<void*>(static_cast<const void*>(host)),
                                            count * sizeof(T), Dir::in));
  }
  // Scratch that lives on the device only.
  template <class T> T* scratch(int slot, size_t count) { return static_cast<T*>(buffer(slot, count * sizeof(T))); }

  void finish() {
    check(cudaDeviceSynchronize(), "kernel");
    for (const auto& b : m_back) {
      check(cudaMemcpy(b.host, b.dev, b.bytes, cudaMemcpyDeviceToHost), "copy to the host");
    }
    m_back.clear();
  }

private:
  struct Buffer {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  struct Back {
    void* host;
    const void* dev;
    size_t bytes;
  };

  void* buffer(int slot, size_t bytes) {
    if (m_buffers.size() <= static_cast<size_t>(slot)) {
      m_buffers.resize(static_cast<size_t>(slot) + 1);
    }
    Buffer& b = m_buffers[static_cast<size_t>(slot)];
    if (b.bytes < bytes) {
      cudaFree(b.ptr);
      b.ptr = nullptr;
      b.bytes = 0;
      check(cudaMalloc(&b.ptr, bytes), "cudaMalloc");
      b.bytes = bytes;
    }
    return b.ptr;
  }

  void* bind_bytes(int slot, void* host, size_t bytes, Dir dir) {
    if (bytes == 0 || host == nullptr) {
      return host;
    }
    if (device_addressable(host)) {
      return host;
    }
    void* dev = buffer(slot, bytes);
    if (dir != Dir::out) {
      check(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice), "copy to the device");
    }
    if (dir != Dir::in) {
      m_back.push_back({host, dev, bytes});
    }
    return dev;
  }

  std::vector<Buffer> m_buffers;
  std::vector<Back> m_back;
};

// Elements a strided view touches: (i, k) at i*rs + k*cs for i < M, k < K.
size_t view_extent(long M, long K, long rs, long cs) { return static_cast<size_t>((M - 1) * rs + (K - 1) * cs + 1); }

// REPRUN_CUDA_GEMM: "tiled" (the default) or "naive". Anything else is refused, so that a mistyped
// value never silently means the default.
bool naive_gemm_asked() {
  const char* env = std::getenv("REPRUN_CUDA_GEMM");
  const std::string v = env ? env : "";
  if (!v.empty() && v != "tiled" && v != "naive") {
    throw Error("REPRUN_CUDA_GEMM", "unknown GEMM '" + v + "'; expected tiled or naive, or unset it");
  }
  return v == "naive";
}

class CudaBackend final : public Backend {
public:
  CudaBackend() : m_naive(naive_gemm_asked()) {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaGetDeviceProperties(&m_prop, 0), "cudaGetDeviceProperties");
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, gemm_tiled), "cudaFuncGetAttributes");
    m_binary = attr.binaryVersion;
  }

  nlohmann::ordered_json kernels() const override {
    const int cc = m_prop.major * 10 + m_prop.minor;
    const std::string archs = REPRUN_CUDA_ARCHITECTURES;
    // Real code for this GPU, or PTX the driver compiled at load time (an architecture the build
    // did not list): recorded, since the driver's code generator then takes part.
    bool ahead = false;
    size_t start = 0;
    while (start <= archs.size()) {
      const size_t semi = archs.find(',', start);
      const std::string a = archs.substr(start, semi == std::string::npos ? std::string::npos : semi - start);
      if (a == std::to_string(cc) || a == std::to_string(cc) + "-real") {
        ahead = true;
      }
      if (semi == std::string::npos) {
        break;
      }
      start = semi + 1;
    }
    return {{"device", "cuda"},
            {"gpu", m_prop.name},
            {"compute_capability", std::to_string(m_prop.major) + "." + std::to_string(m_prop.minor)},
            {"gemm", m_naive ? "cuda-naive (one thread per element, elem::gemm_chain)"
                             : "cuda-tiled-128x128 (one __fmaf_rn chain per element, k ascending)"},
            {"code", "sm_" + std::to_string(m_binary) + (ahead ? "" : " (PTX compiled by the driver at load time)")},
            {"built_for", archs},
            {"transfers", "host buffers staged per call"}};
  }

  void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc) override {
    if (M <= 0 || N <= 0 || K <= 0) {
      return;
    }
    const float* a = m_bind.bind(0, A.data, view_extent(M, K, A.rs, A.cs));
    const float* b = m_bind.bind(1, B, static_cast<size_t>((K - 1) * ldb + N));
    float* c = m_bind.bind(2, C, static_cast<size_t>((M - 1) * ldc + N), Dir::inout);
    launch_gemm(M, N, K, a, A.rs, A.cs, b, ldb, c, ldc);
    m_bind.finish();
  }

  void fill_rows(float* z, const float* bias, long m, long n) override {
    const size_t count = static_cast<size_t>(m * n);
    if (count == 0) {
      return;
    }
    float* dz = m_bind.bind(0, z, count, Dir::out);
    const float* db = m_bind.bind(1, bias, static_cast<size_t>(n));
    REPRUN_LAUNCH(fill_rows_kernel, blocks_for(count), k_threads)(dz, db, m, n);
    check_launch("fill_rows");
    m_bind.finish();
  }

  void transpose(const float* w, long rows, long cols, float* wt) override {
    const size_t count = static_cast<size_t>(rows * cols);
    if (count == 0) {
      return;
    }
    const float* dw = m_bind.bind(0, w, count);
    float* dt = m_bind.bind(1, wt, count, Dir::out);
    REPRUN_LAUNCH(transpose_kernel, blocks_for(count), k_threads)(dw, rows, cols, dt);
    check_launch("transpose");
    m_bind.finish();
  }

  void activation(Activation f, const float* z, float* act, size_t n) override {
    if (n == 0) {
      return;
    }
    const float* dz = m_bind.bind(0, z, n);
    float* da = m_bind.bind(1, act, n, Dir::out);
    REPRUN_LAUNCH(activation_kernel, blocks_for(n), k_threads)(f == Activation::tanh, dz, da, n);
    check_launch("activation");
    m_bind.finish();
  }

  void activation_grad(Activation f, const float* z, const float* dh, float* gz, size_t n) override {
    if (n == 0) {
      return;
    }
    const float* dz = m_bind.bind(0, z, n);
    const float* ddh = m_bind.bind(1, dh, n);
    float* dgz = m_bind.bind(2, gz, n, Dir::out);
    REPRUN_LAUNCH(activation_grad_kernel, blocks_for(n), k_threads)(f == Activation::tanh, dz, ddh, dgz, n);
    check_launch("activation_grad");
    m_bind.finish();
  }

  void dropout(const DropoutDraw& d, float* act, float* mask, long m, long n) override {
    const size_t count = static_cast<size_t>(m * n);
    if (count == 0) {
      return;
    }
    // The two constants as the CPU computes them, on the host.
    const float keep_scale = static_cast<float>(1.0 / (1.0 - d.p));
    const float p = static_cast<float>(d.p);
    float* da = m_bind.bind(0, act, count, Dir::inout);
    float* dm = m_bind.bind(1, mask, count, Dir::out);
    const size_t threads = static_cast<size_t>(m * ((n + 3) / 4));
    REPRUN_LAUNCH(dropout_kernel, blocks_for(threads), k_threads)(d.seed, d.step, d.layer, d.row0, p, keep_scale, da,
                                                                  dm, m, n);
    check_launch("dropout");
    m_bind.finish();
  }

  void multiply(float* x, const float* mask, size_t n) override {
    if (n == 0) {
      return;
    }
    float* dx = m_bind.bind(0, x, n, Dir::inout);
    const float* dm = m_bind.bind(1, mask, n);
    REPRUN_LAUNCH(multiply_kernel, blocks_for(n), k_threads)(dx, dm, n);
    check_launch("multiply");
    m_bind.finish();
  }

  void softmax_xent(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                    double& loss_sum) override {
    if (m <= 0) {
      return;
    }
    const size_t count = static_cast<size_t>(m * C);
    const float* dl = m_bind.bind(0, logits, count);
    const int32_t* dy = m_bind.bind(1, y, static_cast<size_t>(m));
    float* dg = m_bind.bind(2, g, count, Dir::out);
    m_rows.resize(static_cast<size_t>(m));
    double* dloss = m_bind.bind(3, m_rows.data(), m_rows.size(), Dir::out);
    REPRUN_LAUNCH(softmax_xent_kernel, blocks_for(static_cast<size_t>(m)), k_threads)(dl, dy, m, C, inv_batch, dg,
                                                                                      dloss);
    check_launch("softmax_xent");
    m_bind.finish();
    for (double l : m_rows) {
      loss_sum += l; // row order, as the CPU adds them
    }
  }

  void softmax_eval(const float* logits, const int32_t* y, long m, long C, double& loss_sum, long& correct) override {
    if (m <= 0) {
      return;
    }
    const float* dl = m_bind.bind(0, logits, static_cast<size_t>(m * C));
    const int32_t* dy = m_bind.bind(1, y, static_cast<size_t>(m));
    m_rows.resize(static_cast<size_t>(m));
    m_hits.resize(static_cast<size_t>(m));
    double* dloss = m_bind.bind(2, m_rows.data(), m_rows.size(), Dir::out);
    int* dhit = m_bind.bind(3, m_hits.data(), m_hits.size(), Dir::out);
    REPRUN_LAUNCH(softmax_eval_kernel, blocks_for(static_cast<size_t>(m)), k_threads)(dl, dy, m, C, dloss, dhit);
    check_launch("softmax_eval");
    m_bind.finish();
    for (size_t r = 0; r < m_rows.size(); ++r) {
      loss_sum += m_rows[r];
      correct += m_hits[r];
    }
  }

  void weight_grad(Reduction red, const float* a, const float* g, long m, long in, long out, float* gw,
                   float* gb) override {
    if (m <= 0 || out <= 0) {
      return;
    }
    const float* dg = m_bind.bind(1, g, static_cast<size_t>(m * out));
    const float* da = in > 0 ? m_bind.bind(0, a, static_cast<size_t>(m * in)) : nullptr;
    float* dgw = in > 0 ? m_bind.bind(2, gw, static_cast<size_t>(in * out), Dir::inout) : nullptr;
    float* dgb = m_bind.bind(3, gb, static_cast<size_t>(out), Dir::inout);
    if (red == Reduction::ordered) {
      // gw (in, out) += a^T (in, m) g (m, out): the GEMM's chain per element over the samples in order.
      if (in > 0) {
        launch_gemm(in, out, m, da, 1, in, dg, out, dgw, out);
      }
      REPRUN_LAUNCH(column_sums_kernel, blocks_for(static_cast<size_t>(out)), k_threads)(dg, m, out, dgb);
      check_launch("column_sums");
    } else {
      const dim3 grid(blocks_for(static_cast<size_t>(in * out + out)),
                      static_cast<unsigned>((m + k_atomic_rows - 1) / k_atomic_rows));
      REPRUN_LAUNCH(atomic_grad_kernel, grid, k_threads)(da, dg, m, in, out, dgw, dgb);
      check_launch("atomic_grad");
    }
    m_bind.finish();
  }

  void update(const UpdateRule& rule, const std::vector<UpdateTask>& tasks, double* sq) override {
    if (tasks.empty()) {
      return;
    }
    // The tasks of one parameter are consecutive ranges of the same arrays: each parameter's
    // arrays are bound once, over the range its tasks cover.
    std::vector<DeviceTask> dev(tasks.size());
    size_t widest = 0;
    int slot = 0;
    for (size_t t = 0; t < tasks.size();) {
      size_t u = t;
      while (u + 1 < tasks.size() && tasks[u + 1].w == tasks[t].w) {
        ++u;
      }
      const size_t lo = tasks[t].begin, hi = tasks[u].end;
      float* w = m_bind.bind(slot++, tasks[t].w + lo, hi - lo, Dir::inout);
      const float* g = m_bind.bind(slot++, tasks[t].g + lo, hi - lo);
      float* m = m_bind.bind(slot++, tasks[t].m + lo, hi - lo, Dir::inout);
      float* v = tasks[t].v ? m_bind.bind(slot++, tasks[t].v + lo, hi - lo, Dir::inout) : nullptr;
      for (size_t k = t; k <= u; ++k) {
        const size_t off = tasks[k].begin - lo;
        dev[k] = {w + off, g + off, m + off, v ? v + off : nullptr, tasks[k].end - tasks[k].begin};
        widest = std::max(widest, dev[k].n);
      }
      t = u + 1;
    }
    DeviceTask* dtasks = m_bind.scratch<DeviceTask>(slot++, dev.size());
    check(cudaMemcpy(dtasks, dev.data(), dev.size() * sizeof(DeviceTask), cudaMemcpyHostToDevice), "copy tasks");
    if (widest > 0) {
      const dim3 grid(blocks_for(widest), static_cast<unsigned>(dev.size()));
      REPRUN_LAUNCH(update_kernel, grid, k_threads)(rule, dtasks);
      check_launch("update");
    }
    if (sq) {
      m_lanes.resize(dev.size() * 8);
      double* dl = m_bind.bind(slot++, m_lanes.data(), m_lanes.size(), Dir::out);
      REPRUN_LAUNCH(square_lanes_kernel, static_cast<unsigned>(dev.size()), 8)(dtasks, dl);
      check_launch("square_lanes");
    }
    m_bind.finish();
    if (sq) {
      for (size_t t = 0; t < dev.size(); ++t) {
        sq[t] = elem::add_lanes(m_lanes.data() + t * 8); // lanes 0..7 in order, as sum_squares_8lane
      }
    }
  }

private:
  void launch_gemm(long M, long N, long K, const float* a, long rs, long cs, const float* b, long ldb, float* c,
                   long ldc) {
    if (m_naive) {
      REPRUN_LAUNCH(gemm_naive, blocks_for(static_cast<size_t>(M * N)), k_threads)(M, N, K, a, rs, cs, b, ldb, c,
                                                                                   ldc);
      check_launch("gemm_naive");
      return;
    }
    const dim3 grid(static_cast<unsigned>((N + k_bn - 1) / k_bn), static_cast<unsigned>((M + k_bm - 1) / k_bm));
    REPRUN_LAUNCH(gemm_tiled, grid, k_tdim * k_tdim)(M, N, K, a, rs, cs, b, ldb, c, ldc);
    check_launch("gemm_tiled");
  }

  bool m_naive;
  cudaDeviceProp m_prop{};
  int m_binary = 0;
  Binding m_bind;
  std::vector<double> m_rows; // per row: its loss, added on the host in row order
  std::vector<int> m_hits;    // per row: 1 when its argmax is its label
  std::vector<double> m_lanes; // per update task: the 8 lanes of its sum of squares
};

} // namespace

std::string cuda_unavailable() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    int driver = 0;
    cudaDriverGetVersion(&driver);
    // The static runtime reports a missing libcuda as an insufficient driver (as cuda_query.cu).
    if (e == cudaErrorInsufficientDriver && driver == 0) {
      return "no NVIDIA driver found (libcuda could not be loaded), so no CUDA GPU can be used";
    }
    if (e == cudaErrorNoDevice) {
      return "no CUDA GPU found";
    }
    return std::string("no usable CUDA GPU (") + cudaGetErrorString(e) + ")";
  }
  if (n == 0) {
    return "no CUDA GPU found";
  }
  return "";
}

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

} // namespace reprun
