// machine_snapshot and its parts: environment allowlist with secret filtering, git state.
#include "reprun/meta/snapshot.hpp"

#include "reprun/meta/buildinfo.hpp"
#include "reprun/core/hash.hpp"
#include "reprun/meta/host.hpp"
#include "reprun/meta/world.hpp"

#include <algorithm>
#include <cctype>
#include <fnmatch.h>

namespace reprun {

using ojson = nlohmann::ordered_json;

bool looks_secret(const std::string& name) {
  std::string up = name;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* s : {"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION"}) {
    if (up.find(s) != std::string::npos) {
      return true;
    }
  }
  return false;
}

const std::vector<std::string>& default_env_allowlist() {
  static const std::vector<std::string> k_list = {
      // Python and frameworks
      "PYTHONHASHSEED", "PYTHONPATH", "PL_GLOBAL_SEED", "PL_SEED_WORKERS", "TF_DETERMINISTIC_OPS",
      "TF_CUDNN_DETERMINISTIC", "TF_ENABLE_ONEDNN_OPTS", "TF_XLA_FLAGS", "TF_GPU_ALLOCATOR", "TF_USE_CUDNN_AUTOTUNE", "TF_CPP_MIN_LOG_LEVEL",
      "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "XLA_FLAGS", "JAX_*",
      "TORCH_*", "PYTORCH_*", "CUBLAS_WORKSPACE_CONFIG", "HOROVOD_FUSION_THRESHOLD", "HOROVOD_*",
      // GPU and communication
      "CUDA_VISIBLE_DEVICES", "CUDA_LAUNCH_BLOCKING", "CUDA_DEVICE_ORDER", "CUDA_MODULE_LOADING", "CUDNN_*",
      "NCCL_*", "NVIDIA_TF32_OVERRIDE", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
      // Threads and BLAS
      "OMP_*", "MKL_*", "OPENBLAS_*", "GOTO_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_*", "KMP_*",
      "GOMP_*", "BLIS_NUM_THREADS",
      // The CPU kernels: PyTorch's instruction set (ATEN_CPU_CAPABILITY), oneDNN's (DNNL_MAX_CPU_ISA,
      // ONEDNN_MAX_CPU_ISA); OpenBLAS's and MKL's are above (OPENBLAS_CORETYPE, MKL_ENABLE_INSTRUCTIONS)
      "ATEN_*", "DNNL_*", "ONEDNN_*",
      // Loader and locale
      "LD_PRELOAD", "LD_LIBRARY_PATH", "LC_ALL", "LC_NUMERIC", "LANG", "TZ"};
  return k_list;
}

ojson capture_environment(const World& world, const std::vector<std::string>& extra) {
  auto env = world.environment();
  std::vector<std::string> patterns = default_env_allowlist();
  patterns.insert(patterns.end(), extra.begin(), extra.end());
  std::map<std::string, ojson> out;
  for (const auto& p : patterns) {
    const bool glob = p.find_first_of("*?[") != std::string::npos;
    if (!glob) {
      if (looks_secret(p)) {
        continue;
      }
      auto it = env.find(p);
      out[p] = it == env.end() ? ojson(nullptr) : ojson(it->second);
      continue;
    }
    for (const auto& [name, value] : env) {
      if (::fnmatch(p.c_str(), name.c_str(), 0) == 0 && !looks_secret(name)) {
        out[name] = value;
      }
    }
  }
  ojson j = ojson::object();
  for (auto& [k, v] : out) {
    j[k] = v;
  }
  return j;
}

ojson git_state(const World& world, const std::string& dir) {
  auto top = world.run_command({"git", "rev-parse", "--show-toplevel"}, dir);
  if (!top) {
    return nullptr;
  }
  auto trim = [](std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) {
      s.pop_back();
    }
    return s;
  };
  ojson g;
  auto commit = world.run_command({"git", "rev-parse", "HEAD"}, dir);
  g["commit"] = commit ? ojson(trim(*commit)) : ojson(nullptr);
  auto branch = world.run_command({"git", "rev-parse", "--abbrev-ref", "HEAD"}, dir);
  g["branch"] = branch ? ojson(trim(*branch)) : ojson(nullptr);
  auto status = world.run_command({"git", "status", "--porcelain", "--untracked-files=no"}, dir);
  bool dirty = status && !trim(*status).empty();
  g["dirty"] = dirty;
  if (dirty) {
    auto diff = world.run_command({"git", "diff", "HEAD", "--no-color", "--no-ext-diff"}, dir);
    g["diff_sha256"] = diff ? ojson(sha256_hex(*diff)) : ojson(nullptr);
  } else {
    g["diff_sha256"] = nullptr;
  }
  return g;
}

ojson machine_snapshot(const World& world, const SnapshotOptions& opt) {
  ojson s;
  s["reprun"] = build_info(opt.kernels);
  s["host"] = host_info(world);
  s["gpu"] = gpu_info(world);
  s["env"] = capture_environment(world, opt.env_allow);
  s["code"] = {{"directory", opt.code_dir.empty() ? world.current_directory() : opt.code_dir},
               {"git", git_state(world, opt.code_dir.empty() ? world.current_directory() : opt.code_dir)}};
  return s;
}

} // namespace reprun
