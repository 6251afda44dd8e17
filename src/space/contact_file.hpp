// A staging server's contact file: {"address": ..., "epoch": ..., "pid": ..., "servers": ...,
// "key": ...}, how clients on a shared file system find the space and prove its key. It holds the
// key, so it is created with mode 0600 (written to a temporary file of that mode, then renamed
// into place: a reader sees the old file or the whole new one), and a client refuses one that
// others may read.
#pragma once

#include <cstdint>
#include <string>

namespace axon::space {

struct ContactInfo {
  std::string address;
  std::uint64_t epoch = 0;
  std::string key;  // hex; empty in a file of an older axon
};

// Throws SystemError naming the path when it cannot be written.
void writeContactFile(const std::string& path, const std::string& address, std::uint64_t epoch, int servers,
                      const std::string& keyHex);
// Throws ServerLost when the file cannot be read (no server there), InvalidArgument when no server
// wrote it, PermissionDenied when another user owns it or others may read it.
ContactInfo readContactFile(const std::string& path);

}  // namespace axon::space
