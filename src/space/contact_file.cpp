// A staging server's contact file (contact_file.hpp).
#include "space/contact_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>

#include "axon/error.hpp"
#include "core/secret.hpp"

namespace axon::space {

namespace {

// The value of "key" in the flat JSON object a server writes (strings and integers only).
std::string field(const std::string& text, const std::string& key) {
  const auto at = text.find("\"" + key + "\"");
  if (at == std::string::npos) return "";
  auto p = text.find(':', at);
  if (p == std::string::npos) return "";
  ++p;
  while (p < text.size() && (text[p] == ' ' || text[p] == '"')) ++p;
  auto e = p;
  while (e < text.size() && text[e] != '"' && text[e] != ',' && text[e] != '}' && text[e] != '\n') ++e;
  return text.substr(p, e - p);
}

std::string contactText(const std::string& address, std::uint64_t epoch, int servers, const std::string& keyHex) {
  return "{\"address\": \"" + address + "\", \"epoch\": " + std::to_string(epoch) + ", \"pid\": " +
         std::to_string(::getpid()) + ", \"servers\": " + std::to_string(servers) + ", \"key\": \"" + keyHex +
         "\"}\n";
}

// The file's bytes (at most 64 KiB) and its stat; nullopt when it cannot be opened.
std::optional<std::string> readSmallFile(const std::string& path, struct stat& st) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  st = {};
  std::string text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < (1 << 16)) {
    text.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < text.size()) {
      const ssize_t n = ::read(fd, text.data() + got, text.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    text.resize(got);
  }
  ::close(fd);
  return text;
}

// What a contact file (perhaps another server's, perhaps not one at all) names, in words.
std::string describeContact(const std::string& text) {
  const std::string address = field(text, "address"), pid = field(text, "pid");
  if (address.empty()) return "no server address";
  return "server " + address + (pid.empty() ? "" : " (pid " + pid + ")");
}

}  // namespace

void writeContactFile(const std::string& path, const std::string& address, std::uint64_t epoch, int servers,
                      const std::string& keyHex) {
  try {
    replacePrivateFile(path, contactText(address, epoch, servers, keyHex));
  } catch (const SystemError& e) {
    throw SystemError("cannot write the contact file " + path, e.sysErrno());
  }
}

ContactInfo readContactFile(const std::string& path) {
  struct stat st {};
  const std::optional<std::string> read = readSmallFile(path, st);
  if (!read) {
    throw Error(ErrorCode::ServerUnreachable, "staging-space contact file " + path +
                                                  " cannot be read (no server running, or the wrong path?)");
  }
  const std::string& text = *read;
  ContactInfo info;
  info.address = field(text, "address");
  const std::string epoch = field(text, "epoch");
  if (info.address.empty() || epoch.empty() || epoch.find_first_not_of("0123456789") != std::string::npos) {
    throw Error(ErrorCode::InvalidArgument, "staging-space contact file " + path + " is not one a server wrote (it names no address and epoch)");
  }
  info.epoch = std::stoull(epoch);
  info.key = field(text, "key");
  if (!info.key.empty() && (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(ErrorCode::PermissionDenied,
                "staging-space contact file " + path + " holds the space's key, but it has mode " + mode + " and uid " +
                    std::to_string(st.st_uid) + " (this user is " + std::to_string(::geteuid()) +
                    "): only its owner may read it (the server creates it with mode 0600; run chmod 600 " + path +
                    " if it was copied, and consider the key known to others)");
  }
  return info;
}

ContactFileClaim::ContactFileClaim(std::string path) : path_(std::move(path)) {
  const std::string lockPath = lockPathOf(path_);
  // The lock file may be unlinked by the server that held it, between our open and our flock:
  // then we hold a lock on a file nobody else sees. Locked, we check that the name is still ours.
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(lockPath.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) throw SystemError("cannot lock the contact file " + path_ + " (lock file " + lockPath + ")", errno);
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      ::close(fd);
      if (err != EWOULDBLOCK) {
        throw SystemError("cannot lock the contact file " + path_ + " (lock file " + lockPath + ")", err);
      }
      struct stat st {};
      const std::optional<std::string> text = readSmallFile(path_, st);
      throw Error(ErrorCode::InvalidArgument,
                  "the contact file " + path_ + " belongs to a live staging server (" +
                      (text ? describeContact(*text) : std::string("its file is being written")) +
                      ", which holds " + lockPath + "): give this server another --contact-file, or stop that one "
                      "first; the file was left as it is");
    }
    struct stat mine {}, named {};
    if (::fstat(fd, &mine) == 0 && ::stat(lockPath.c_str(), &named) == 0 && mine.st_dev == named.st_dev &&
        mine.st_ino == named.st_ino) {
      lockFd_ = fd;
      break;
    }
    ::close(fd);
    if (attempt >= 100) {
      throw Error(ErrorCode::System, "cannot lock the contact file " + path_ + ": its lock file " + lockPath +
                                         " keeps being replaced");
    }
  }
  struct stat st {};
  if (const std::optional<std::string> text = readSmallFile(path_, st)) stale_ = describeContact(*text);
}

void ContactFileClaim::write(const std::string& address, std::uint64_t epoch, int servers, const std::string& keyHex) {
  const std::string text = contactText(address, epoch, servers, keyHex);
  writeContactFile(path_, address, epoch, servers, keyHex);
  struct stat st {};
  if (::stat(path_.c_str(), &st) == 0) {
    dev_ = st.st_dev;
    ino_ = st.st_ino;
    written_ = text;
  }
}

ContactFileClaim::~ContactFileClaim() {
  if (!written_.empty()) {
    // Still ours? Someone may have replaced it by hand (or an older axon without the lock).
    struct stat st {};
    const std::optional<std::string> text = readSmallFile(path_, st);
    if (text && *text == written_ && st.st_dev == dev_ && st.st_ino == ino_) ::unlink(path_.c_str());
  }
  if (lockFd_ >= 0) {
    // Unlinked while still locked: a server that opened it meanwhile sees the name gone and retries.
    ::unlink(lockPathOf(path_).c_str());
    ::close(lockFd_);
  }
}

}  // namespace axon::space
