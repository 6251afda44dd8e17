// FdChannel: file descriptors pass between processes over Unix datagram sockets, with bounded
// waits. The GPU heap sends its memory handles this way; here plain files stand in for them.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "core/fd_channel.hpp"
#include "expect_error.hpp"

namespace axon {
namespace {

// A memfd holding `text`.
UniqueFd fileWith(const std::string& text) {
  UniqueFd fd(::memfd_create("axon-fd-test", MFD_CLOEXEC));
  EXPECT_TRUE(fd);
  EXPECT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  return fd;
}

std::string contentsOf(int fd) {
  char buf[256] = {0};
  ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(FdChannel, AddressesAreUniqueAndPrintable) {
  FdChannel a, b;
  EXPECT_FALSE(a.address().empty());
  EXPECT_NE(a.address(), b.address());
  for (char c : a.address()) EXPECT_TRUE(std::isprint(static_cast<unsigned char>(c))) << int(c);
}

TEST(FdChannel, PassesAFileAndItsHeaderToAnotherProcess) {
  FdChannel parent;
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // The child sends a file it made; the descriptor number means nothing to the parent.
    FdChannel mine;
    UniqueFd f = fileWith("chunk 7 of PE 3");
    try {
      mine.send(parent.address(), "header-7", f.get(), 5.0);
    } catch (...) {
      ::_exit(1);
    }
    ::_exit(0);
  }
  auto msg = parent.receive(10.0);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->header, "header-7");
  ASSERT_TRUE(msg->fd);
  EXPECT_EQ(contentsOf(msg->fd.get()), "chunk 7 of PE 3");
}

TEST(FdChannel, MessagesWithoutADescriptorArriveInOrder) {
  FdChannel rx, tx;
  for (int i = 0; i < 5; ++i) tx.send(rx.address(), "m" + std::to_string(i), -1, 1.0);
  for (int i = 0; i < 5; ++i) {
    auto m = rx.receive(1.0);
    ASSERT_TRUE(m.has_value());
    EXPECT_EQ(m->header, "m" + std::to_string(i));
    EXPECT_FALSE(m->fd);
  }
}

TEST(FdChannel, AFullQueueRunsTheCallbackSoSendersCanDrainTheirOwn) {
  // More messages than a datagram queue holds: without draining, the send would time out.
  FdChannel rx, tx;
  std::vector<std::string> got;
  auto drain = [&] {
    while (auto m = rx.receive(0)) got.push_back(m->header);
  };
  for (int i = 0; i < 200; ++i) tx.send(rx.address(), std::to_string(i), -1, 5.0, drain);
  while (auto m = rx.receive(0.2)) got.push_back(m->header);
  ASSERT_EQ(got.size(), 200u);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(got[i], std::to_string(i));
}

TEST(FdChannel, AQueueNobodyReadsTimesOutNamingThePeer) {
  FdChannel rx, tx;
  try {
    for (int i = 0; i < 100000; ++i) tx.send(rx.address(), "x", -1, 0.3);
    FAIL() << "the queue never filled";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::Timeout);
    EXPECT_TRUE(test::contains(e.what(), "@" + rx.address())) << e.what();
  }
}

TEST(FdChannel, ReceiveIsBounded) {
  FdChannel rx;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(rx.receive(0.1).has_value());
  double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(waited, 0.09);
  EXPECT_LT(waited, 2.0);
}

TEST(FdChannel, SendingToAGoneChannelNamesTheAddress) {
  std::string gone;
  {
    FdChannel temporary;
    gone = temporary.address();
  }
  FdChannel tx;
  try {
    tx.send(gone, "x", -1, 0.5);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_TRUE(test::contains(e.what(), "@" + gone)) << e.what();
  }
}

TEST(FdChannel, OversizedHeaderIsRefused) {
  FdChannel rx, tx;
  EXPECT_THROW(tx.send(rx.address(), std::string(FdChannel::kMaxHeader + 1, 'x'), -1, 0.5), Error);
}

}  // namespace
}  // namespace axon
