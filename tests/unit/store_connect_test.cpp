// StoreClient when there is no store to talk to: it must give up after its timeout (AXON_TIMEOUT)
// with Bootstrap and an error that names the address, so that a wrong AXON_STORE_ADDR or a rank 0
// that never started is reported rather than waited on.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <string>

#include "bootstrap/store_client.hpp"
#include "expect_error.hpp"
#include "store_support.hpp"

namespace axon {
namespace {

using Clock = std::chrono::steady_clock;

// A TCP socket bound to a free loopback port; listens only when asked. Closes on destruction.
class LoopbackSocket {
 public:
  explicit LoopbackSocket(bool listening, int backlog = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&sa), len) != 0 ||
        (listening && ::listen(fd_, backlog) != 0) ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
      ADD_FAILURE() << "cannot set up a loopback socket";
      return;
    }
    port_ = ntohs(sa.sin_port);
  }
  ~LoopbackSocket() { close(); }
  LoopbackSocket(const LoopbackSocket&) = delete;
  LoopbackSocket& operator=(const LoopbackSocket&) = delete;

  int port() const { return port_; }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A plain client connection, used to occupy a listener's accept queue.
int connectTo(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sa.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

TEST(StoreClientConnect, NothingListeningFailsWithBootstrapAfterTheTimeout) {
  // Bound but not listening: the port stays ours (no other test can take it) and refuses.
  LoopbackSocket refusing(/*listening=*/false);
  const net::HostPort addr{"127.0.0.1", refusing.port()};

  auto start = Clock::now();
  std::string msg = test::errorMessageOf(
      [&] { StoreClient client(addr, "AXON_STORE_ADDR", 3, 0.3, test::jobKey(), test::kKeySource); }, ErrorCode::Bootstrap);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();

  // It retries for the whole timeout (rank 0 may still be starting), and not much longer.
  EXPECT_GE(waited, 0.29);
  EXPECT_LT(waited, 2.0);
  EXPECT_TRUE(test::contains(msg, addr.str()));
  EXPECT_TRUE(test::contains(msg, "AXON_STORE_ADDR"));  // where the address came from
  EXPECT_TRUE(test::contains(msg, "PE 3"));
}

// Exposes a library defect: connectOnce() (store_client.cpp) uses a blocking ::connect(). When SYNs
// go unanswered -- a firewall that drops packets, or as here a listener whose accept queue is full
// -- the kernel retries for about two minutes (tcp_syn_retries), and the constructor overruns its
// timeout by that much instead of giving up after timeoutSec.
TEST(StoreClientConnect, UnansweredConnectIsBoundedByTheTimeout) {
  LoopbackSocket silent(/*listening=*/true, /*backlog=*/0);
  // One connection fills a backlog of 0; the kernel then drops further SYNs on the floor.
  const int filler = connectTo(silent.port());
  ASSERT_GE(filler, 0);
  const net::HostPort addr{"127.0.0.1", silent.port()};

  auto attempt = std::async(std::launch::async, [addr] {
    try {
      StoreClient client(addr, "test", 1, 0.3, test::jobKey(), test::kKeySource);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::Internal;  // a store that does not answer hello cannot get here
  });
  const bool gaveUpInTime = attempt.wait_for(std::chrono::milliseconds(900)) ==
                            std::future_status::ready;
  // Unblock a connect that is still waiting: with the listener gone, the next SYN (the first
  // retransmission comes after one second) is refused.
  silent.close();
  ::close(filler);
  const ErrorCode code = attempt.get();

  EXPECT_TRUE(gaveUpInTime) << "StoreClient with timeoutSec 0.3 was still connecting after 0.9 s";
  EXPECT_EQ(errorCodeName(code), std::string(errorCodeName(ErrorCode::Bootstrap)));
}

}  // namespace
}  // namespace axon
