// The staging space's messages between clients and servers (carried by rpc::Node over UCX).
// Every header starts [u32 magic][u16 version][u16 op][u64 request id], so that a peer of another
// build is told so in words. Requests with id 0 expect no reply. Replies are op Reply with
// [i32 status][str message] after the request id, then the fields of the request's answer.
//
// Before anything else (space/handshake.hpp): the server sends a Greeting [32 B nonce] on every
// connection it accepts; the connecting side's first message is a Hello (a client) or a Join (a
// server), each [32 B nonce][32 B proof of the space's key] before the claims below, and the reply
// carries the server's proof [32 B] before its fields. A connection that sends anything else
// first, or a wrong proof, is refused (PermissionDenied) and closed; nothing it sent is read.
//
// Requests and their answers:
//   Hello     [str build][str node][u32 pid]           -> [proof][u32 index][u32 servers][u64 epoch]
//             [str node][str arena][u64 capacity][u32 n][str address]...   (the space's servers)
//   Join      [str address]                             -> [proof][u32 index][u32 servers]  (a server joining the first)
//   Members   [u32 n][str address]...  (no reply: the first server tells each joined one, once all are in)
//   Define    [var]                                     -> -
//   Describe  [str name]                                -> [var]
//   Put       [str name][i64 version][box][u64 timeout ms] + the piece's bytes  -> -
//   PutBatch  [u32 n]([str name][i64 version][box][u64 bytes])... [u64 timeout ms] + the bytes
//             back to back -> [u32 stored]  (stops at the first failure, which the reply carries)
//   Reserve   [str name][i64 version][box][u64 timeout ms] -> [u64 reservation][u64 offset]
//   Write     [u64 reservation][u64 byte offset] + bytes -> -   (a part of a reservation's data,
//             landing at that offset in it: the chunks of a pipelined GPU put; visible at Commit)
//   Commit    [u64 reservation]                         -> -
//   Abort     [u64 reservation]   (no reply: the client could not copy its data; the memory goes back)
//   Query     [str name][i64 version][u32 n][box]...[u64 wait ms]
//             -> [u64 lease][u32 n]([box piece][u64 offset][u64 range start][u64 range bytes])...;
//             status Incomplete carries [u32 n][box]... (what is missing). The lease pins the
//             fragments until Fetch has sent them or Done says the client copied them.
//   Fetch     [u64 lease] -> each fragment as a Data message [u64 fetch id][u32 fragment] + its
//             bytes, then the reply once all are sent (the lease ends)
//   Done      [u64 lease]   (no reply: the client copied the fragments from the mapped arena)
//   WaitVersion [str name][i64 at least][u64 wait ms]   -> [u32 n][i64 version]...
//   Release   [str name][i64 version]                   -> -
//   Remove    [str name][u64 wait ms]                   -> -   (answered once the variable is gone
//             from this server: at once, or when the transfers under way on it end, within the wait)
//   Stats                                               -> [stats fields]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/wire.hpp"
#include "space/box.hpp"
#include "space/store.hpp"

namespace axon::space::protocol {

constexpr std::uint32_t kMagic = 0x50584178u;  // "xAXP"
constexpr std::uint16_t kVersion = 2;  // 2: Remove
constexpr std::size_t kHeadBytes = 16;  // magic, version, op, id
// A message longer than UCX allows for a header (a reply listing thousands of fragments) sends its
// head alone as the header and the rest as the message's data.

enum class Op : std::uint16_t {
  Hello = 1, Join, Members, Define, Describe, Put, PutBatch, Reserve, Commit, Abort, Query, Fetch, Done, WaitVersion, Release, Stats,
  Write, Greeting, Remove,
  Reply = 100, Data,
};
const char* opName(Op op);

struct Head {
  Op op{};
  std::uint64_t id = 0;
};

// Starts a message.
wire::ByteWriter begin(Op op, std::uint64_t id);
// Starts a reply: status 0 for success, else an ErrorCode value, with its message.
wire::ByteWriter beginReply(std::uint64_t id, int status = 0, const std::string& message = {});
// Reads the head; throws wire::Malformed naming what is wrong (another build, not ours).
Head readHead(wire::ByteReader& r);

void writeBox(wire::ByteWriter& w, const Box& b);
Box readBox(wire::ByteReader& r);  // refuses ndim outside 1..kMaxDims
void writeVariable(wire::ByteWriter& w, const Variable& v);
Variable readVariable(wire::ByteReader& r);
void writeStats(wire::ByteWriter& w, const StoreStats& s);
StoreStats readStats(wire::ByteReader& r);

}  // namespace axon::space::protocol
