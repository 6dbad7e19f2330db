// What a path a program opened is, by its text: see input_paths.hpp.
#include "meta/input_paths.hpp"

#include "reprun/meta/inputs.hpp"

#include <algorithm>
#include <fcntl.h>
#include <filesystem>
#include <iterator>
#include <unistd.h>

namespace reprun {

namespace fs = std::filesystem;

namespace {

constexpr const char* k_code_ext[] = {".py", ".sh", ".bash", ".pl", ".rb", ".js", ".lua", ".R", ".jl"};
constexpr const char* k_config_ext[] = {".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf"};

} // namespace

bool is_code_name(std::string_view p) {
  return std::any_of(std::begin(k_code_ext), std::end(k_code_ext), [&](const char* e) { return p.ends_with(e); });
}

bool is_config_name(std::string_view p) {
  return std::any_of(std::begin(k_config_ext), std::end(k_config_ext), [&](const char* e) { return p.ends_with(e); });
}

// ".../pkg/__pycache__/mod.cpython-311.pyc" -> ".../pkg/mod.py"; "" for another name.
std::string source_of_pyc(const std::string& p) {
  if (!p.ends_with(".pyc")) {
    return "";
  }
  if (p[0] == '/' && p.find("//") == std::string::npos) {
    // An absolute path without repeated separators (the logs' own form): by its text, as
    // std::filesystem does below (its parse of every path cost more than the rest of the lookup).
    const std::string_view v(p);
    const size_t slash = v.rfind('/');
    std::string_view dir = v.substr(0, slash); // "" for "/x.pyc"
    const std::string_view name = v.substr(slash + 1);
    const std::string_view stem = name.substr(0, name.find('.'));
    if (const size_t up = dir.rfind('/'); up != std::string_view::npos && dir.substr(up + 1) == "__pycache__") {
      dir = dir.substr(0, up);
    }
    std::string out;
    out.reserve(dir.size() + stem.size() + 4);
    out.append(dir).append("/").append(stem).append(".py");
    return out;
  }
  const fs::path path(p);
  const fs::path dir = path.parent_path();
  std::string stem = path.filename().string();
  stem = stem.substr(0, stem.find('.'));
  return ((dir.filename() == "__pycache__" ? dir.parent_path() : dir) / (stem + ".py")).string();
}

bool hidden_component(std::string_view p) {
  for (size_t at = p.find("/."); at != std::string::npos; at = p.find("/.", at + 1)) {
    if (at + 2 < p.size() && p[at + 2] != '/' && !(p[at + 2] == '.' && (at + 3 == p.size() || p[at + 3] == '/'))) {
      return true;
    }
  }
  return false;
}

// A hidden folder in the part of `path` below the folder it shares with `cwd` (../.cache/x from
// proj/src: .cache; a project that itself lies in a hidden folder is not one).
bool hidden_beside(std::string_view path, std::string_view cwd) {
  size_t common = 0; // the length of the shared folder's path
  for (size_t i = 0; i < path.size() && i < cwd.size() && path[i] == cwd[i]; ++i) {
    if (path[i] == '/') {
      common = i;
    }
  }
  if (cwd.size() <= path.size() && path.substr(0, cwd.size()) == cwd && (path.size() == cwd.size() || path[cwd.size()] == '/')) {
    common = cwd.size();
  }
  return hidden_component(path.substr(common));
}

bool system_path(std::string_view p) {
  static const char* k_system[] = {"/proc", "/sys", "/dev", "/etc", "/run", "/usr", "/lib", "/lib32", "/lib64", "/bin",
                                   "/sbin", "/var", "/tmp", "/snap", "/boot", "/opt/conda"};
  return std::any_of(std::begin(k_system), std::end(k_system), [&](const char* d) { return path_under(p, d); });
}

// The system's own folders, which a program's argument never names as data (a temporary or a /var
// folder may hold a data set).
bool system_own_path(std::string_view p) {
  return system_path(p) && !path_under(p, "/tmp") && !path_under(p, "/var") && !path_under(p, "/dev/shm");
}

// The kernel's and the devices' files (/proc, /sys, /dev): their times and sizes say nothing of data.
// Not /dev/shm, a file system of plain files where a data set may be put to be read fast.
bool kernel_path(std::string_view p) {
  if (p.size() < 4 || p[0] != '/' || (p[1] != 'p' && p[1] != 's' && p[1] != 'd')) {
    return false; // most paths, at two bytes' cost
  }
  return path_under(p, "/proc") || path_under(p, "/sys") || (path_under(p, "/dev") && !path_under(p, "/dev/shm"));
}

// A program that reads only the system's own state: ldconfig -p lists the library cache.
bool system_probe(const std::string& exe) {
  const std::string name = fs::path(exe).filename().string();
  return system_path(exe) && (name == "ldconfig" || name == "ldconfig.real");
}

// `p` made relative to `cwd` when under it, in place; the working directory itself is "." (a
// program that lists it: the same key in every checkout).
void make_relative(std::string& p, const std::string& cwd) {
  if (cwd.empty() || !path_under(p, cwd)) {
    return;
  }
  if (p.size() <= cwd.size() || (cwd.back() == '/' && p.size() == cwd.size())) {
    p.assign(1, '.'); // (not p = ".": GCC 12 warns of an overlap that cannot be)
  } else {
    p.erase(0, cwd.back() == '/' ? cwd.size() : cwd.size() + 1);
  }
}

// A script: its first bytes are "#!" (a program run by its interpreter, whatever its name).
bool is_script(const std::string& path) {
  char head[2] = {0, 0};
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    return false;
  }
  const bool script = ::read(fd, head, 2) == 2 && head[0] == '#' && head[1] == '!';
  ::close(fd);
  return script;
}

} // namespace reprun
