// HMAC-SHA-256 through libcrypto loaded at run time; random bytes from getrandom(2).
#include "core/hmac.hpp"

#include <dlfcn.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <string>

#include "axon/error.hpp"

namespace axon {
namespace {

// The two entry points used; both exist with these signatures in OpenSSL 1.1 and 3.x.
using EvpSha256Fn = const void* (*)();
using HmacFn = unsigned char* (*)(const void* md, const void* key, int keyLen,
                                  const unsigned char* data, std::size_t dataLen,
                                  unsigned char* out, unsigned int* outLen);

struct Libcrypto {
  EvpSha256Fn sha256 = nullptr;
  HmacFn hmac = nullptr;
  std::string whyNot;
};

const Libcrypto& libcrypto() {
  static const Libcrypto lib = [] {
    Libcrypto l;
    void* handle = nullptr;
    for (const char* name : {"libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so"}) {
      handle = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle) break;
    }
    if (!handle) {
      l.whyNot = "libcrypto (OpenSSL 3 or 1.1) could not be loaded: install the system's OpenSSL "
                 "library (package libssl3 or openssl-libs)";
      return l;
    }
    l.sha256 = reinterpret_cast<EvpSha256Fn>(::dlsym(handle, "EVP_sha256"));
    l.hmac = reinterpret_cast<HmacFn>(::dlsym(handle, "HMAC"));
    if (!l.sha256 || !l.hmac) l.whyNot = "the loaded libcrypto has no EVP_sha256/HMAC";
    return l;
  }();
  return lib;
}

}  // namespace

Digest hmacSha256(std::span<const std::uint8_t> key, std::span<const std::uint8_t> message) {
  const Libcrypto& lib = libcrypto();
  if (!lib.whyNot.empty()) throw Error(ErrorCode::Unsupported, "job keys need HMAC-SHA-256: " + lib.whyNot);
  if (key.size() > 1024) throw Error(ErrorCode::InvalidArgument, "HMAC key of " + std::to_string(key.size()) + " bytes (at most 1024)");
  Digest out{};
  unsigned int length = 0;
  // HMAC with a null key pointer and length 0 is valid in OpenSSL; pass a real pointer anyway.
  static const std::uint8_t kEmpty = 0;
  const unsigned char* result = lib.hmac(lib.sha256(), key.empty() ? &kEmpty : key.data(),
                                         static_cast<int>(key.size()),
                                         message.empty() ? &kEmpty : message.data(), message.size(),
                                         out.data(), &length);
  if (!result || length != out.size())
    throw Error(ErrorCode::Internal, "libcrypto's HMAC failed (digest length " + std::to_string(length) + ")");
  return out;
}

void randomBytes(std::span<std::uint8_t> out) {
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::getrandom(out.data() + done, out.size() - done, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw Error(ErrorCode::Internal, std::string("getrandom failed: ") + std::strerror(errno));
    }
    done += static_cast<std::size_t>(got);
  }
}

bool equalInConstantTime(std::span<const std::uint8_t> a, std::span<const std::uint8_t> b) {
  if (a.size() != b.size()) return false;
  std::uint8_t difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i) difference |= static_cast<std::uint8_t>(a[i] ^ b[i]);
  return difference == 0;
}

}  // namespace axon
