// The outside world as reprun sees it: environment variables, the clock, files of /proc and /etc,
// uname, the GPU. Everything that goes into a manifest from outside the config and the data is
// read through this interface, so tests can substitute a fake one and get byte-stable manifests.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace reprun {

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
};

// The real machine.
const World& real_world();

} // namespace reprun
