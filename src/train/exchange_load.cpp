// The exchange of a build with MPI (include/reprun/train/exchange.hpp): the MPI code is a module of
// its own, libreprun_mpi.so (exchange_mpi.cpp), loaded here only when a launcher started several
// ranks. A process on its own never loads it nor Open MPI, so the plain binary starts as fast as a
// build without MPI. The module lies beside the binary (the build folder) or in ../lib/reprun
// (cmake --install).
#include "reprun/train/exchange.hpp"

#include "reprun/core/error.hpp"

#include "mpi_library.hpp" // generated: the MPI library CMake found

#include <dlfcn.h>
#include <filesystem>
#include <fmt/format.h>

namespace reprun {

namespace {

using Start = Exchange* (*)(const std::atomic<bool>*);
using Finish = void (*)(int, int);

struct Module {
  Start start = nullptr;
  Finish finish = nullptr;
};

const Module& module() {
  static const Module m = [] {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path exe_dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    std::string tried;
    for (const fs::path& p : {exe_dir / "libreprun_mpi.so", exe_dir / ".." / "lib" / "reprun" / "libreprun_mpi.so"}) {
      if (!fs::exists(p, ec)) {
        tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
        continue;
      }
      void* h = ::dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!h) {
        throw Error(p.string(), fmt::format("cannot load the MPI exchange: {}", ::dlerror()));
      }
      Module r;
      r.start = reinterpret_cast<Start>(::dlsym(h, "reprun_mpi_start"));
      r.finish = reinterpret_cast<Finish>(::dlsym(h, "reprun_mpi_finish"));
      if (!r.start || !r.finish) {
        throw Error(p.string(), "not reprun's MPI exchange (no reprun_mpi_start / reprun_mpi_finish)");
      }
      return r;
    }
    throw Error("mpi", fmt::format("the MPI exchange libreprun_mpi.so is missing (looked for {}); reinstall "
                                   "reprun",
                                   tried));
  }();
  return m;
}

Exchange* g_world = nullptr;

} // namespace

Exchange* mpi_world(const std::atomic<bool>* stop) {
  if (!g_world) {
    if (launched_rank() < 0 || launched_size() <= 1) {
      return nullptr;
    }
    g_world = module().start(stop);
  }
  return g_world;
}

std::string mpi_library() { return k_mpi_library; }

bool mpi_started() { return g_world != nullptr; }

void mpi_finish(bool ok, int code) {
  if (!g_world) {
    return;
  }
  g_world = nullptr;
  module().finish(ok ? 1 : 0, code);
}

} // namespace reprun
