#include "space/protocol.hpp"

namespace axon::space::protocol {

const char* opName(Op op) {
  switch (op) {
    case Op::Hello: return "hello";
    case Op::Join: return "join";
    case Op::Members: return "members";
    case Op::Define: return "define";
    case Op::Describe: return "describe";
    case Op::Put: return "put";
    case Op::PutBatch: return "put batch";
    case Op::Reserve: return "reserve";
    case Op::Write: return "write";
    case Op::Commit: return "commit";
    case Op::Abort: return "abort";
    case Op::Query: return "query";
    case Op::Fetch: return "fetch";
    case Op::Done: return "done";
    case Op::WaitVersion: return "wait_version";
    case Op::Release: return "release";
    case Op::Stats: return "stats";
    case Op::Greeting: return "greeting";
    case Op::Remove: return "remove";
    case Op::Reply: return "reply";
    case Op::Data: return "data";
  }
  return "unknown";
}

wire::ByteWriter begin(Op op, std::uint64_t id) {
  wire::ByteWriter w;
  w.u32(kMagic).u16(kVersion).u16(static_cast<std::uint16_t>(op)).u64(id);
  return w;
}

wire::ByteWriter beginReply(std::uint64_t id, int status, const std::string& message) {
  wire::ByteWriter w = begin(Op::Reply, id);
  w.i32(status).str(message);
  return w;
}

Head readHead(wire::ByteReader& r) {
  const std::uint32_t magic = r.u32();
  if (magic != kMagic) throw wire::Malformed("not a staging-space message (magic " + std::to_string(magic) + ")");
  const std::uint16_t version = r.u16();
  if (version != kVersion) {
    throw wire::Malformed("a staging-space message of protocol version " + std::to_string(version) +
                          "; this build speaks version " + std::to_string(kVersion) +
                          " (client and server come from different axon builds)");
  }
  Head h;
  h.op = static_cast<Op>(r.u16());
  h.id = r.u64();
  return h;
}

void writeBox(wire::ByteWriter& w, const Box& b) {
  w.u8(static_cast<std::uint8_t>(b.ndim));
  for (int d = 0; d < b.ndim; ++d) w.i64(b.lo[d]).i64(b.hi[d]);
}

Box readBox(wire::ByteReader& r) {
  Box b;
  b.ndim = r.u8();
  if (b.ndim < 1 || b.ndim > kMaxDims) throw wire::Malformed("a box of " + std::to_string(b.ndim) + " dimensions");
  for (int d = 0; d < b.ndim; ++d) {
    b.lo[d] = r.i64();
    b.hi[d] = r.i64();
  }
  return b;
}

void writeVariable(wire::ByteWriter& w, const Variable& v) {
  w.str(v.name).u8(static_cast<std::uint8_t>(v.dtype)).i32(v.keepVersions);
  writeBox(w, v.shape);
}

Variable readVariable(wire::ByteReader& r) {
  Variable v;
  v.name = r.str();
  const std::uint8_t t = r.u8();
  if (t > static_cast<std::uint8_t>(DataType::Float64)) throw wire::Malformed("data type " + std::to_string(t));
  v.dtype = static_cast<DataType>(t);
  v.keepVersions = r.i32();
  v.shape = readBox(r);
  return v;
}

void writeStats(wire::ByteWriter& w, const StoreStats& s) {
  for (std::uint64_t v : {s.capacity, s.bytesInUse, s.highWater, s.pieces, s.versions, s.variables, s.putsCommitted,
                          s.putsAborted, s.bytesPut, s.lookups, s.bytesServed, s.versionsDropped, s.versionsEvicted,
                          s.putsRejectedFull}) {
    w.u64(v);
  }
}

StoreStats readStats(wire::ByteReader& r) {
  StoreStats s;
  for (std::uint64_t* v : {&s.capacity, &s.bytesInUse, &s.highWater, &s.pieces, &s.versions, &s.variables,
                           &s.putsCommitted, &s.putsAborted, &s.bytesPut, &s.lookups, &s.bytesServed,
                           &s.versionsDropped, &s.versionsEvicted, &s.putsRejectedFull}) {
    *v = r.u64();
  }
  return s;
}

}  // namespace axon::space::protocol
