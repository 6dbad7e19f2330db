// SHA-256 through OpenSSL's EVP interface. The only file that includes OpenSSL.
#include "reprun/core/error.hpp"
#include "reprun/core/hash.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <unistd.h>
#include <vector>

namespace reprun {

void Sha256::Deleter::operator()(evp_md_ctx_st* ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : m_ctx(EVP_MD_CTX_new()) {
  if (!m_ctx || EVP_DigestInit_ex(m_ctx.get(), EVP_sha256(), nullptr) != 1) {
    throw Error("OpenSSL: cannot initialise SHA-256");
  }
}
Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

void Sha256::update(const void* data, size_t size) {
  if (size > 0) {
    EVP_DigestUpdate(m_ctx.get(), data, size);
  }
}

void Sha256::update_field(std::string_view tag, std::string_view value) {
  // tag NUL length ':' value, in one update when it is short (a listing hashes one field per name,
  // and each update of OpenSSL's costs more than its bytes).
  char digits[24];
  const size_t dn = static_cast<size_t>(std::to_chars(digits, digits + sizeof digits, value.size()).ptr - digits);
  std::array<char, 256> buf;
  const size_t head = tag.size() + 1 + dn + 1;
  if (head + value.size() > buf.size()) {
    update(tag);
    update("\0", 1);
    update(digits, dn);
    update(":", 1);
    update(value);
    return;
  }
  // std::copy, not memcpy: an empty view's data() may be null.
  auto out = std::copy(tag.begin(), tag.end(), buf.begin());
  *out++ = '\0';
  out = std::copy(digits, digits + dn, out);
  *out++ = ':';
  out = std::copy(value.begin(), value.end(), out);
  update(buf.data(), static_cast<size_t>(out - buf.begin()));
}

std::string Sha256::hex_digest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(m_ctx.get(), md, &len);
  static const char* k_hex = "0123456789abcdef";
  std::string out;
  out.reserve(len * 2);
  for (unsigned i = 0; i < len; ++i) {
    out.push_back(k_hex[md[i] >> 4]);
    out.push_back(k_hex[md[i] & 15]);
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  Sha256 h;
  h.update(data);
  return h.hex_digest();
}

std::string sha256_fd(int fd, const std::string& path, std::vector<char>& buf, uint64_t* size_out) {
  Sha256 h;
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) {
        continue;
      }
      throw Error(path, std::string("read failed: ") + std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    h.update(buf.data(), static_cast<size_t>(n));
    total += static_cast<uint64_t>(n);
  }
  if (size_out) {
    *size_out = total;
  }
  return h.hex_digest();
}

std::string sha256_file(const std::string& path, uint64_t* size_out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(path, std::string("cannot open: ") + std::strerror(errno));
  }
  std::vector<char> buf(1 << 20);
  try {
    std::string digest = sha256_fd(fd, path, buf, size_out);
    ::close(fd);
    return digest;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

} // namespace reprun

namespace reprun {
std::string openssl_version() { return OpenSSL_version(OPENSSL_VERSION); }
} // namespace reprun
