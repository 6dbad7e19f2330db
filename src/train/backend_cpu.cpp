// The CPU kernel backend: see include/reprun/train/backend.hpp for the contract. Loops are written
// as the expressions they compute (compiled with -ffp-contract=off, so nothing is fused unless
// written as std::fma); work is split over the thread pool in fixed pieces, so the thread count
// changes who computes an element, never how.
#include "reprun/train/backend.hpp"

#include "reprun/core/hash.hpp"
#include "reprun/core/threadpool.hpp"
#include "reprun/train/elementwise.hpp"
#include "reprun/train/exchange.hpp"
#include "reprun/train/gemm.hpp"
#include "reprun/train/mathfn.hpp"
#include "reprun/train/rng.hpp"
#include "update_loops.hpp"

#include <algorithm>
#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <new>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>

namespace reprun {

namespace {

// Atomic mode: samples per partial gradient. More chunks than threads, so the completion order of
// the partials really varies between runs.
constexpr long k_atomic_chunk = 8;

// Atomic mode issues the chunks in an order drawn once per process, as a GPU's block scheduler
// varies from launch to launch: completion order then differs between runs even when the threads
// happen to run one after another (a loaded machine), so the demonstration never comes out
// accidentally identical.
uint64_t atomic_issue_seed() {
  static const uint64_t k_seed = (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  return k_seed;
}
std::atomic<uint32_t> g_atomic_calls{0};

// Column sums of g (m x out) added to gb, one chain per column over the rows in order.
void add_column_sums(const float* g, long r0, long r1, long out, float* gb) {
  for (long r = r0; r < r1; ++r) {
    for (long o = 0; o < out; ++o) {
      gb[o] += g[r * out + o];
    }
  }
}

// A cache line on its way in, into the L2 and out (the L1 stays the product's).
inline void prefetch_line(const char* p) {
#if defined(__SSE__)
  _mm_prefetch(p, _MM_HINT_T1);
#else
  __builtin_prefetch(p, 0, 2);
#endif
}

// Adds the wall time of its scope to `total`: the time of a call that runs matrix products.
class GemmClock {
public:
  explicit GemmClock(double& total) : m_total(total), m_start(std::chrono::steady_clock::now()) {}
  ~GemmClock() { m_total += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count(); }
  GemmClock(const GemmClock&) = delete;
  GemmClock& operator=(const GemmClock&) = delete;

private:
  double& m_total;
  std::chrono::steady_clock::time_point m_start;
};

// The optimizer's loops of the kernel set in use (REPRUN_GEMM_KERNEL caps both): the same bits in each.
const detail::UpdateKernels& update_kernels() {
  static const detail::UpdateKernels k_portable{detail::sgd_loop, detail::adam_loop};
  const std::string set = gemm_kernel_name();
  return set == "avx512" ? detail::update_kernels_avx512() : set == "avx2-fma" ? detail::update_kernels_avx2() : k_portable;
}

class CpuBackend final : public Backend {
public:
  explicit CpuBackend(ThreadPool* pool)
    : m_exps(static_cast<size_t>(pool ? pool->size() : 1)), m_pool(pool),
      m_partial(static_cast<size_t>(pool ? pool->size() : 1)) {}

  nlohmann::ordered_json kernels() const override { return kernel_facts(); }
  std::optional<double> gemm_seconds() const override { return m_gemm_seconds; }

  void prefetch_rows(const void* const* rows, size_t n, size_t bytes) override {
    m_rows.assign(reinterpret_cast<const char* const*>(rows), reinterpret_cast<const char* const*>(rows) + n);
    m_row_lines = (bytes + 63) / 64;
    // A step of the bench's model runs about a hundred tiles; spread over some 64 of them, the
    // requests never queue behind each other, and a model with fewer tiles fetches what it can.
    m_lines_per_tile = std::max<size_t>(16, (n * m_row_lines + 63) / 64);
    m_next_line.store(0, std::memory_order_relaxed);
  }

  // The CPU computes on host memory: buffers are plain allocations, read and written in place.
  bool host_memory() const override { return true; }
  void* allocate(size_t bytes) override {
    // 64-byte aligned (a cache line, an AVX-512 vector), as the GEMM kernels like their operands.
    void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
    if (p == nullptr) {
      throw std::bad_alloc();
    }
    return p;
  }
  void release(void* p) override { std::free(p); }
  void upload(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void download(void* dst, const void* src, size_t bytes) override { std::memcpy(dst, src, bytes); }
  void zero(void* p, size_t bytes) override { std::memset(p, 0, bytes); }

  void gemm_acc(long M, long N, long K, MatView A, const float* B, long ldb, float* C, long ldc) override {
    const GemmClock clock(m_gemm_seconds);
    reprun::gemm_acc(M, N, K, A, B, ldb, C, ldc, m_pool);
  }

  void fill_rows(float* z, const float* b, long m, long n) override {
    for (long r = 0; r < m; ++r) {
      std::memcpy(z + r * n, b, static_cast<size_t>(n) * sizeof(float));
    }
  }

  void transpose(const float* w, long rows, long cols, float* wt) override {
    // In 32x32 blocks so that both sides stay in cache; within a block, 4x4 tiles transposed in SSE
    // registers (a copy: the values are the same whichever way they move). On one thread: bands of
    // rows over two were no faster (the data-gradient product then reads wt from both cores).
    constexpr long k_b = 32;
    for (long i0 = 0; i0 < rows; i0 += k_b) {
      for (long o0 = 0; o0 < cols; o0 += k_b) {
        const long i1 = std::min(rows, i0 + k_b), o1 = std::min(cols, o0 + k_b);
        long i = i0;
#if defined(__SSE2__)
        for (; i + 4 <= i1; i += 4) {
          long o = o0;
          for (; o + 4 <= o1; o += 4) {
            __m128 r0 = _mm_loadu_ps(w + i * cols + o), r1 = _mm_loadu_ps(w + (i + 1) * cols + o);
            __m128 r2 = _mm_loadu_ps(w + (i + 2) * cols + o), r3 = _mm_loadu_ps(w + (i + 3) * cols + o);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(wt + o * rows + i, r0);
            _mm_storeu_ps(wt + (o + 1) * rows + i, r1);
            _mm_storeu_ps(wt + (o + 2) * rows + i, r2);
            _mm_storeu_ps(wt + (o + 3) * rows + i, r3);
          }
          for (; o < o1; ++o) {
            for (long r = i; r < i + 4; ++r) {
              wt[o * rows + r] = w[r * cols + o];
            }
          }
        }
#endif
        for (; i < i1; ++i) {
          for (long o = o0; o < o1; ++o) {
            wt[o * rows + i] = w[i * cols + o];
          }
        }
      }
    }
  }

  void activation(Activation f, const float* z, float* act, size_t n) override {
    if (f == Activation::relu) {
      for (size_t i = 0; i < n; ++i) {
        act[i] = z[i] > 0.0f ? z[i] : 0.0f;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        act[i] = mathfn::tanh(z[i]);
      }
    }
  }

  void activation_grad(Activation f, const float* z, const float* dh, float* gz, size_t n) override {
    if (f == Activation::relu) {
      // dh read whatever z is: a select the compiler vectorizes, where a load under the condition
      // was a branch per element, mispredicted about every other one (a ReLU's signs are random).
      for (size_t i = 0; i < n; ++i) {
        const float d = dh[i];
        gz[i] = z[i] > 0.0f ? d : 0.0f;
      }
    } else {
      for (size_t i = 0; i < n; ++i) {
        gz[i] = elem::tanh_grad(z[i], dh[i]);
      }
    }
  }

  // The GEMM starts each chain from the bias (or zero) in its registers (gemm_set: no pass filling
  // the output first), and the activation or its gradient runs in its epilogue: on each tile of the
  // output once complete, by the thread that computed it, while the tile is in its cache
  // (gemm_set_then). An element's operations are the passes' own, in the same order.
  void dense_forward(const float* a, const float* w, const float* b, long m, long in, long out, float* z,
                     Activation f, float* act) override {
    // z = b + a w: each chain starts from the bias in the GEMM's registers (no pass filling z first).
    const GemmClock clock(m_gemm_seconds);
    reprun::gemm_set_then(m, out, in, MatView{a, in, 1}, w, out, b, z, out, m_pool, [&](long i0, long j0, long tm, long tn) {
      if (act) {
        for (long r = i0; r < i0 + tm; ++r) {
          activation(f, z + r * out + j0, act + r * out + j0, static_cast<size_t>(tn));
        }
      }
      prefetch_some();
    });
  }

  void dense_backward_data(const float* g, const float* wt, long m, long out, long in, const float* mask,
                           Activation f, const float* z, float* dh, float* gz) override {
    // dh from +0.0 (no fill pass), then per tile dh *= mask and gz = dh * f'(z).
    const GemmClock clock(m_gemm_seconds);
    reprun::gemm_set_then(m, in, out, MatView{g, out, 1}, wt, in, nullptr, dh, in, m_pool,
                          [&](long i0, long j0, long tm, long tn) {
                            for (long r = i0; r < i0 + tm; ++r) {
                              const long at = r * in + j0;
                              if (mask) {
                                multiply(dh + at, mask + at, static_cast<size_t>(tn));
                              }
                              activation_grad(f, z + at, dh + at, gz + at, static_cast<size_t>(tn));
                            }
                            prefetch_some();
                          });
  }

  void dropout(const DropoutDraw& d, float* act, float* mask, long m, long n) override {
    // The mask is a pure function of (seed, step, layer, sample, unit): one Philox draw per four
    // units, by the function the CUDA kernel runs too.
    const float keep_scale = static_cast<float>(1.0 / (1.0 - d.p));
    const float p = static_cast<float>(d.p);
    for (long r = 0; r < m; ++r) {
      for (long u = 0; u < n; u += 4) {
        elem::dropout_quad(d.seed, d.step, d.layer, static_cast<uint32_t>(d.row0 + r), u, n, p, keep_scale, act + r * n,
                           mask + r * n);
      }
    }
  }

  void multiply(float* x, const float* mask, size_t n) override {
    for (size_t i = 0; i < n; ++i) {
      x[i] = x[i] * mask[i];
    }
  }

  // Softmax rows by the functions the CUDA kernels run (elementwise.hpp): bands of rows in
  // parallel, each row's loss kept, then the losses added to loss_sum in row order (the chain of
  // one thread: the same bits as adding each as its row is done).
  void softmax_xent(const float* logits, const int32_t* y, long m, long C, double inv_batch, float* g,
                    double* loss_sum) override {
    constexpr long k_band = 16;
    const long bands = (m + k_band - 1) / k_band;
    m_row_loss.resize(static_cast<size_t>(m));
    if (bands > 1) {
      for_each_task(static_cast<int>(bands), [&](int b, int worker) {
        const long r0 = b * k_band;
        softmax_rows(logits, y, r0, std::min(m, r0 + k_band), C, inv_batch, g, m_exps[static_cast<size_t>(worker)]);
      });
    } else {
      softmax_rows(logits, y, 0, m, C, inv_batch, g, m_exps[0]);
    }
    for (long r = 0; r < m; ++r) {
      *loss_sum += m_row_loss[static_cast<size_t>(r)];
    }
  }

  // elem::softmax_xent_row's expressions for rows [r0, r1), each exponential computed once and kept
  // in `e` (the row function computes it twice, for the sum and for the gradient: the same value
  // both times); each row's loss into m_row_loss.
  void softmax_rows(const float* logits, const int32_t* y, long r0, long r1, long C, double inv_batch, float* g,
                    std::vector<double>& exps) {
    exps.resize(static_cast<size_t>(C));
    double* e = exps.data();
    for (long r = r0; r < r1; ++r) {
      const float* z = logits + r * C;
      float* gr = g + r * C;
      float zmax = z[0];
      for (long j = 1; j < C; ++j) {
        zmax = zmax < z[j] ? z[j] : zmax;
      }
      double sum = 0.0;
      for (long j = 0; j < C; ++j) {
        e[j] = mathfn::exp(static_cast<double>(z[j]) - static_cast<double>(zmax));
        sum += e[j];
      }
      m_row_loss[static_cast<size_t>(r)] = mathfn::log(sum) - (static_cast<double>(z[y[r]]) - static_cast<double>(zmax));
      for (long j = 0; j < C; ++j) {
        gr[j] = static_cast<float>((e[j] / sum - (j == y[r] ? 1.0 : 0.0)) * inv_batch);
      }
    }
  }

  void softmax_eval(const float* logits, const int32_t* y, long m, long C, double* loss_sum, long* correct) override {
    for (long r = 0; r < m; ++r) {
      int hit = 0;
      *loss_sum += elem::softmax_eval_row(logits + r * C, y[r], C, &hit);
      *correct += hit;
    }
  }

  void weight_grad(Reduction red, const float* a, const float* g, long m, long in, long out, float* gw,
                   float* gb) override {
    if (red == Reduction::ordered) {
      // gw (in, out) += a^T (in, m) * g (m, out): a chain over samples in order, tiles in parallel.
      const GemmClock clock(m_gemm_seconds);
      reprun::gemm_acc(in, out, m, MatView{a, 1, in}, g, out, gw, out, m_pool);
      add_column_sums(g, 0, m, out, gb);
      return;
    }
    atomic_weight_grad(a, g, m, in, out, gw, gb);
  }

  void weight_grad_from_zero(const float* a, const float* g, long m, long in, long out, float* gw, float* gb) override {
    if (in <= 0) {
      std::fill(gb, gb + out, 0.0f);
      add_column_sums(g, 0, m, out, gb);
      return;
    }
    const GemmClock clock(m_gemm_seconds);
    // Each chain starts from +0.0 in the GEMM's registers (gemm_set), as weight_grad's from zeroed
    // gw; the tiles of the first rows of gw also sum their columns of g into gb (each column one
    // chain over the rows in order, add_column_sums' chain), in the product's parallel loop.
    reprun::gemm_set_then(in, out, m, MatView{a, 1, in}, g, out, nullptr, gw, out, m_pool,
                          [&](long i0, long j0, long, long tn) {
                            if (i0 == 0) {
                              std::fill(gb + j0, gb + j0 + tn, 0.0f);
                              for (long r = 0; r < m; ++r) {
                                for (long o = j0; o < j0 + tn; ++o) {
                                  gb[o] += g[r * out + o];
                                }
                              }
                            }
                            prefetch_some();
                          });
  }

  // Each task's update, and with `sq` its weights' sum of squares in the same pass (update_loops.hpp).
  void update(const UpdateRule& rule, const std::vector<UpdateTask>& tasks, double* sq) override {
    const detail::UpdateKernels& kern = update_kernels();
    auto step = rule.kind == UpdateRule::Kind::sgd ? kern.sgd : kern.adam;
    for_each_task(static_cast<int>(tasks.size()), [&](int t, int) {
      step(rule, tasks[static_cast<size_t>(t)], sq ? sq + t : nullptr);
    });
  }

  void xxh3_tensors(const std::vector<const float*>& tensors, const std::vector<size_t>& n,
                    uint64_t* hashes) override {
    for (size_t i = 0; i < tensors.size(); ++i) {
      hashes[i] = xxh3_64(tensors[i], n[i] * sizeof(float));
    }
  }

private:
  std::vector<std::vector<double>> m_exps; // per worker: softmax_xent's exponentials of one row
  std::vector<double> m_row_loss;          // softmax_xent: each row's loss, added in row order
  template <class F> void for_each_task(int n, F&& f) {
    if (m_pool) {
      m_pool->parallel_for(n, f);
    } else {
      for (int i = 0; i < n; ++i) {
        f(i, 0);
      }
    }
  }

  // Atomic mode, deliberately non-deterministic: each chunk's partial gradient is added into the
  // shared one in completion order, as GPU atomics do.
  void atomic_weight_grad(const float* a, const float* g, long m, long in, long out, float* gw, float* gb) {
    const size_t nw = static_cast<size_t>(in * out), nb = static_cast<size_t>(out);
    const int chunks = static_cast<int>((m + k_atomic_chunk - 1) / k_atomic_chunk);
    std::vector<int> issue(static_cast<size_t>(chunks));
    for (int c = 0; c < chunks; ++c) {
      issue[static_cast<size_t>(c)] = c;
    }
    const uint32_t call = g_atomic_calls.fetch_add(1);
    for (int c = chunks; c > 1; --c) {
      Philox4 r = draw(atomic_issue_seed(), Stream::dropout, call, 0xffffffffu, static_cast<uint32_t>(c));
      std::swap(issue[static_cast<size_t>(c - 1)], issue[to_below(r[0], r[1], static_cast<uint32_t>(c))]);
    }
    std::mutex mutex;
    for_each_task(chunks, [&](int task, int worker) {
      const int c = issue[static_cast<size_t>(task)];
      auto& part = m_partial[static_cast<size_t>(worker)];
      part.assign(nw + nb, 0.0f);
      const long r0 = c * k_atomic_chunk;
      const long rows = std::min(k_atomic_chunk, m - r0);
      reprun::gemm_acc(in, out, rows, MatView{a + r0 * in, 1, in}, g + r0 * out, out, part.data(), out, nullptr);
      float* pb = part.data() + nw;
      add_column_sums(g, r0, r0 + rows, out, pb);
      std::lock_guard<std::mutex> lock(mutex);
      for (size_t i = 0; i < nw; ++i) {
        gw[i] += part[i];
      }
      for (size_t i = 0; i < nb; ++i) {
        gb[i] += pb[i];
      }
    });
  }

  // At the end of a tile: the next lines of prefetch_rows' rows, if any are left.
  void prefetch_some() {
    const size_t total = m_rows.size() * m_row_lines;
    if (m_next_line.load(std::memory_order_relaxed) >= total) {
      return;
    }
    const size_t from = m_next_line.fetch_add(m_lines_per_tile, std::memory_order_relaxed);
    const size_t to = std::min(total, from + m_lines_per_tile);
    for (size_t l = from; l < to; ++l) {
      prefetch_line(m_rows[l / m_row_lines] + (l % m_row_lines) * 64);
    }
  }
  // prefetch_rows: the rows' cache lines, claimed a few at a time by the products' tiles.
  std::vector<const char*> m_rows;
  size_t m_row_lines = 0;             // lines of one row
  size_t m_lines_per_tile = 0;        // lines a tile claims
  std::atomic<size_t> m_next_line{0}; // the first line not yet claimed (row-major over m_rows)

  ThreadPool* m_pool;
  double m_gemm_seconds = 0.0; // gemm_seconds(): the calls' wall time, on the calling thread
  std::vector<std::vector<float>> m_partial; // per worker: atomic-mode partial gradient
};

} // namespace

std::unique_ptr<Backend> make_cpu_backend(ThreadPool* pool) {
  gemm_check_kernel_env();
  return std::make_unique<CpuBackend>(pool);
}

nlohmann::ordered_json kernel_facts() {
  nlohmann::ordered_json k = {{"gemm", gemm_kernel_name()}};
  if (const std::string mpi = mpi_library(); !mpi.empty()) {
    k["mpi"] = mpi; // the exchange between ranks: moves bytes, never adds (docs/scaling.md)
  }
  return k;
}

double sum_squares_8lane(const float* x, size_t n) {
  double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  detail::add_squares(x, 0, n, lane);
  return detail::lanes_sum(lane);
}

} // namespace reprun
