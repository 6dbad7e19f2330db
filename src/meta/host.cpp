// Host and GPU facts from the World. No GPU is a normal answer ({"count": 0}), never an error.
#include "reprun/meta/host.hpp"

#include "reprun/meta/world.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

namespace reprun {

using ojson = nlohmann::ordered_json;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.pop_back();
  }
  size_t b = s.find_first_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b);
}

std::string field(const std::string& text, const std::string& key, char sep) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto p = line.find(sep);
    if (p != std::string::npos && trim(line.substr(0, p)) == key) {
      std::string v = trim(line.substr(p + 1));
      if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
        v = v.substr(1, v.size() - 2);
      }
      return v;
    }
  }
  return "";
}

} // namespace

ojson host_info(const World& world) {
  ojson h;
  auto os = world.read_system_file("/etc/os-release");
  h["os"] = os ? field(*os, "PRETTY_NAME", '=') : "unknown";
  auto u = world.uname();
  h["kernel"] = u["sysname"] + " " + u["release"];
  h["arch"] = u["machine"];
  h["hostname"] = u["nodename"];
  h["libc"] = world.libc_version();
  auto cpu = world.read_system_file("/proc/cpuinfo");
  std::string model = cpu ? field(*cpu, "model name", ':') : "";
  h["cpu_model"] = model.empty() ? "unknown" : model;
  ojson isa = ojson::array();
  if (cpu) {
    std::string flags = " " + field(*cpu, "flags", ':') + " ";
    for (const char* f : {"sse2", "sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw",
                          "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile"}) {
      if (flags.find(std::string(" ") + f + " ") != std::string::npos) {
        isa.push_back(f);
      }
    }
  }
  h["isa"] = isa;
  h["logical_cores"] = world.logical_cores();
  auto mem = world.read_system_file("/proc/meminfo");
  std::string total = mem ? field(*mem, "MemTotal", ':') : "";
  h["memory"] = total.empty() ? "unknown" : total;
  return h;
}

namespace {

// Why no device is listed, in words: "no GPU ..." whenever the machine has none, the runtime's own
// error only when it means something else.
std::string no_gpu_note(const CudaFacts& c, const std::string& driver, const ojson& runtime, const ojson& driver_api) {
  using S = CudaFacts::Status;
  const auto text = [](const ojson& v) { return v.is_string() ? v.get<std::string>() : std::string("?"); };
  const bool has_driver = !driver.empty() || c.driver_version > 0;
  const std::string loaded = driver.empty() ? "the NVIDIA driver" : "NVIDIA driver " + driver;
  switch (c.status) {
  case S::ok:
    return has_driver ? "no GPU (" + loaded + " is loaded but finds no device)" : "no GPU";
  case S::not_built:
    return has_driver ? "devices not listed: reprun was built without the CUDA Toolkit (" + loaded + " is loaded)"
                      : "no GPU (no NVIDIA driver)";
  case S::no_driver:
    return has_driver ? loaded + " is loaded, but its CUDA library (libcuda) cannot be used: " + c.error
                      : "no GPU (no NVIDIA driver)";
  case S::no_device:
    return has_driver ? "no GPU (" + loaded + " is loaded but finds no device)" : "no GPU";
  case S::driver_too_old:
    return loaded + " (CUDA " + text(driver_api) + ") is older than reprun's CUDA runtime " + text(runtime) +
           ": devices not listed; update the driver";
  case S::other:
    break;
  }
  return "devices not listed: CUDA error: " + c.error;
}

} // namespace

ojson gpu_info(const World& world) {
  ojson g;
  // Driver version from the kernel module, readable without any CUDA library.
  auto v = world.read_system_file("/proc/driver/nvidia/version");
  std::string driver;
  if (v) {
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  ..." -> the version token.
    std::istringstream in(v->substr(0, v->find('\n')));
    std::string tok;
    while (in >> tok) {
      if (std::isdigit(static_cast<unsigned char>(tok[0])) && tok.find('.') != std::string::npos) {
        driver = tok;
        break;
      }
    }
  }
  g["driver"] = driver.empty() ? ojson(nullptr) : ojson(driver);
  CudaFacts c = world.cuda();
  auto version = [](int v) { return v > 0 ? ojson(std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10)) : ojson(nullptr); };
  g["cuda_runtime"] = c.built_with_cuda ? version(c.runtime_version) : ojson(nullptr);
  g["cuda_driver_api"] = version(c.driver_version);
  g["count"] = c.devices.size();
  ojson devices = ojson::array();
  for (const auto& d : c.devices) {
    devices.push_back({{"name", d.name},
                       {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                       {"sm_count", d.sm_count},
                       {"memory_bytes", d.memory_bytes}});
  }
  g["devices"] = devices;
  if (c.devices.empty()) {
    g["note"] = no_gpu_note(c, driver, g["cuda_runtime"], g["cuda_driver_api"]);
  }
  return g;
}

} // namespace reprun
