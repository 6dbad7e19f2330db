// Checkpoint writer and verifying reader; format described in include/reprun/record/checkpoint_file.hpp.
#include "reprun/record/checkpoint_file.hpp"

#include "reprun/core/atomic_file.hpp"
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"

#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>

namespace reprun {

namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {
constexpr char k_magic[8] = {'R', 'E', 'P', 'R', 'U', 'N', 'C', 'K'};
constexpr int k_version = 1;
constexpr size_t k_max_header = 1 << 20;

struct Parsed {
  ojson header;
  size_t payload_offset = 0;
};

Parsed parse_header(const std::string& path, const std::string& bytes) {
  if (bytes.size() < 8 || std::memcmp(bytes.data(), k_magic, 8) != 0) {
    throw Error(path, "not a reprun checkpoint (bad magic)");
  }
  size_t nl = bytes.find('\n', 8);
  if (nl == std::string::npos || nl > k_max_header) {
    throw Error(path, "truncated checkpoint header");
  }
  Parsed p;
  try {
    p.header = ojson::parse(bytes.substr(8, nl - 8));
  } catch (const ojson::exception& e) {
    throw Error(path, "corrupt checkpoint header");
  }
  p.payload_offset = nl + 1;
  const ojson& h = p.header;
  if (!h.is_object() || !h.contains("format") || !h["format"].is_string()) {
    throw Error(path, "checkpoint header has no format");
  }
  std::string fmt_s = h["format"].get<std::string>();
  if (fmt_s.rfind("reprun.checkpoint/", 0) != 0) {
    throw Error(path, "unknown checkpoint format '" + fmt_s + "'");
  }
  int v = std::atoi(fmt_s.c_str() + 18);
  if (v > k_version) {
    throw Error(path, fmt::format("checkpoint format version {} is newer than this reprun reads ({}); "
                                  "upgrade reprun", v, k_version));
  }
  if (v < 1) {
    throw Error(path, "unknown checkpoint format '" + fmt_s + "'");
  }
  for (const char* key : {"step", "payload_bytes"}) {
    if (!h.contains(key) || !h[key].is_number_unsigned()) {
      throw Error(path, fmt::format("checkpoint header: '{}' missing or not a count", key));
    }
  }
  for (const char* key : {"payload_sha256", "config_digest"}) {
    if (!h.contains(key) || !h[key].is_string()) {
      throw Error(path, fmt::format("checkpoint header: '{}' missing", key));
    }
  }
  if (!h.contains("tensors") || !h["tensors"].is_array()) {
    throw Error(path, "checkpoint header: 'tensors' missing");
  }
  return p;
}
} // namespace

void write_checkpoint(const std::string& path, long step, const std::string& config_digest,
                      const std::vector<NamedTensor>& tensors) {
  Sha256 h;
  size_t bytes = 0;
  ojson list = ojson::array();
  for (const auto& t : tensors) {
    h.update(t.data, t.count * sizeof(float));
    bytes += t.count * sizeof(float);
    list.push_back({{"name", t.name}, {"count", t.count}});
  }
  ojson header;
  header["format"] = fmt::format("reprun.checkpoint/{}", k_version);
  header["step"] = step;
  header["config_digest"] = config_digest;
  header["tensors"] = list;
  header["payload_bytes"] = bytes;
  header["payload_sha256"] = h.hex_digest();
  fs::create_directories(fs::path(path).parent_path());
  AtomicFile f(path);
  f.write(std::string_view(k_magic, 8));
  f.write(header.dump() + "\n");
  for (const auto& t : tensors) {
    f.write(std::string_view(reinterpret_cast<const char*>(t.data), t.count * sizeof(float)));
  }
  f.commit();
}

long checkpoint_step(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string head(k_max_header, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return parse_header(path, head).header["step"].get<long>();
}

long read_checkpoint(const std::string& path, const std::string& config_digest,
                     const std::vector<NamedTensor>& tensors) {
  return read_checkpoint_bytes(read_file(path), path, config_digest, tensors);
}

long read_checkpoint_bytes(const std::string& bytes, const std::string& path, const std::string& config_digest,
                           const std::vector<NamedTensor>& tensors) {
  Parsed p = parse_header(path, bytes);
  const ojson& h = p.header;
  size_t payload = h["payload_bytes"].get<size_t>();
  if (p.payload_offset > bytes.size() || bytes.size() - p.payload_offset != payload) {
    throw Error(path, fmt::format("payload is {} bytes, header says {}{}", bytes.size() - p.payload_offset,
                                  payload, bytes.size() - p.payload_offset < payload ? " (truncated)" : ""));
  }
  if (sha256_hex(std::string_view(bytes).substr(p.payload_offset)) != h["payload_sha256"].get<std::string>()) {
    throw Error(path, "payload SHA-256 does not match the header (corrupt checkpoint)");
  }
  if (h["config_digest"].get<std::string>() != config_digest) {
    throw Error(path, "checkpoint belongs to another configuration (config digest differs)");
  }
  const ojson& list = h["tensors"];
  if (list.size() != tensors.size()) {
    throw Error(path, fmt::format("checkpoint has {} tensors, the model needs {}", list.size(), tensors.size()));
  }
  size_t off = p.payload_offset;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const ojson& e = list[i];
    // Each key's type checked before its value is read: a name that is not a string is a mismatch,
    // never nlohmann's type_error out of reprun.
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string() ||
        e["name"].get_ref<const std::string&>() != tensors[i].name || !e.contains("count") ||
        !e["count"].is_number_unsigned() || e["count"].get<size_t>() != tensors[i].count) {
      throw Error(path, fmt::format("tensor {} does not match the model's '{}'", i, tensors[i].name));
    }
    size_t n = tensors[i].count * sizeof(float);
    if (off + n > bytes.size() || off + n < off) {
      throw Error(path, "truncated payload");
    }
    if (n > 0) { // a tensor of no values may have no storage (data == nullptr)
      std::memcpy(tensors[i].data, bytes.data() + off, n);
    }
    off += n;
  }
  return h["step"].get<long>();
}

} // namespace reprun
