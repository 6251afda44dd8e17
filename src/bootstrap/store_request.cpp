#include "bootstrap/store_request.hpp"

namespace axon::wire {

StoreRequest decodeStoreRequest(const FrameHead& head, std::string_view fields) {
  StoreRequest q;
  q.head = head;
  ByteReader in(fields);
  if (head.version != kWireVersion) {
    q.foreign = true;
    return q;
  }
  if (head.code < static_cast<std::uint8_t>(Op::Hello) || head.code > static_cast<std::uint8_t>(Op::GatherMissing)) {
    throw Malformed("unknown request " + std::to_string(head.code));
  }
  q.op = static_cast<Op>(head.code);
  switch (q.op) {
    case Op::Hello:
      q.nonce = std::string(in.fixed(kNonceBytes));
      q.rank = in.u32();
      q.version = in.str();
      q.proof = std::string(in.fixed(kProofBytes));
      break;
    case Op::Set:
      q.keys.push_back(in.str());
      q.value = in.str();
      break;
    case Op::Get:
    case Op::Check:
      q.keys.resize(in.count(4));
      for (auto& k : q.keys) k = in.str();
      break;
    case Op::Add:
      q.keys.push_back(in.str());
      q.delta = in.i64();
      break;
    case Op::Del:
    case Op::GatherMissing:
      q.keys.push_back(in.str());
      break;
    case Op::Bye:
      break;
    case Op::Gather:
      q.keys.push_back(in.str());
      q.members = in.u32();
      q.index = in.u32();
      q.value = in.str();
      break;
  }
  if (in.left() != 0) throw Malformed(std::to_string(in.left()) + " bytes past the fields of request " + std::to_string(head.code));
  return q;
}

}  // namespace axon::wire
