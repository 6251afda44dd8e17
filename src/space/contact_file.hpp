// A staging server's contact file: {"address": ..., "epoch": ..., "pid": ..., "servers": ...,
// "key": ...}, how clients on a shared file system find the space and prove its key. It holds the
// key, so it is created with mode 0600 (written to a temporary file of that mode, then renamed
// into place: a reader sees the old file or the whole new one), and a client refuses one that
// others may read.
//
// One file, one server: a server claims the path for its life with an flock on PATH.lock beside
// it (the file itself is replaced by rename, so it cannot carry the lock). A second server given
// the same path while the first lives is refused, and never touches the file; a file whose lock
// is free is stale (its server died) and is replaced, with a note. At exit the server removes the
// file only if it is still the one it wrote (same inode, same bytes), then the lock file.
#pragma once

#include <sys/types.h>

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
// Throws ServerUnreachable when the file cannot be read (no server there), InvalidArgument when
// no server wrote it, PermissionDenied when another user owns it or others may read it.
ContactInfo readContactFile(const std::string& path);

// A server's claim on its contact file, from before it listens until it ends.
class ContactFileClaim {
 public:
  // Takes the lock. Throws InvalidArgument naming the path and the live server's address (and
  // pid) when another server holds it, SystemError when the lock file cannot be made.
  explicit ContactFileClaim(std::string path);
  // Removes the file if it is still the one write() put there, then the lock file; unlocks.
  ~ContactFileClaim();
  ContactFileClaim(const ContactFileClaim&) = delete;
  ContactFileClaim& operator=(const ContactFileClaim&) = delete;

  void write(const std::string& address, std::uint64_t epoch, int servers, const std::string& keyHex);
  // Non-empty when a stale file (its server gone) was found at the path: what it named.
  const std::string& stale() const { return stale_; }
  const std::string& path() const { return path_; }
  static std::string lockPathOf(const std::string& path) { return path + ".lock"; }

 private:
  std::string path_;
  int lockFd_ = -1;
  std::string stale_;
  std::string written_;  // the bytes write() put there
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace axon::space
