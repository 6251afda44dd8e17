// Random two-sided messages, each one checked: the test body shared by the host test
// (tests/mp/p2p_test.cpp, host buffers) and the GPU test (tests/gpu/p2p_gpu_test.cu, host and
// GPU buffers mixed). Rounds of random (source, dest, tag, size) messages, with exact, source-
// wildcard, tag-wildcard and full-wildcard receives; every receive's message is identified by its
// contents and checked byte for byte, and messages of one (source, tag) must arrive in order.
//
// `Buffers` says where buffers live: a type with
//   Handle make(std::size_t bytes, std::uint64_t salt);   // a buffer of that size
//   void* data(Handle&);
//   void write(Handle&, const std::vector<unsigned char>&);
//   std::vector<unsigned char> read(Handle&, std::size_t bytes);
// Handles free their memory when destroyed.
#pragma once

#include <gtest/gtest.h>

#include <axon/axon.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace axon::test {

// The byte at `i` of message `id` from `source`: every message distinct, every byte checked.
inline unsigned char messageByte(int source, std::uint64_t id, std::size_t i) {
  return static_cast<unsigned char>((source * 131 + id * 31 + i * 7 + (i >> 8)) & 0xff);
}
inline std::vector<unsigned char> message(int source, std::uint64_t id, std::size_t bytes) {
  std::vector<unsigned char> v(bytes);
  for (std::size_t i = 0; i < bytes; ++i) v[i] = messageByte(source, id, i);
  return v;
}
// The first byte that differs, or -1.
inline long firstWrong(const unsigned char* got, int source, std::uint64_t id, std::size_t bytes) {
  for (std::size_t i = 0; i < bytes; ++i) {
    if (got[i] != messageByte(source, id, i)) return static_cast<long>(i);
  }
  return -1;
}

// Whether AXON_P2P_POSTED leaves offers of posted receives on (the library's switch words).
inline bool postedOffersOn() {
  const char* v = std::getenv("AXON_P2P_POSTED");
  const std::string s = v ? v : "";
  return !(s == "0" || s == "off" || s == "no" || s == "false");
}

// Returns how many messages this PE received and checked. receivesFirst: each round's receives
// are posted on every PE before any PE sends (a barrier between), so that receives are waiting
// when messages come (the path into posted receives, p2p/local_channel.hpp); otherwise sends go
// first and most messages wait unexpected.
template <class Buffers>
int runRandomMessages(Buffers& buffers, int total, std::uint64_t seed, bool receivesFirst = false) {
  const int me = axon::myPe(), np = axon::nPes();
  const int perRound = 250;
  struct Planned {
    int source, dest, tag;
    std::size_t bytes;
  };
  std::mt19937_64 rng(seed);
  auto size = [&] {
    const unsigned r = rng() % 100;
    if (r < 80) return static_cast<std::size_t>(rng() % 16385);
    if (r < 98) return static_cast<std::size_t>(rng() % 262145);
    return static_cast<std::size_t>(rng() % (4u << 20) + 1);
  };
  int checked = 0;
  for (int first = 0; first < total; first += perRound) {
    const int count = std::min(perRound, total - first);
    // Tags 0-3 are received by exact receives, (source, ANY_TAG) and (ANY_SOURCE, ANY_TAG);
    // tags 4-7 by exact receives and (ANY_SOURCE, tag). Posted in that order (phase), every
    // receive finds a message whatever order they arrive in: a wildcard can never take the
    // message another receive needed (the counts per source and tag always add up).
    std::vector<Planned> plan;
    for (int k = 0; k < count; ++k) {
      plan.push_back(Planned{static_cast<int>(rng() % np), static_cast<int>(rng() % np), static_cast<int>(rng() % 8), size()});
    }
    // Each message's bytes are its own pattern (message()), which names it.
    using Handle = decltype(buffers.make(std::size_t{0}, std::uint64_t{0}));
    std::vector<Handle> out;
    std::vector<axon::Request> sends;
    out.reserve(static_cast<std::size_t>(count));
    auto sendAll = [&] {
      for (int k = 0; k < count; ++k) {
        if (plan[k].source != me) continue;
        out.push_back(buffers.make(plan[k].bytes, static_cast<std::uint64_t>(first + k)));
        buffers.write(out.back(), message(me, static_cast<std::uint64_t>(first + k), plan[k].bytes));
        sends.push_back(axon::isend(buffers.data(out.back()), plan[k].bytes, plan[k].dest, plan[k].tag));
      }
    };
    if (!receivesFirst) sendAll();
    std::vector<int> mine;
    for (int k = 0; k < count; ++k) {
      if (plan[k].dest == me) mine.push_back(k);
    }
    struct Posted {
      int phase, source, tag;
      std::size_t room;
      Handle buf;
      axon::Request req;
    };
    std::vector<Posted> posted;
    posted.reserve(mine.size());
    for (int k : mine) {
      const unsigned kind = static_cast<unsigned>(first + k) % 3;
      int phase, source = plan[k].source, tag = plan[k].tag;
      if (plan[k].tag >= 4) {
        phase = kind == 0 ? 0 : 1;
        if (phase == 1) source = axon::kAnySource;
      } else {
        phase = 2 + static_cast<int>(kind);
        if (phase >= 3) tag = axon::kAnyTag;
        if (phase == 4) source = axon::kAnySource;
      }
      // Room for the largest message it could take.
      std::size_t room = 0;
      for (int j : mine) {
        if ((source == axon::kAnySource || source == plan[j].source) && (tag == axon::kAnyTag || tag == plan[j].tag)) {
          room = std::max(room, plan[j].bytes);
        }
      }
      posted.push_back(Posted{phase, source, tag, room, buffers.make(room, ~static_cast<std::uint64_t>(first + k)), {}});
    }
    std::stable_sort(posted.begin(), posted.end(), [](const Posted& a, const Posted& b) { return a.phase < b.phase; });
    for (auto& p : posted) p.req = axon::irecv(buffers.data(p.buf), p.room, p.source, p.tag);
    if (receivesFirst) {
      axon::barrierAll();
      sendAll();
    }
    std::set<int> got;
    std::map<std::pair<int, int>, int> lastOf;  // (source, tag) -> last message number taken
    for (auto& p : posted) {
      const axon::Status st = p.req.wait();
      const std::vector<unsigned char> data = buffers.read(p.buf, st.bytes);
      // Identify the message by (source, tag, size, bytes); numbers grow within a (source, tag).
      int which = -1;
      for (int k : mine) {
        if (got.count(k) || plan[k].source != st.source || plan[k].tag != st.tag || plan[k].bytes != st.bytes) continue;
        if (firstWrong(data.data(), st.source, static_cast<std::uint64_t>(first + k), st.bytes) == -1) {
          which = k;
          break;
        }
      }
      EXPECT_GE(which, 0) << "PE " << me << " received " << st.bytes << " B from " << st.source << " tag " << st.tag
                          << " matching no planned message";
      if (which < 0) return checked;
      got.insert(which);
      auto& last = lastOf[{st.source, st.tag}];
      // Among messages of one (source, tag) with distinct contents, each receive takes the oldest:
      // the number must exceed the previous one taken. Equal-size empty messages are alike, so
      // only their count is checked.
      if (st.bytes > 0) {
        EXPECT_GT(which + 1, last) << "message " << first + which << " overtook an earlier one of its pair and tag";
      }
      last = std::max(last, which + 1);
      ++checked;
    }
    EXPECT_EQ(got.size(), mine.size());
    axon::waitAll(sends);
    axon::barrierAll();
  }
  return checked;
}

}  // namespace axon::test
