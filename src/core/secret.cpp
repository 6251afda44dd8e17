// Keys as hex text and 0600 files; nonces; proofs. See secret.hpp.
#include "core/secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>

#include "axon/error.hpp"

namespace axon {
namespace {

int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

std::string octalMode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

}  // namespace

Secret Secret::generate() {
  Secret s;
  s.bytes_.resize(kGeneratedBytes);
  randomBytes(s.bytes_);
  return s;
}

Secret Secret::fromHex(std::string_view text, const std::string& source) {
  text = trimmed(text);
  // Never echo the text: it may be a real key with a typo.
  if (text.size() % 2 != 0)
    throw Error(ErrorCode::InvalidArgument, source + ": a key is hex digits, an even number of them (got " +
                                                std::to_string(text.size()) + " characters)");
  Secret s;
  s.bytes_.reserve(text.size() / 2);
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int high = hexValue(text[i]), low = hexValue(text[i + 1]);
    if (high < 0 || low < 0)
      throw Error(ErrorCode::InvalidArgument, source + ": a key is hex digits; character " + std::to_string(high < 0 ? i + 1 : i + 2) +
                                                  " is not one");
    s.bytes_.push_back(static_cast<std::uint8_t>(high * 16 + low));
  }
  if (s.bytes_.size() < kMinBytes)
    throw Error(ErrorCode::InvalidArgument, source + ": a key of " + std::to_string(s.bytes_.size()) + " bytes is too short (at least " +
                                                std::to_string(kMinBytes) + " bytes, " + std::to_string(2 * kMinBytes) + " hex digits)");
  return s;
}

Secret Secret::fromFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw SystemError("open key file " + path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw SystemError("stat key file " + path, err);
  }
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    ::close(fd);
    throw Error(ErrorCode::PermissionDenied,
                "key file " + path + " must be a regular file of this user (uid " + std::to_string(::geteuid()) +
                    ") that only its owner may read (mode 0600); it has uid " + std::to_string(st.st_uid) + " and mode " +
                    octalMode(st.st_mode) + (S_ISREG(st.st_mode) ? "" : " and is not a regular file") + ": run chmod 600 " + path);
  }
  std::string text(4096, '\0');
  std::size_t got = 0;
  while (got < text.size()) {
    const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw SystemError("read key file " + path, err);
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (got == text.size()) throw Error(ErrorCode::InvalidArgument, "key file " + path + " is longer than 4 KiB: not a key");
  text.resize(got);
  return fromHex(text, "key file " + path);
}

void Secret::writeFile(const std::string& path) const { writeNewPrivateFile(path, hex() + "\n"); }

void writeNewPrivateFile(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw SystemError("create " + path, errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      throw SystemError("write " + path, err);
    }
    done += static_cast<std::size_t>(n);
  }
  // A umask can only clear bits, never add them; fchmod makes 0600 exact all the same.
  ::fchmod(fd, 0600);
  ::close(fd);
}

void replacePrivateFile(const std::string& path, const std::string& text) {
  const std::string aside = path + ".new." + std::to_string(::getpid());
  ::unlink(aside.c_str());  // ours from an earlier start with this pid, if any
  writeNewPrivateFile(aside, text);
  if (::rename(aside.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(aside.c_str());
    throw SystemError("put " + path + " in place", err);
  }
}

std::string Secret::hex() const {
  static const char* kDigits = "0123456789abcdef";
  std::string text;
  text.reserve(2 * bytes_.size());
  for (std::uint8_t b : bytes_) {
    text.push_back(kDigits[b >> 4]);
    text.push_back(kDigits[b & 15]);
  }
  return text;
}

Nonce makeNonce() {
  Nonce n{};
  randomBytes(n);
  return n;
}

Digest proveKey(const Secret& key, std::string_view label, std::span<const std::uint8_t> transcript) {
  if (key.empty()) throw Error(ErrorCode::Internal, "proveKey without a key");
  std::vector<std::uint8_t> message;
  message.reserve(label.size() + 1 + transcript.size());
  appendTranscript(message, label);
  message.push_back(0);  // the label ends here, whatever the transcript starts with
  appendTranscript(message, transcript);
  return hmacSha256(key.bytes(), message);
}

void appendTranscript(std::vector<std::uint8_t>& transcript, std::span<const std::uint8_t> bytes) {
  transcript.insert(transcript.end(), bytes.begin(), bytes.end());
}

void appendTranscript(std::vector<std::uint8_t>& transcript, std::string_view text) {
  transcript.insert(transcript.end(), text.begin(), text.end());
}

}  // namespace axon
