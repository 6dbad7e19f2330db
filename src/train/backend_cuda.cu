// The CUDA kernel backend: see include/reprun/train/backend.hpp for the contract. Every element is
// computed by the functions of elementwise.hpp (the same source the unit tests run on the CPU) or,
// for the GEMM, by one __fmaf_rn chain over k in increasing order starting from C's value: tiled
// SIMT, no split-K, no tensor cores, no cuBLAS. Compiled with -fmad=false (CMakeLists.txt).
// Not here: anything faster at the price of another order (docs/determinism.md says what is avoided).
//
// Memory: every pointer the interface passes is device memory from allocate() (cudaMalloc): the
// model's parameters, gradients, optimizer state and activations live on the GPU for the whole run
// (backend.hpp). A compute call only launches (no copy, no synchronization); what the host needs
// comes back through download(), a cudaMemcpy that waits for the kernels before it. Per step the
// training loop uploads the batch and downloads the loss, and at trace "weights" the weights and
// the update's sums of squares (docs/determinism.md). The outputs that used to come back per call
// (the loss sum, the per-row losses, the sums of squares) are reduced on the device in the CPU's
// order: one thread adds the rows 0..m-1, one thread adds the lanes 0..7.
#include "reprun/train/backend.hpp"

#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/train/elementwise.hpp"
#include "reprun/train/xxh3_lanes.hpp"

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
// a (16 TM) x (16 TM) tile of C; thread (tx, ty) owns the TM x TM elements of rows ty + 16 mi and
// columns tx + 16 ni (so a warp's shared-memory reads fall in distinct banks or are broadcasts).
// Each element's chain starts from C's value and runs over k = 0..K-1 in order, one __fmaf_rn per
// k: the 16-deep shared-memory tiles only stage the operands, and a k beyond K is never applied
// (fma(0, x, -0) would turn -0 into +0). No split-K, no tensor cores: the CPU's chain, element by
// element, whatever the tile. TM is 8 (128 x 128 tiles) for a product large enough to fill the GPU
// with such blocks; a smaller product gets smaller tiles (k_tile_sizes), more blocks and the same
// chains: a 784 x 256 weight gradient is 14 blocks of 128 x 128, 784 of 16 x 16.
constexpr int k_bk = 16, k_tdim = 16;
constexpr int k_apad = 4; // as[kk][ii]: a row-major A's loads store k-fastest; the pad spreads the banks
constexpr int k_tile_sizes[] = {8, 2, 1}; // TM, largest first

// Where each element's chain starts (the prologue) and what is done with its result (the
// epilogue): the separate calls fill_rows, activation, multiply and activation_grad folded into
// the GEMM, with the same operations in the same order. The bias starts the chain (never "added
// after": that would be another rounding).
enum GemmStart : int { k_from_c = 0, k_from_zero = 1, k_from_bias = 2 };
enum GemmPost : int { k_store = 0, k_activation = 1, k_backward = 2 };

// The epilogue of element e = i*ldc + j whose chain ended at v: k_activation stores z = v and
// out2 = f(z) (activation); k_backward stores dh = v (times mask[e] when there is a mask) and
// out2 = dh * f'(zin[e]) (multiply, then activation_grad).
template <int Post, bool Tanh>
__device__ __forceinline__ void gemm_store(float v, long e, float* C, const float* mask, const float* zin,
                                           float* out2) {
  if (Post == k_backward && mask != nullptr) {
    v = v * mask[e];
  }
  C[e] = v;
  if (Post == k_activation) {
    out2[e] = Tanh ? mathfn::tanh(v) : elem::relu(v);
  } else if (Post == k_backward) {
    out2[e] = Tanh ? elem::tanh_grad(zin[e], v) : elem::relu_grad(zin[e], v);
  }
}

// At most 128 registers a thread, so that two blocks fit on an SM. The prologue and the epilogue
// are template parameters: the plain C += A B compiles as it did before they existed (the
// register budget is tight, and runtime branches there made the compiler spill).
template <int Start, int Post, bool Tanh, int TM>
__global__ void __launch_bounds__(k_tdim * k_tdim, 2)
    gemm_tiled(long M, long N, long K, const float* a, long rs, long cs, const float* b, long ldb, float* C, long ldc,
               const float* bias, const float* mask, const float* zin, float* out2) {
  constexpr int k_bm = k_tdim * TM, k_bn = k_tdim * TM, k_tm = TM, k_tn = TM;
  __shared__ float as[k_bk][k_bm + k_apad];
  __shared__ float bs[k_bk][k_bn];
  const int t = static_cast<int>(threadIdx.x);
  const int tx = t % k_tdim, ty = t / k_tdim;
  const long i0 = static_cast<long>(blockIdx.y) * k_bm, j0 = static_cast<long>(blockIdx.x) * k_bn;
  float acc[k_tm][k_tn];
  for (int mi = 0; mi < k_tm; ++mi) {
    for (int ni = 0; ni < k_tn; ++ni) {
      const long i = i0 + ty + k_tdim * mi, j = j0 + tx + k_tdim * ni;
      float c0 = 0.0f;
      if (i < M && j < N) {
        c0 = Start == k_from_c ? C[i * ldc + j] : Start == k_from_bias ? bias[j] : 0.0f;
      }
      acc[mi][ni] = c0;
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
        gemm_store<Post, Tanh>(acc[mi][ni], i * ldc + j, C, mask, zin, out2);
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

// One block: each thread computes rows t, t + blockDim, ...; then thread 0 adds the row losses to
// *loss_sum in row order, as the CPU adds them, so the sum stays on the device.
__global__ void softmax_xent_kernel(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                                    double* row_loss, double* loss_sum) {
  for (long r = threadIdx.x; r < m; r += blockDim.x) {
    row_loss[r] = elem::softmax_xent_row(logits + r * C, y[r], C, inv_batch, g + r * C);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = *loss_sum;
    for (long r = 0; r < m; ++r) {
      s += row_loss[r];
    }
    *loss_sum = s;
  }
}

__global__ void softmax_eval_kernel(const float* logits, const int32_t* y, long m, long C, double* row_loss, int* hit,
                                    double* loss_sum, long* correct) {
  for (long r = threadIdx.x; r < m; r += blockDim.x) {
    row_loss[r] = elem::softmax_eval_row(logits + r * C, y[r], C, hit + r);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    double s = *loss_sum;
    long c = *correct;
    for (long r = 0; r < m; ++r) {
      s += row_loss[r];
      c += hit[r];
    }
    *loss_sum = s;
    *correct = c;
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

// Each task's sum_squares_8lane: thread j of block t computes lane j of task t, then thread 0
// adds the lanes 0..7 in order (add_lanes), so the sum stays on the device.
__global__ void square_lanes_kernel(const DeviceTask* tasks, double* sq) {
  __shared__ double lanes[8];
  const DeviceTask t = tasks[blockIdx.x];
  const int j = static_cast<int>(threadIdx.x);
  lanes[j] = elem::square_lane(t.w, t.n, j);
  __syncthreads();
  if (j == 0) {
    sq[blockIdx.x] = elem::add_lanes(lanes);
  }
}

// XXH3-64 of one tensor per block (xxh3_lanes.hpp): every thread computes block lanes, then
// threads 0..7 run the eight lane chains, then thread 0 merges them. `lanes` holds (full blocks +
// 1) x 8 values per tensor, from its lane_off.
struct HashTask {
  const uint32_t* words;
  size_t len; // bytes, > 240
  size_t lane_off;
};

__global__ void xxh3_kernel(const HashTask* tasks, const uint8_t* secret, uint64_t* lanes, uint64_t* out) {
  __shared__ uint64_t acc[8];
  const HashTask t = tasks[blockIdx.x];
  uint64_t* mine = lanes + t.lane_off;
  const size_t count = (xxh3_lanes::full_blocks(t.len) + 1) * 8;
  for (size_t e = threadIdx.x; e < count; e += blockDim.x) {
    mine[e] = xxh3_lanes::block_lane(t.words, t.len, e / 8, static_cast<int>(e % 8), secret);
  }
  __syncthreads();
  if (threadIdx.x < 8) {
    acc[threadIdx.x] = xxh3_lanes::chain_lane(mine, t.words, t.len, static_cast<int>(threadIdx.x), secret);
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    out[blockIdx.x] = xxh3_lanes::merge(acc, t.len, secret);
  }
}

// ---- device scratch -----------------------------------------------------------------------------

// Device memory the backend keeps for itself (row losses, hits, update tasks), grown as needed.
class Scratch {
public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { cudaFree(m_ptr); }
  template <class T> T* get(size_t count) {
    const size_t bytes = count * sizeof(T);
    if (m_bytes < bytes) {
      cudaFree(m_ptr);
      m_ptr = nullptr;
      m_bytes = 0;
      check(cudaMalloc(&m_ptr, bytes), "cudaMalloc");
      m_bytes = bytes;
    }
    return static_cast<T*>(m_ptr);
  }

private:
  void* m_ptr = nullptr;
  size_t m_bytes = 0;
};

bool same_tasks(const std::vector<UpdateTask>& a, const std::vector<UpdateTask>& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].w != b[i].w || a[i].g != b[i].g || a[i].m != b[i].m || a[i].v != b[i].v || a[i].begin != b[i].begin ||
        a[i].end != b[i].end) {
      return false;
    }
  }
  return true;
}

// REPRUN_CUDA_GEMM: "tiled" (the default: each product's tiles by its size), "tiled-128",
// "tiled-32" or "tiled-16" (those tiles for every product: the tests hold each to the same bits),
// or "naive". Anything else is refused, so that a mistyped value never silently means the default.
struct GemmAsked {
  bool naive = false;
  int tm = 0; // the tiles' TM for every product; 0: by the product's size
};
GemmAsked gemm_asked() {
  const char* env = std::getenv("REPRUN_CUDA_GEMM");
  const std::string v = env ? env : "";
  if (v.empty() || v == "tiled") {
    return {};
  }
  if (v == "naive") {
    return {true, 0};
  }
  for (const int tm : k_tile_sizes) {
    if (v == "tiled-" + std::to_string(k_tdim * tm)) {
      return {false, tm};
    }
  }
  throw Error("REPRUN_CUDA_GEMM",
              "unknown GEMM '" + v + "'; expected tiled, tiled-128, tiled-32, tiled-16 or naive, or unset it");
}

// The tiles' TM for an M x N product: the largest whose blocks (16 TM square) are at least as many
// as the GPU has multiprocessors, else the smallest. Which one cannot change a bit.
int tile_for(long M, long N, int multiprocessors) {
  for (const int tm : k_tile_sizes) {
    const long side = static_cast<long>(k_tdim) * tm;
    if (((M + side - 1) / side) * ((N + side - 1) / side) >= multiprocessors) {
      return tm;
    }
  }
  return k_tile_sizes[sizeof k_tile_sizes / sizeof k_tile_sizes[0] - 1];
}

// The tiled GEMM's variant for a prologue and an epilogue (the ones the backend uses: plain, the
// forward pass with or without an activation, the backward data pass), at tile TM.
using GemmKernel = void (*)(long, long, long, const float*, long, long, const float*, long, float*, long, const float*,
                            const float*, const float*, float*);
template <int TM> GemmKernel tiled_variant(int start, int post, bool use_tanh) {
  if (start == k_from_c && post == k_store) {
    return gemm_tiled<k_from_c, k_store, false, TM>;
  }
  if (start == k_from_bias && post == k_store) {
    return gemm_tiled<k_from_bias, k_store, false, TM>;
  }
  if (start == k_from_bias && post == k_activation) {
    return use_tanh ? gemm_tiled<k_from_bias, k_activation, true, TM> : gemm_tiled<k_from_bias, k_activation, false, TM>;
  }
  if (start == k_from_zero && post == k_backward) {
    return use_tanh ? gemm_tiled<k_from_zero, k_backward, true, TM> : gemm_tiled<k_from_zero, k_backward, false, TM>;
  }
  throw Error("cuda", "internal: no tiled GEMM variant for this prologue and epilogue");
}

class CudaBackend final : public Backend {
public:
  CudaBackend() : CudaBackend(gemm_asked()) {}
  explicit CudaBackend(GemmAsked asked) : m_naive(asked.naive), m_tm(asked.tm) {
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaGetDeviceProperties(&m_prop, 0), "cudaGetDeviceProperties");
    cudaFuncAttributes attr{};
    check(cudaFuncGetAttributes(&attr, gemm_tiled<k_from_c, k_store, false, 8>), "cudaFuncGetAttributes");
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
            {"gemm", m_naive    ? "cuda-naive (one thread per element, elem::gemm_chain)"
                     : m_tm == 0 ? "cuda-tiled (128x128 tiles, 32x32 or 16x16 for a product too small to fill the "
                                   "GPU with them; one __fmaf_rn chain per element, k ascending)"
                                 : "cuda-tiled-" + std::to_string(k_tdim * m_tm) + "x" + std::to_string(k_tdim * m_tm) +
                                       " (every product; one __fmaf_rn chain per element, k ascending)"},
            {"code", "sm_" + std::to_string(m_binary) + (ahead ? "" : " (PTX compiled by the driver at load time)")},
            {"built_for", archs},
            {"transfers", "device-resident state: the batch up, the step record down"}};
  }

  // ---- memory: device memory, copies counted by the emulator --------------------------------
  bool host_memory() const override { return false; }
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes > 0 ? bytes : 1), "cudaMalloc");
    return p;
  }
  void release(void* p) override { cudaFree(p); }
  void upload(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to the device");
  }
  // cudaMemcpy waits for the kernels launched before it; a fault in one of them is reported here.
  void download(void* dst, const void* src, size_t bytes) override {
    check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to the host (or a kernel before it)");
  }
  void zero(void* p, size_t bytes) override { check(cudaMemset(p, 0, bytes), "cudaMemset"); }

  // ---- compute: launches only ----------------------------------------------------------------
  void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc) override {
    if (M <= 0 || N <= 0 || K <= 0) {
      return;
    }
    launch_gemm(M, N, K, A.data, A.rs, A.cs, B, ldb, C, ldc, k_from_c, nullptr, k_store, false, nullptr, nullptr,
                nullptr);
  }

  void fill_rows(float* z, const float* bias, long m, long n) override {
    const size_t count = static_cast<size_t>(m * n);
    if (count == 0) {
      return;
    }
    REPRUN_LAUNCH(fill_rows_kernel, blocks_for(count), k_threads)(z, bias, m, n);
    check_launch("fill_rows");
  }

  // One launch: the bias in the tiled GEMM's prologue, the activation in its epilogue.
  void dense_forward(const float* a, const float* w, const float* b, long m, long in, long out, float* z,
                     Activation f, float* act) override {
    if (m <= 0 || out <= 0) {
      return;
    }
    if (m_naive || in <= 0) { // the reference form: the separate kernels
      fill_rows(z, b, m, out);
      gemm_acc(m, out, in, MatView{a, in, 1}, w, out, z, out);
      if (act) {
        activation(f, z, act, static_cast<size_t>(m * out));
      }
      return;
    }
    launch_gemm(m, out, in, a, in, 1, w, out, z, out, k_from_bias, b, act ? k_activation : k_store,
                f == Activation::tanh, nullptr, nullptr, act);
  }

  // One launch: chains from +0, then the dropout mask and the activation's gradient in the epilogue.
  void dense_backward_data(const float* g, const float* wt, long m, long out, long in, const float* mask,
                           Activation f, const float* z, float* dh, float* gz) override {
    const size_t n = static_cast<size_t>(m * in);
    if (n == 0) {
      return;
    }
    if (m_naive || out <= 0) {
      zero(dh, n * sizeof(float));
      gemm_acc(m, in, out, MatView{g, out, 1}, wt, in, dh, in);
      if (mask) {
        multiply(dh, mask, n);
      }
      activation_grad(f, z, dh, gz, n);
      return;
    }
    launch_gemm(m, in, out, g, out, 1, wt, in, dh, in, k_from_zero, nullptr, k_backward, f == Activation::tanh, mask,
                z, gz);
  }

  void transpose(const float* w, long rows, long cols, float* wt) override {
    const size_t count = static_cast<size_t>(rows * cols);
    if (count == 0) {
      return;
    }
    REPRUN_LAUNCH(transpose_kernel, blocks_for(count), k_threads)(w, rows, cols, wt);
    check_launch("transpose");
  }

  void activation(Activation f, const float* z, float* act, size_t n) override {
    if (n == 0) {
      return;
    }
    REPRUN_LAUNCH(activation_kernel, blocks_for(n), k_threads)(f == Activation::tanh, z, act, n);
    check_launch("activation");
  }

  void activation_grad(Activation f, const float* z, const float* dh, float* gz, size_t n) override {
    if (n == 0) {
      return;
    }
    REPRUN_LAUNCH(activation_grad_kernel, blocks_for(n), k_threads)(f == Activation::tanh, z, dh, gz, n);
    check_launch("activation_grad");
  }

  void dropout(const DropoutDraw& d, float* act, float* mask, long m, long n) override {
    const size_t count = static_cast<size_t>(m * n);
    if (count == 0) {
      return;
    }
    // The two constants as the CPU computes them, on the host.
    const float keep_scale = static_cast<float>(1.0 / (1.0 - d.p));
    const float p = static_cast<float>(d.p);
    const size_t threads = static_cast<size_t>(m * ((n + 3) / 4));
    REPRUN_LAUNCH(dropout_kernel, blocks_for(threads), k_threads)(d.seed, d.step, d.layer, d.row0, p, keep_scale, act,
                                                                  mask, m, n);
    check_launch("dropout");
  }

  void multiply(float* x, const float* mask, size_t n) override {
    if (n == 0) {
      return;
    }
    REPRUN_LAUNCH(multiply_kernel, blocks_for(n), k_threads)(x, mask, n);
    check_launch("multiply");
  }

  void softmax_xent(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                    double* loss_sum) override {
    if (m <= 0) {
      return;
    }
    double* rows = m_rows.get<double>(static_cast<size_t>(m));
    REPRUN_LAUNCH(softmax_xent_kernel, 1, k_threads)(logits, y, m, C, inv_batch, g, rows, loss_sum);
    check_launch("softmax_xent");
  }

  void softmax_eval(const float* logits, const int32_t* y, long m, long C, double* loss_sum, long* correct) override {
    if (m <= 0) {
      return;
    }
    double* rows = m_rows.get<double>(static_cast<size_t>(m));
    int* hits = m_hits.get<int>(static_cast<size_t>(m));
    REPRUN_LAUNCH(softmax_eval_kernel, 1, k_threads)(logits, y, m, C, rows, hits, loss_sum, correct);
    check_launch("softmax_eval");
  }

  void weight_grad(Reduction red, const float* a, const float* g, long m, long in, long out, float* gw,
                   float* gb) override {
    if (m <= 0 || out <= 0) {
      return;
    }
    if (red == Reduction::ordered) {
      // gw (in, out) += a^T (in, m) g (m, out): the GEMM's chain per element over the samples in order.
      if (in > 0) {
        launch_gemm(in, out, m, a, 1, in, g, out, gw, out, k_from_c, nullptr, k_store, false, nullptr, nullptr,
                    nullptr);
      }
      REPRUN_LAUNCH(column_sums_kernel, blocks_for(static_cast<size_t>(out)), k_threads)(g, m, out, gb);
      check_launch("column_sums");
    } else {
      const dim3 grid(blocks_for(static_cast<size_t>(in * out + out)),
                      static_cast<unsigned>((m + k_atomic_rows - 1) / k_atomic_rows));
      REPRUN_LAUNCH(atomic_grad_kernel, grid, k_threads)(in > 0 ? a : nullptr, g, m, in, out, gw, gb);
      check_launch("atomic_grad");
    }
  }

  void update(const UpdateRule& rule, const std::vector<UpdateTask>& tasks, double* sq) override {
    if (tasks.empty()) {
      return;
    }
    // The optimizer's tasks are the same every step: their device copy crosses once.
    if (!same_tasks(tasks, m_tasks)) {
      std::vector<DeviceTask> dev(tasks.size());
      m_widest = 0;
      for (size_t t = 0; t < tasks.size(); ++t) {
        const UpdateTask& k = tasks[t];
        dev[t] = {k.w + k.begin, k.g + k.begin, k.m + k.begin, k.v ? k.v + k.begin : nullptr, k.end - k.begin};
        m_widest = std::max(m_widest, dev[t].n);
      }
      DeviceTask* d = m_task_mem.get<DeviceTask>(dev.size());
      check(cudaMemcpy(d, dev.data(), dev.size() * sizeof(DeviceTask), cudaMemcpyHostToDevice), "copy tasks");
      m_tasks = tasks;
    }
    DeviceTask* dtasks = m_task_mem.get<DeviceTask>(tasks.size());
    if (m_widest > 0) {
      const dim3 grid(blocks_for(m_widest), static_cast<unsigned>(tasks.size()));
      REPRUN_LAUNCH(update_kernel, grid, k_threads)(rule, dtasks);
      check_launch("update");
    }
    if (sq) {
      REPRUN_LAUNCH(square_lanes_kernel, static_cast<unsigned>(tasks.size()), 8)(dtasks, sq);
      check_launch("square_lanes");
    }
  }

  // Tensors above 240 bytes are hashed on the device, one block each, and only the digests come
  // back; shorter ones (XXH3's short paths, a few biases) are downloaded and hashed here.
  void xxh3_tensors(const std::vector<const float*>& tensors, const std::vector<size_t>& n,
                    uint64_t* hashes) override {
    std::vector<size_t> on_device;
    std::vector<HashTask> tasks;
    size_t lanes = 0;
    for (size_t i = 0; i < tensors.size(); ++i) {
      const size_t bytes = n[i] * sizeof(float);
      if (bytes >= xxh3_lanes::k_min_len) {
        tasks.push_back({reinterpret_cast<const uint32_t*>(tensors[i]), bytes, lanes});
        lanes += (xxh3_lanes::full_blocks(bytes) + 1) * 8;
        on_device.push_back(i);
      } else {
        m_small.resize(n[i]);
        if (n[i] > 0) {
          download(m_small.data(), tensors[i], bytes);
        }
        hashes[i] = xxh3_64(m_small.data(), bytes);
      }
    }
    if (tasks.empty()) {
      return;
    }
    // The secret and the task list cross once (the tensors are the same every step).
    if (!m_secret_up) {
      check(cudaMemcpy(m_secret.get<uint8_t>(xxh3_lanes::k_secret_size), xxh3_lanes::k_secret,
                       xxh3_lanes::k_secret_size, cudaMemcpyHostToDevice), "copy the XXH3 secret");
      m_secret_up = true;
    }
    bool same = tasks.size() == m_hash_tasks.size();
    for (size_t t = 0; same && t < tasks.size(); ++t) {
      same = tasks[t].words == m_hash_tasks[t].words && tasks[t].len == m_hash_tasks[t].len;
    }
    if (!same) {
      check(cudaMemcpy(m_hash_task_mem.get<HashTask>(tasks.size()), tasks.data(), tasks.size() * sizeof(HashTask),
                       cudaMemcpyHostToDevice), "copy hash tasks");
      m_hash_tasks = tasks;
    }
    uint64_t* out = m_hash_out.get<uint64_t>(tasks.size());
    REPRUN_LAUNCH(xxh3_kernel, static_cast<unsigned>(tasks.size()), k_threads)(
        m_hash_task_mem.get<HashTask>(tasks.size()), m_secret.get<uint8_t>(xxh3_lanes::k_secret_size),
        m_hash_lanes.get<uint64_t>(lanes), out);
    check_launch("xxh3");
    m_digests.resize(tasks.size());
    download(m_digests.data(), out, tasks.size() * sizeof(uint64_t));
    for (size_t t = 0; t < tasks.size(); ++t) {
      hashes[on_device[t]] = m_digests[t];
    }
  }

private:
  void launch_gemm(long M, long N, long K, const float* a, long rs, long cs, const float* b, long ldb, float* c,
                   long ldc, int start, const float* bias, int post, bool use_tanh, const float* mask,
                   const float* zin, float* out2) {
    if (m_naive) { // only plain C += A B reaches here (the fused calls run the separate kernels)
      REPRUN_LAUNCH(gemm_naive, blocks_for(static_cast<size_t>(M * N)), k_threads)(M, N, K, a, rs, cs, b, ldb, c,
                                                                                   ldc);
      check_launch("gemm_naive");
      return;
    }
    const int tm = m_tm != 0 ? m_tm : tile_for(M, N, m_prop.multiProcessorCount);
    const long side = static_cast<long>(k_tdim) * tm;
    const dim3 grid(static_cast<unsigned>((N + side - 1) / side), static_cast<unsigned>((M + side - 1) / side));
    const GemmKernel gemm_tiled_variant = tm == 8   ? tiled_variant<8>(start, post, use_tanh)
                                          : tm == 2 ? tiled_variant<2>(start, post, use_tanh)
                                                    : tiled_variant<1>(start, post, use_tanh);
    REPRUN_LAUNCH(gemm_tiled_variant, grid, k_tdim * k_tdim)(M, N, K, a, rs, cs, b, ldb, c, ldc, bias, mask, zin,
                                                              out2);
    check_launch("gemm_tiled");
  }

  bool m_naive;
  int m_tm; // GemmAsked::tm
  cudaDeviceProp m_prop{};
  int m_binary = 0;
  Scratch m_rows;     // per row: its loss, added on the device in row order
  Scratch m_hits;     // per row: 1 when its argmax is its label
  Scratch m_task_mem; // the update tasks on the device
  std::vector<UpdateTask> m_tasks; // the tasks m_task_mem holds
  size_t m_widest = 0;             // their largest element count
  Scratch m_secret;                // XXH3's secret on the device
  bool m_secret_up = false;
  Scratch m_hash_task_mem, m_hash_lanes, m_hash_out;
  std::vector<HashTask> m_hash_tasks; // the tasks m_hash_task_mem holds
  std::vector<float> m_small;         // a short tensor, downloaded to be hashed here
  std::vector<uint64_t> m_digests;
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
