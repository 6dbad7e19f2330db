// Hashing: SHA-256 (OpenSSL EVP) for content fingerprints and checkpoints, XXH3-64 for the fast
// per-step checksums. Only src/core/sha256.cpp includes OpenSSL; XXH3 is compiled three times from
// its header (generic, AVX2, AVX-512) and chosen at run time; all give the same digest.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

struct evp_md_ctx_st; // EVP_MD_CTX, kept out of this header.

namespace reprun {

class Sha256 {
public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t size);
  void update(std::string_view s) { update(s.data(), s.size()); }
  // Tagged field: "tag" NUL length-prefixed value, so fields cannot run into each other.
  void update_field(std::string_view tag, std::string_view value);
  std::string hex_digest(); // finalizes; the object must not be updated afterwards

private:
  struct Deleter {
    void operator()(evp_md_ctx_st* ctx) const;
  };
  std::unique_ptr<evp_md_ctx_st, Deleter> m_ctx;
};

std::string sha256_hex(std::string_view data);
// SHA-256 of a file's content, streamed; throws Error naming the file.
std::string sha256_file(const std::string& path, uint64_t* size_out = nullptr);
// SHA-256 of what remains to read from an open descriptor, through `buf`; throws Error naming
// `path`.
std::string sha256_fd(int fd, const std::string& path, std::vector<char>& buf, uint64_t* size_out = nullptr);

// XXH3-64 one-shot and streaming.
uint64_t xxh3_64(const void* data, size_t size);
std::string hex64(uint64_t v);

class Xxh3Stream {
public:
  Xxh3Stream();
  ~Xxh3Stream();
  Xxh3Stream(const Xxh3Stream&) = delete;
  Xxh3Stream& operator=(const Xxh3Stream&) = delete;
  void reset();
  void update(const void* data, size_t size);
  uint64_t digest() const;

private:
  void* m_state; // XXH3_state_t
};

// Which XXH3 implementation runs here ("avx512", "avx2" or "sse2").
const char* xxh3_impl();

} // namespace reprun
