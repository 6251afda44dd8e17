// Mappings of peers' buffers that could not be closed, gathered so that a teardown says one line
// per peer, not one per buffer (gpu/ipc_buffers.cpp closes up to kMaxOpen of them at once).
//
// Why: a survivor of a dead peer used to print "cuIpcCloseMemHandle of PE k's buffer failed:
// CUDA error 4" once per mapping, dozens of times. Error 4 is CUDA_ERROR_DEINITIALIZED: the
// process is exiting and the CUDA driver shut down before axon's runtime was destroyed (the
// program never finalized, as after a PeerDeadError, so the runtime went with the process's
// static objects). The driver has then released every mapping of the process itself: there is
// nothing left to close and nothing to warn about. Any other failure is a real one and is still
// reported, once per peer, with the count and the driver's words.
//
// Plain C++ (no CUDA types): tested on the host (tests/unit/close_failures_test.cpp).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace axon::gpu {

class CloseFailures {
 public:
  // CUDA_ERROR_DEINITIALIZED; ipc_buffers.cpp checks that cuda.h agrees.
  static constexpr int kDriverShutDown = 4;

  // The result of closing one mapping of PE `pe`'s buffer: `code` is the CUresult, `text` the
  // driver's words for it. A success, or the driver's shutdown, is not a failure.
  void add(int pe, int code, const std::string& text) {
    if (code == 0) return;
    if (code == kDriverShutDown) {
      driverShutDown_ = true;
      return;
    }
    Peer& p = byPe_[pe];
    ++p.count;
    if (p.text.empty()) p.text = text;  // the first failure's words stand for the peer's
    else if (p.text != text) p.mixed = true;
  }

  // True once a close found the driver shut down: every later close would fail the same way, so
  // the caller stops closing.
  bool driverShutDown() const { return driverShutDown_; }

  // One line per peer that had failures, in PE order, e.g. "3 mappings of PE 2's buffers could not
  // be closed: CUDA_ERROR_INVALID_VALUE (invalid argument)".
  std::vector<std::string> lines() const {
    std::vector<std::string> out;
    for (const auto& [pe, p] : byPe_) {
      std::string line = std::to_string(p.count) + (p.count == 1 ? " mapping" : " mappings") + " of PE " +
                         std::to_string(pe) + "'s buffers could not be closed: " + p.text;
      if (p.mixed) line += " (and other errors)";
      out.push_back(std::move(line));
    }
    return out;
  }

 private:
  struct Peer {
    std::size_t count = 0;
    std::string text;
    bool mixed = false;
  };
  std::map<int, Peer> byPe_;
  bool driverShutDown_ = false;
};

}  // namespace axon::gpu
