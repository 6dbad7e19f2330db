// A CPU emulator of the small part of CUDA that src/train/backend_cuda.cu uses, so that the CUDA
// backend's own source runs, kernels and all, on a machine without a GPU (CI never has one). It
// stands in for the real <cuda_runtime.h> when tests/cuda_emu/backend_cuda_emu.cpp compiles that
// file with the host compiler; the binary it gives, reprun_cudaemu, is a test tool and never
// installed.
//
// What it holds the backend to, beyond "the kernels compute the right numbers":
// - blocks run one at a time in a shuffled order, and a block's threads in a shuffled order
//   (REPRUN_CUDA_EMU_SEED fixes the shuffle; by default it changes every run): a result that
//   depends on the order blocks or threads run in shows up as a difference between two runs, which
//   is what makes reduction "atomic" differ between runs here as on a GPU;
// - __syncthreads() is a real barrier: a block that uses it runs its threads as fibers, each
//   stopping at the barrier until all have reached it; a barrier that some threads of a block
//   never reach (they returned) is reported;
// - a kernel argument that is a pointer must point into memory from cudaMalloc (a host pointer
//   would fault on a GPU), and so must the device side of every cudaMemcpy, within its bounds;
// - memory from cudaMalloc starts as NaN bytes (a GPU's is garbage), and its end touches a
//   protected page, so a kernel that reads an output before writing it, or past the end of a
//   buffer, fails here as it might on a GPU.
// It also counts what crosses: host-to-device and device-to-host bytes of cudaMemcpy, kernel
// launches (per kernel) and memsets; with REPRUN_CUDA_EMU_COUNTS=FILE set, the process writes them
// to FILE at exit (one "name value" per line), so a test can hold a step to the traffic it allows
// (tests/e2e/test_train_cuda_emu_traffic.sh).
// What it cannot show: the device compiler's floating-point code (tests/e2e/test_cuda_fp_policy.sh
// reads the PTX for that), the memory model of threads that run at once, and speed.
#pragma once

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
// Blocks run one at a time on the calling thread, so one static array per kernel is the block's
// shared memory.
#define __shared__ static thread_local

struct uint3 {
  unsigned x = 0, y = 0, z = 0;
};
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

enum cudaError_t {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInsufficientDriver = 35,
  cudaErrorNoDevice = 100,
};
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost, cudaMemcpyDeviceToDevice };
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged };

struct cudaPointerAttributes {
  cudaMemoryType type = cudaMemoryTypeUnregistered;
  int device = 0;
  void* devicePointer = nullptr;
  void* hostPointer = nullptr;
};
struct cudaDeviceProp {
  char name[256] = "reprun CUDA emulator (CPU, tests/cuda_emu)";
  int major = 9, minor = 0;
  int multiProcessorCount = 1;
  size_t totalGlobalMem = 0;
};
struct cudaFuncAttributes {
  int binaryVersion = 0;
  int ptxVersion = 0;
};

namespace cuda_emu {

[[noreturn]] inline void fatal(const std::string& what) {
  std::fprintf(stderr, "cuda-emu: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

inline thread_local uint3 thread_idx, block_idx;
inline thread_local dim3 block_dim, grid_dim;

// ---- counts of what crosses and what runs ---------------------------------------------------------

// Written at exit (the destructor of a function-local static) to REPRUN_CUDA_EMU_COUNTS when set.
// A process killed by a signal writes nothing.
struct Counts {
  std::mutex mutex;
  unsigned long long h2d_bytes = 0, d2h_bytes = 0, d2d_bytes = 0, h2d_copies = 0, d2h_copies = 0;
  unsigned long long launches = 0, memsets = 0;
  std::map<std::string, unsigned long long> by_kernel;

  ~Counts() {
    const char* path = std::getenv("REPRUN_CUDA_EMU_COUNTS");
    if (path == nullptr || *path == '\0') {
      return;
    }
    FILE* f = std::fopen(path, "w");
    if (f == nullptr) {
      return;
    }
    std::fprintf(f, "launches %llu\nmemsets %llu\nh2d_bytes %llu\nh2d_copies %llu\nd2h_bytes %llu\n"
                    "d2h_copies %llu\nd2d_bytes %llu\n",
                 launches, memsets, h2d_bytes, h2d_copies, d2h_bytes, d2h_copies, d2d_bytes);
    for (const auto& [name, n] : by_kernel) {
      std::fprintf(f, "kernel:%s %llu\n", name.c_str(), n);
    }
    std::fclose(f);
  }
};

inline Counts& counts() {
  static Counts c;
  return c;
}

// ---- device memory -----------------------------------------------------------------------------

struct Allocation {
  char* map;        // the mapping, guard page included
  size_t map_bytes;
  size_t bytes;     // what cudaMalloc was asked for
};

inline std::mutex& memory_mutex() {
  static std::mutex m;
  return m;
}
inline std::map<uintptr_t, Allocation>& allocations() { // by start address
  static std::map<uintptr_t, Allocation> a;
  return a;
}

// The allocation holding [p, p + bytes), or nullptr.
inline const Allocation* find_allocation(const void* p, size_t bytes) {
  const auto u = reinterpret_cast<uintptr_t>(p);
  auto& all = allocations();
  auto it = all.upper_bound(u);
  if (it == all.begin()) {
    return nullptr;
  }
  --it;
  const Allocation& a = it->second;
  return u + bytes <= it->first + a.bytes ? &a : nullptr;
}

inline cudaError_t malloc_device(void** out, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t usable = (std::max<size_t>(bytes, 1) + 15) / 16 * 16;
  const size_t body = (usable + page - 1) / page * page;
  void* map = mmap(nullptr, body + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) {
    return cudaErrorMemoryAllocation;
  }
  char* base = static_cast<char*>(map);
  mprotect(base + body, page, PROT_NONE); // reading or writing past the end faults
  char* p = base + body - usable;         // 16-byte aligned, ending at the guard page
  std::memset(p, 0xff, usable);           // NaN in every float and double
  std::lock_guard<std::mutex> lock(memory_mutex());
  allocations()[reinterpret_cast<uintptr_t>(p)] = {base, body + page, bytes};
  *out = p;
  return cudaSuccess;
}

inline cudaError_t free_device(void* p) {
  if (p == nullptr) {
    return cudaSuccess;
  }
  std::lock_guard<std::mutex> lock(memory_mutex());
  auto it = allocations().find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations().end()) {
    fatal("cudaFree of a pointer cudaMalloc did not return");
  }
  munmap(it->second.map, it->second.map_bytes);
  allocations().erase(it);
  return cudaSuccess;
}

inline void require_device(const void* p, size_t bytes, const char* what) {
  std::lock_guard<std::mutex> lock(memory_mutex());
  if (find_allocation(p, bytes) == nullptr) {
    fatal(std::string(what) + ": " + std::to_string(bytes) + " bytes at a pointer that is not device memory " +
          "(or runs past the end of its cudaMalloc)");
  }
}

// ---- the order blocks and threads run in -------------------------------------------------------

inline std::mt19937_64& shuffle_rng() {
  static std::mt19937_64 rng = [] {
    const char* env = std::getenv("REPRUN_CUDA_EMU_SEED");
    return std::mt19937_64(env && *env ? std::strtoull(env, nullptr, 10) : std::random_device{}());
  }();
  return rng;
}

inline std::vector<unsigned> shuffled(unsigned n) {
  std::vector<unsigned> order(n);
  for (unsigned i = 0; i < n; ++i) {
    order[i] = i;
  }
  std::shuffle(order.begin(), order.end(), shuffle_rng());
  return order;
}

// ---- fibers: the threads of a block that uses __syncthreads -----------------------------------

// Switching between fibers. On x86-64 (without a sanitizer, which must see stack switches) a
// switch saves the callee-saved registers on the stack and swaps stack pointers: ucontext's
// swapcontext makes a system call per switch, and a tiled GEMM switches millions of times.
#if defined(__x86_64__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CUDA_EMU_FAST_SWITCH 1
extern "C" void cuda_emu_switch(void** save_sp, void* load_sp);
asm(R"(
  .text
  .globl cuda_emu_switch
  .type cuda_emu_switch, @function
cuda_emu_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size cuda_emu_switch, .-cuda_emu_switch
)");
#endif

enum class State { ready, at_barrier, done };

struct Fibers {
  static constexpr size_t k_stack = 256 * 1024;
  std::vector<char*> stacks;
  std::vector<State> state;
#if CUDA_EMU_FAST_SWITCH
  std::vector<void*> sp;
  void* scheduler_sp = nullptr;
#else
  std::vector<ucontext_t> ctx;
  ucontext_t scheduler{};
#endif
  const std::function<void()>* body = nullptr;
  unsigned current = 0;
  bool in_fiber = false;
  bool synced = false; // some thread of this launch reached __syncthreads

  void grow(unsigned n) {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    while (stacks.size() < n) {
      void* m = mmap(nullptr, k_stack + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (m == MAP_FAILED) {
        fatal("no memory for a fiber stack");
      }
      mprotect(m, page, PROT_NONE); // a stack overflow faults
      stacks.push_back(static_cast<char*>(m) + page);
    }
#if CUDA_EMU_FAST_SWITCH
    sp.resize(n);
#else
    ctx.resize(n);
#endif
    state.resize(n);
  }
};

inline Fibers& fibers() {
  static thread_local Fibers f;
  return f;
}

inline void set_thread(unsigned t) {
  const dim3 b = block_dim;
  thread_idx = {t % b.x, t / b.x % b.y, t / (b.x * b.y)};
}

// The running fiber gives the CPU back to the scheduler.
inline void to_scheduler(Fibers& f) {
#if CUDA_EMU_FAST_SWITCH
  cuda_emu_switch(&f.sp[f.current], f.scheduler_sp);
#else
  swapcontext(&f.ctx[f.current], &f.scheduler);
#endif
}

inline void fiber_entry() {
  Fibers& f = fibers();
  (*f.body)();
  f.state[f.current] = State::done;
#if CUDA_EMU_FAST_SWITCH
  to_scheduler(f); // never comes back
  fatal("a finished fiber was resumed");
#endif // else uc_link returns to the scheduler
}

inline void start_fiber(Fibers& f, unsigned t) {
#if CUDA_EMU_FAST_SWITCH
  // The stack cuda_emu_switch pops: six registers, then fiber_entry as the return address, at a
  // 16-byte boundary, so that fiber_entry starts with the stack pointer 8 bytes off it, as after
  // a call.
  auto* top = reinterpret_cast<void**>(f.stacks[t] + Fibers::k_stack);
  *--top = nullptr;
  *--top = reinterpret_cast<void*>(&fiber_entry);
  for (int r = 0; r < 6; ++r) {
    *--top = nullptr;
  }
  f.sp[t] = top;
#else
  getcontext(&f.ctx[t]);
  f.ctx[t].uc_stack.ss_sp = f.stacks[t];
  f.ctx[t].uc_stack.ss_size = Fibers::k_stack;
  f.ctx[t].uc_link = &f.scheduler;
  makecontext(&f.ctx[t], fiber_entry, 0);
#endif
}

inline void resume_fiber(Fibers& f, unsigned t) {
#if CUDA_EMU_FAST_SWITCH
  cuda_emu_switch(&f.scheduler_sp, f.sp[t]);
#else
  swapcontext(&f.scheduler, &f.ctx[t]);
#endif
}

// One block, its threads as fibers: each runs until it returns or reaches the barrier; when every
// thread is at the barrier, all go on.
inline void run_block_fibers(const std::function<void()>& body, unsigned n) {
  Fibers& f = fibers();
  f.grow(n);
  f.body = &body;
  for (unsigned t = 0; t < n; ++t) {
    start_fiber(f, t);
    f.state[t] = State::ready;
  }
  for (;;) {
    for (unsigned t : shuffled(n)) {
      if (f.state[t] != State::ready) {
        continue;
      }
      f.current = t;
      set_thread(t);
      f.in_fiber = true;
      resume_fiber(f, t);
      f.in_fiber = false;
    }
    const auto done = static_cast<unsigned>(std::count(f.state.begin(), f.state.begin() + n, State::done));
    if (done == n) {
      return;
    }
    if (done > 0) {
      fatal("__syncthreads() was not reached by every thread of a block (" + std::to_string(done) + " of " +
            std::to_string(n) + " had returned): a deadlock or undefined behaviour on a GPU");
    }
    std::fill(f.state.begin(), f.state.begin() + n, State::ready);
  }
}

inline void syncthreads() {
  Fibers& f = fibers();
  if (!f.in_fiber) {
    fatal("__syncthreads() in a kernel that ran without it before (kernels that use it must use it at every "
          "launch; see kernel_uses_sync)");
  }
  f.synced = true;
  f.state[f.current] = State::at_barrier;
  to_scheduler(f);
}

// ---- launches ----------------------------------------------------------------------------------

// Whether a kernel used __syncthreads at its first launch (then its blocks run as fibers; the
// others run thread after thread, which is much faster).
inline std::map<const void*, bool>& kernel_uses_sync() {
  static std::map<const void*, bool> m;
  return m;
}

template <class T> void check_argument(const char* kernel, int index, const T& arg) {
  if constexpr (std::is_pointer_v<T>) {
    if (arg != nullptr) {
      std::lock_guard<std::mutex> lock(memory_mutex());
      if (find_allocation(arg, 1) == nullptr) {
        fatal(std::string(kernel) + ": argument " + std::to_string(index) +
              " is a pointer to host memory (a GPU cannot read it)");
      }
    }
  }
}

template <class... P> struct Launch {
  const char* name;
  void (*kernel)(P...);
  dim3 grid, block;

  template <class... A> void operator()(A&&... args) const {
    static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
    std::tuple<P...> params(std::forward<A>(args)...); // by value, as a launch passes them
    std::apply([&](const auto&... p) {
      int i = 0;
      (check_argument(name, i++, p), ...);
    }, params);
    if (grid.x == 0 || grid.y == 0 || grid.z == 0 || block.x == 0 || block.y == 0 || block.z == 0) {
      fatal(std::string(name) + ": an empty grid or block (cudaErrorInvalidConfiguration on a GPU)");
    }
    if (grid.y > 65535 || grid.z > 65535) {
      fatal(std::string(name) + ": grid.y or grid.z above 65535 (cudaErrorInvalidConfiguration on a GPU)");
    }
    const unsigned threads = block.x * block.y * block.z;
    if (threads > 1024) {
      fatal(std::string(name) + ": more than 1024 threads in a block");
    }
    static std::mutex serial; // one launch at a time: blocks share the kernel's static shared memory
    std::lock_guard<std::mutex> lock(serial);
    {
      Counts& c = counts();
      std::lock_guard<std::mutex> count_lock(c.mutex);
      ++c.launches;
      ++c.by_kernel[name];
    }
    const std::function<void()> body = [&] { std::apply(kernel, params); };
    auto known = kernel_uses_sync().find(reinterpret_cast<const void*>(kernel));
    const bool first = known == kernel_uses_sync().end();
    const bool use_fibers = first || known->second;
    Fibers& f = fibers();
    f.synced = false;
    block_dim = block;
    grid_dim = grid;
    const unsigned blocks = grid.x * grid.y * grid.z;
    for (unsigned b : shuffled(blocks)) {
      block_idx = {b % grid.x, b / grid.x % grid.y, b / (grid.x * grid.y)};
      if (use_fibers) {
        run_block_fibers(body, threads);
      } else {
        for (unsigned t : shuffled(threads)) {
          set_thread(t);
          body();
        }
      }
    }
    if (first) {
      kernel_uses_sync()[reinterpret_cast<const void*>(kernel)] = f.synced;
    }
  }
};

template <class... P> Launch<P...> launch(const char* name, void (*kernel)(P...), dim3 grid, dim3 block) {
  return {name, kernel, grid, block};
}

} // namespace cuda_emu

#define threadIdx (::cuda_emu::thread_idx)
#define blockIdx (::cuda_emu::block_idx)
#define blockDim (::cuda_emu::block_dim)
#define gridDim (::cuda_emu::grid_dim)
#define REPRUN_LAUNCH(kernel, grid, block) ::cuda_emu::launch(#kernel, kernel, grid, block)

inline void __syncthreads() { cuda_emu::syncthreads(); }

// Blocks and threads run one at a time: a plain add is atomic. The order they run in is shuffled,
// so float sums in atomicAdd order differ between runs, as on a GPU.
inline float atomicAdd(float* p, float v) {
  const float old = *p;
  *p = old + v;
  return old;
}

// ---- the runtime API ---------------------------------------------------------------------------

inline thread_local cudaError_t cuda_emu_last_error = cudaSuccess;

inline const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
  case cudaSuccess: return "no error";
  case cudaErrorInvalidValue: return "invalid argument";
  case cudaErrorMemoryAllocation: return "out of memory";
  case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
  case cudaErrorNoDevice: return "no CUDA-capable device is detected";
  }
  return "unknown error";
}
inline cudaError_t cudaGetLastError() {
  const cudaError_t e = cuda_emu_last_error;
  cuda_emu_last_error = cudaSuccess;
  return e;
}
inline cudaError_t cudaGetDeviceCount(int* n) {
  *n = 1;
  return cudaSuccess;
}
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) { return d == 0 ? cudaSuccess : cudaErrorInvalidValue; }
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  *p = cudaDeviceProp{};
  return d == 0 ? cudaSuccess : cudaErrorInvalidValue;
}
template <class F> cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, F*) {
  a->binaryVersion = 90;
  a->ptxVersion = 90;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return cudaSuccess; } // every launch has finished
inline cudaError_t cudaMalloc(void** p, size_t bytes) { return cuda_emu::malloc_device(p, bytes); }
template <class T> cudaError_t cudaMalloc(T** p, size_t bytes) {
  return cuda_emu::malloc_device(reinterpret_cast<void**>(p), bytes);
}
inline cudaError_t cudaFree(void* p) { return cuda_emu::free_device(p); }
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  *a = cudaPointerAttributes{};
  std::lock_guard<std::mutex> lock(cuda_emu::memory_mutex());
  if (cuda_emu::find_allocation(p, 1) != nullptr) {
    a->type = cudaMemoryTypeDevice;
    a->devicePointer = const_cast<void*>(p);
  } else {
    a->hostPointer = const_cast<void*>(p);
  }
  return cudaSuccess;
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) {
    cuda_emu::require_device(dst, bytes, "cudaMemcpy destination");
  }
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) {
    cuda_emu::require_device(src, bytes, "cudaMemcpy source");
  }
  {
    cuda_emu::Counts& c = cuda_emu::counts();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (kind == cudaMemcpyHostToDevice) {
      c.h2d_bytes += bytes;
      ++c.h2d_copies;
    } else if (kind == cudaMemcpyDeviceToHost) {
      c.d2h_bytes += bytes;
      ++c.d2h_copies;
    } else if (kind == cudaMemcpyDeviceToDevice) {
      c.d2d_bytes += bytes;
    }
  }
  std::memmove(dst, src, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  cuda_emu::require_device(dst, bytes, "cudaMemset");
  {
    cuda_emu::Counts& c = cuda_emu::counts();
    std::lock_guard<std::mutex> lock(c.mutex);
    ++c.memsets;
  }
  std::memset(dst, value, bytes);
  return cudaSuccess;
}
