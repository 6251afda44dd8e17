// A staging server's contact file (contact_file.hpp).
#include "space/contact_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

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

}  // namespace

void writeContactFile(const std::string& path, const std::string& address, std::uint64_t epoch, int servers,
                      const std::string& keyHex) {
  try {
    replacePrivateFile(path, "{\"address\": \"" + address + "\", \"epoch\": " + std::to_string(epoch) +
                                 ", \"pid\": " + std::to_string(::getpid()) + ", \"servers\": " +
                                 std::to_string(servers) + ", \"key\": \"" + keyHex + "\"}\n");
  } catch (const SystemError& e) {
    throw SystemError("cannot write the contact file " + path, e.sysErrno());
  }
}

ContactInfo readContactFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw Error(ErrorCode::ServerLost, "staging-space contact file " + path +
                                           " cannot be read (no server running, or the wrong path?)");
  }
  struct stat st {};
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

}  // namespace axon::space
