// The outside world as reprun sees it: environment variables, the clock, files of /proc and /etc,
// uname, the GPU. Everything that goes into a manifest from outside the config and the data is
// read through this interface, so tests can substitute a fake one and get byte-stable manifests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace reprun {

struct GpuDevice {
  std::string name;
  int cc_major = 0;
  int cc_minor = 0;
  int sm_count = 0;
  unsigned long long memory_bytes = 0;
};

// What the CUDA runtime says (only when reprun was built with the CUDA Toolkit).
struct CudaFacts {
  bool built_with_cuda = false;
  int runtime_version = 0; // e.g. 13000
  int driver_version = 0;  // CUDA driver API version, 0 without a driver
  std::string error;       // why no device could be listed ("" when fine): the runtime's own words
  // What that error means, so that a machine without a GPU says "no GPU" (host.cpp), not the
  // runtime's "CUDA driver version is insufficient for CUDA runtime version".
  enum class Status {
    ok,             // devices listed (maybe none)
    not_built,      // reprun was built without the CUDA Toolkit
    no_driver,      // no usable driver: cudaErrorInsufficientDriver without a driver version
    no_device,      // cudaErrorNoDevice
    driver_too_old, // cudaErrorInsufficientDriver with a driver older than the runtime
    other,          // any other error (in `error`)
  } status = Status::not_built;
  std::vector<GpuDevice> devices;
};

class World {
public:
  virtual ~World() = default;
  // All environment variables, name -> value.
  virtual std::map<std::string, std::string> environment() const = 0;
  // Contents of a small system file (/proc/cpuinfo, /etc/os-release, ...); nullopt if unreadable.
  virtual std::optional<std::string> read_system_file(const std::string& path) const = 0;
  // uname fields: sysname, release, machine, nodename.
  virtual std::map<std::string, std::string> uname() const = 0;
  virtual std::string libc_version() const = 0;
  virtual unsigned logical_cores() const = 0;
  virtual std::string now_iso8601() const = 0;
  // Output of a command run without a shell (git, python --version), nullopt when it fails.
  virtual std::optional<std::string> run_command(const std::vector<std::string>& argv,
                                                 const std::string& cwd) const = 0;
  virtual std::string current_directory() const = 0;
  virtual CudaFacts cuda() const = 0;
};

// The real machine.
const World& real_world();

// `base`, except that the environment is `env` (what a child process of reprun will see).
class EnvironmentWorld : public World {
public:
  EnvironmentWorld(const World& base, std::map<std::string, std::string> env) : m_base(base), m_env(std::move(env)) {}
  std::map<std::string, std::string> environment() const override { return m_env; }
  std::optional<std::string> read_system_file(const std::string& p) const override {
    return m_base.read_system_file(p);
  }
  std::map<std::string, std::string> uname() const override { return m_base.uname(); }
  std::string libc_version() const override { return m_base.libc_version(); }
  unsigned logical_cores() const override { return m_base.logical_cores(); }
  std::string now_iso8601() const override { return m_base.now_iso8601(); }
  std::optional<std::string> run_command(const std::vector<std::string>& argv, const std::string& cwd) const override {
    return m_base.run_command(argv, cwd);
  }
  std::string current_directory() const override { return m_base.current_directory(); }
  CudaFacts cuda() const override { return m_base.cuda(); }

private:
  const World& m_base;
  std::map<std::string, std::string> m_env;
};

} // namespace reprun
