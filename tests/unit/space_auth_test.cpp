// The staging space's key, tried as a stranger would, against servers on threads of this
// process: requests sent before the key is proved (define, put, reserve, query, release, join,
// ...) are refused unread and change nothing; a wrong proof, a replayed one and an idle connection
// are refused; a server without the key cannot take a forming space's slot; a client refuses a
// server that cannot prove the key; the contact file is 0600 and holds the key; and the per-client
// book of holds (server_holds.hpp) bounds what a client may pin.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "axon/error.hpp"
#include "axon/space.hpp"
#include "axon/space_server.hpp"
#include "space/contact_file.hpp"
#include "space/handshake.hpp"
#include "space/protocol.hpp"
#include "space/server_holds.hpp"
#include "space_raw_client.hpp"

namespace axon::space {
namespace {

using protocol::Op;
using test::Answer;
using test::RawClient;

const std::string kKey(64, 'c');
const std::string kWrong(64, 'd');

std::unique_ptr<Server> startServer(ServerOptions so) {
  if (so.listen.empty()) so.listen = "127.0.0.1:0";
  so.memBytes = 8 << 20;
  if (so.key.empty()) so.key = kKey;
  auto server = std::make_unique<Server>(so);
  server->start();
  return server;
}

// Skips the test where this build or machine has no UCX.
#define START_OR_SKIP(var, options)                                        \
  std::unique_ptr<Server> var;                                             \
  try {                                                                    \
    var = startServer(options);                                            \
  } catch (const Error& e) {                                               \
    if (e.code() == ErrorCode::Unsupported) GTEST_SKIP() << e.what();      \
    throw;                                                                 \
  }

Client keyedClient(const Server& server, const std::string& key = kKey) {
  ConnectOptions o;
  o.address = server.address();
  o.key = key;
  o.timeoutSec = 10;
  o.sharedMemory = false;
  return Client(o);
}

// The server's numbers once its thread has taken them (a snapshot between requests).
ServerStats settledStats(const Server& s) {
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return s.stats();
}

TEST(SpaceAuth, RequestsBeforeTheProofAreRefusedUnreadAndChangeNothing) {
  START_OR_SKIP(server, ServerOptions{});
  Client owner = keyedClient(*server);
  owner.define("v", {64}, DataType::Float64, 4);
  std::vector<double> data(64, 1.25), back(64, 0.0);
  owner.put("v", 0, {0}, {64}, data.data());
  const ServerStats before = settledStats(*server);

  struct Attempt {
    const char* what;
    wire::ByteWriter request;
    bool withData;
  };
  std::vector<Attempt> attempts;
  {
    wire::ByteWriter w = protocol::begin(Op::Define, 0);
    protocol::writeVariable(w, Variable{"squat", Box::of({0}, {1 << 20}), DataType::Float64, 2});
    attempts.push_back({"define a name", w, false});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::Put, 0);  // a future version, before its owner
    w.str("v").i64(5);
    protocol::writeBox(w, Box::of({0}, {64}));
    w.u64(1000);
    attempts.push_back({"put a future version", w, true});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::Reserve, 0);
    w.str("v").i64(6);
    protocol::writeBox(w, Box::of({0}, {64}));
    w.u64(1000);
    attempts.push_back({"reserve", w, false});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::Query, 0);  // read, and pin the version
    w.str("v").i64(0).u32(1);
    protocol::writeBox(w, Box::of({0}, {64}));
    w.u64(0);
    attempts.push_back({"read", w, false});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::WaitVersion, 0);
    w.str("v").i64(0).u64(0);
    attempts.push_back({"wait for a version", w, false});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::Release, 0);
    w.str("v").i64(0);
    attempts.push_back({"release", w, false});
  }
  attempts.push_back({"stats", protocol::begin(Op::Stats, 0), false});
  {
    wire::ByteWriter w = protocol::begin(Op::Join, 0);  // a Join without its proof
    w.str("10.9.9.9:1");
    attempts.push_back({"join without a proof", w, false});
  }
  {
    wire::ByteWriter w = protocol::begin(Op::Commit, 0);
    w.u64(1);
    attempts.push_back({"commit", w, false});
  }
  for (Attempt& a : attempts) {
    SCOPED_TRACE(a.what);
    RawClient stranger(server->address());
    ASSERT_TRUE(stranger.greeting().has_value()) << "the server greets every connection";
    const Answer answer = stranger.call(a.request, a.withData ? data.data() : nullptr, a.withData ? 512 : 0);
    EXPECT_EQ(answer.status, static_cast<int>(ErrorCode::PermissionDenied)) << answer.message;
    EXPECT_NE(answer.message.find("refused the connection"), std::string::npos) << answer.message;
    EXPECT_NE(answer.message.find(server->address()), std::string::npos) << answer.message;
    // Anything else it sends is dropped unread, and the server closes the connection.
    const Answer again = stranger.call(protocol::begin(Op::Stats, 0), nullptr, 0, std::chrono::milliseconds(300));
    EXPECT_TRUE(again.closed || again.none) << "a refused connection got an answer: " << again.message;
    EXPECT_TRUE(stranger.waitClosed(std::chrono::seconds(3))) << "the refused connection was not closed";
  }

  const ServerStats after = settledStats(*server);
  EXPECT_EQ(after.variables, before.variables);
  EXPECT_EQ(after.versions, before.versions);
  EXPECT_EQ(after.pieces, before.pieces);
  EXPECT_EQ(after.putsCommitted, before.putsCommitted);
  EXPECT_EQ(after.bytesInUse, before.bytesInUse);
  // The owner writes "its" future version (no overlap with a stranger's piece) and reads it back;
  // the stranger's name does not exist.
  std::vector<double> five(64, 5.0);
  owner.put("v", 5, {0}, {64}, five.data());
  owner.get("v", 5, {0}, {64}, back.data(), back.size() * 8);
  EXPECT_EQ(back, five);
  try {
    owner.shapeOf("squat");
    ADD_FAILURE() << "a stranger defined a name";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument) << e.what();
  }
  server->stop();
}

TEST(SpaceAuth, AWrongProofAReplayedOneAndASecondHelloAreRefused) {
  START_OR_SKIP(server, ServerOptions{});
  {
    RawClient wrong(server->address());
    const Answer a = wrong.hello(Secret::fromHex(kWrong, "test"));
    EXPECT_EQ(a.status, static_cast<int>(ErrorCode::PermissionDenied)) << a.message;
    EXPECT_NE(a.message.find("did not prove the space's key"), std::string::npos) << a.message;
    EXPECT_EQ(a.message.find(kKey), std::string::npos);
  }
  std::optional<Nonce> oldNonce;
  {
    RawClient right(server->address());
    oldNonce = right.greeting();
    const Answer a = right.hello(Secret::fromHex(kKey, "test"));
    EXPECT_EQ(a.status, 0) << a.message;
    EXPECT_TRUE(right.serverProved()) << "the server's answer carries its proof of the key";
    // Introduced once: a second Hello on the connection is refused in words, and nothing breaks.
    const Answer twice = right.hello(Secret::fromHex(kKey, "test"));
    EXPECT_EQ(twice.status, static_cast<int>(ErrorCode::InvalidArgument)) << twice.message;
  }
  {
    // A proof over an earlier connection's nonce (a replayed Hello) proves nothing here.
    RawClient replay(server->address());
    ASSERT_TRUE(replay.greeting().has_value());
    EXPECT_NE(*replay.greeting(), *oldNonce) << "every connection gets a fresh nonce";
    const Answer a = replay.hello(Secret::fromHex(kKey, "test"), oldNonce);
    EXPECT_EQ(a.status, static_cast<int>(ErrorCode::PermissionDenied)) << a.message;
  }
  server->stop();
}

TEST(SpaceAuth, AnIdleConnectionIsClosedAtTheHandshakeDeadline) {
  ServerOptions so;
  so.timeoutSec = 0.5;  // the handshake's deadline is the smaller of 5 s and this
  START_OR_SKIP(server, so);
  RawClient idle(server->address());
  ASSERT_TRUE(idle.greeting().has_value());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(idle.waitClosed(std::chrono::seconds(3)));
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(400)) << "closed before its deadline";
  Client c = keyedClient(*server);  // the server serves on
  EXPECT_EQ(c.servers().size(), 1u);
  server->stop();
}

TEST(SpaceAuth, AServerWithoutTheKeyCannotTakeAFormingSpacesSlot) {
  ServerOptions firstOptions;
  firstOptions.servers = 2;
  START_OR_SKIP(first, firstOptions);
  ServerOptions stranger;
  stranger.listen = "127.0.0.1:0";
  stranger.memBytes = 8 << 20;
  stranger.join = first->address();
  stranger.timeoutSec = 10;
  stranger.key = kWrong;
  try {
    Server s(stranger);
    ADD_FAILURE() << "a server with another key joined";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PermissionDenied) << e.what();
    EXPECT_NE(std::string(e.what()).find("did not prove the space's key"), std::string::npos) << e.what();
  }
  stranger.key.clear();  // no key at all (and none in AXON_SPACE_KEY in this test's environment)
  if (!std::getenv("AXON_SPACE_KEY")) {
    try {
      Server s(stranger);
      ADD_FAILURE() << "a server without a key joined";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::PermissionDenied) << e.what();
      EXPECT_NE(std::string(e.what()).find("must prove that space's key"), std::string::npos) << e.what();
    }
  }
  ServerOptions real = stranger;
  real.key = kKey;
  Server second(real);
  second.start();
  ConnectOptions o;
  o.address = first->address();
  o.key = kKey;
  o.timeoutSec = 10;
  Client c(o);
  EXPECT_EQ(c.servers(), (std::vector<std::string>{first->address(), second.address()}));
  second.stop();
  first->stop();
}

// A program at the address that greets and answers as a server does, but cannot prove the key.
TEST(SpaceAuth, AClientRefusesAServerThatCannotProveTheKey) {
  std::unique_ptr<rpc::Node> impostor;
  try {
    impostor = rpc::makeNode("impostor");
  } catch (const Error& e) {
    if (e.code() == ErrorCode::Unsupported) GTEST_SKIP() << e.what();
    throw;
  }
  rpc::Node& node = *impostor;
  node.setHandlers({[&node](rpc::ConnId c, std::string header, rpc::Payload p) {
                      node.drop(p);
                      wire::ByteReader r(header);
                      const protocol::Head h = protocol::readHead(r);
                      wire::ByteWriter w = protocol::beginReply(h.id);
                      handshake::writeProof(w, Digest{});  // not a proof of anything
                      w.u32(0).u32(1).u64(7).str("elsewhere").str("").u64(0).u32(1).str("x");
                      node.send(c, w.bytes(), nullptr, 0, rpc::Memory::Host, [](const std::string&) {});
                    },
                    nullptr,
                    [&node](rpc::ConnId c) {
                      node.send(c, handshake::greeting(makeNonce()), nullptr, 0, rpc::Memory::Host,
                                [](const std::string&) {});
                    }});
  const std::string address = node.listen("127.0.0.1:0");
  std::atomic<bool> stop{false};
  std::thread serving([&] {
    while (!stop.load()) {
      if (!node.progress()) std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  });
  ConnectOptions o;
  o.address = address;
  o.key = kKey;
  o.timeoutSec = 5;
  try {
    Client c(o);
    ADD_FAILURE() << "the client believed an impostor";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PermissionDenied) << e.what();
    EXPECT_NE(std::string(e.what()).find("did not prove the space's key"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(address), std::string::npos) << e.what();
  }
  stop = true;
  serving.join();
}

TEST(SpaceAuth, TheContactFileIs0600HoldsTheKeyAndIsRefusedWhenOthersMayReadIt) {
  const std::string path = ::testing::TempDir() + "space-auth-contact-" + std::to_string(::getpid()) + ".json";
  std::remove(path.c_str());
  const mode_t old = ::umask(0);  // the file is 0600 whatever the umask
  writeContactFile(path, "127.0.0.1:4711", 42, 1, kKey);
  ::umask(old);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const ContactInfo info = readContactFile(path);
  EXPECT_EQ(info.address, "127.0.0.1:4711");
  EXPECT_EQ(info.epoch, 42u);
  EXPECT_EQ(info.key, kKey);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  try {
    readContactFile(path);
    ADD_FAILURE() << "a contact file others may read was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PermissionDenied);
    EXPECT_NE(std::string(e.what()).find("mode 0640"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find(kKey), std::string::npos) << "the key is never echoed";
  }
  std::remove(path.c_str());
}

// The proofs are the HMACs docs/security.md describes (computed independently, with Python's hmac:
// key 32 x 0x11, server nonce 32 x 0x22, client nonce 32 x 0x33, op Hello (1, little-endian u16),
// claims "abc"), so that another implementation of the handshake can be checked against them.
TEST(SpaceAuth, TheProofsAreTheDocumentedHmacs) {
  const Secret key = Secret::fromHex(std::string(64, '1'), "test");
  Nonce server, client;
  server.fill(0x22);
  client.fill(0x33);
  const handshake::Proofs p = handshake::prove(key, Op::Hello, server, client, "abc");
  auto hex = [](const Digest& d) {
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (std::uint8_t b : d) out += {digits[b >> 4], digits[b & 15]};
    return out;
  };
  EXPECT_EQ(hex(p.client), "f0dcc72bec23ceac7097bc94ec506ff47f78ba21e0b61f642fd95e5aaa2e2ca9");
  EXPECT_EQ(hex(p.server), "54bd5048c3a984ef07e7b6f8872fa2e1eb66300731a6a9177b64ea21e860064a");
  // Another op, another proof: a Hello's proof is no Join's.
  EXPECT_FALSE(handshake::sameProof(p.client, handshake::prove(key, Op::Join, server, client, "abc").client));
}

TEST(SpaceHolds, ABookBoundsVersionsHeldAndReadsUnderWayPerClient) {
  HoldBook book(2);
  book.check(1, "a", 0, "s");
  book.leased(1, "a", 0);
  book.leased(1, "a", 1);
  EXPECT_EQ(book.versionsHeld(1), 2u);
  EXPECT_EQ(book.readsUnderWay(1), 2u);
  // Its reads still under way: no third, not even of a version it holds.
  EXPECT_THROW(book.check(1, "a", 0, "s"), Error);
  book.leaseEnded(1);
  book.leaseEnded(1);
  book.check(1, "a", 1, "s");  // held already: no new hold
  try {
    book.check(1, "b", 0, "10.0.0.2:4711");
    ADD_FAILURE() << "a third version was allowed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("--max-holds 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("10.0.0.2:4711"), std::string::npos) << e.what();
  }
  book.check(2, "b", 0, "s");  // another client has its own book
  book.released(1, "a", 0);
  book.check(1, "b", 0, "s");
  book.drop(1);
  EXPECT_EQ(book.versionsHeld(1), 0u);
  EXPECT_EQ(book.readsUnderWay(1), 0u);
}

}  // namespace
}  // namespace axon::space
