// Batches of small nonblocking puts (client_batches.hpp).
#include "space/client_batches.hpp"

#include <algorithm>

#include "space/client_requests.hpp"
#include "space/client_stats.hpp"

namespace axon::space {

using protocol::Op;

namespace {

// A batch's list of items travels in its message header, which UCX bounds (8 KiB over TCP).
constexpr std::size_t kBatchHeaderMax = 4096;

}  // namespace

void Batcher::add(Request::State& st, int s, const std::string& name, std::int64_t version, const Box& part,
                  const char* data, std::uint64_t bytes) {
  std::shared_ptr<Batch> sendNow;
  {
    std::lock_guard lock(mu_);
    auto& b = batches_[s];
    if (!b) {
      b = std::make_shared<Batch>();
      b->deadline = st.deadline;
    }
    b->items.str(name).i64(version);
    protocol::writeBox(b->items, part);
    b->items.u64(bytes);
    ++b->count;
    b->data.insert(b->data.end(), data, data + bytes);
    b->deadline = std::min(b->deadline, st.deadline);
    st.batches.push_back(b);
    // Full, or its item list near what a message header may hold.
    if (b->data.size() >= batchBytes_ || b->items.bytes().size() >= kBatchHeaderMax) {
      sendNow = b;
      b.reset();
    }
  }
  stats_.bump(&ClientStats::batchedPuts);
  stats_.setPath("host memory gathered into a batch, sent by UCX");
  if (sendNow) send(s, sendNow);
}

void Batcher::send(int s, const std::shared_ptr<Batch>& b) {
  wire::ByteWriter w = protocol::begin(Op::PutBatch, 0);
  w.u32(b->count);
  std::string head = w.bytes() + b->items.bytes();
  wire::ByteWriter tail;
  tail.u64(millisUntil(b->deadline));
  head += tail.bytes();
  // The batch's bytes live until UCX is done with them (the send's completion holds it).
  b->call = conn_.issueCall(s, Op::PutBatch, std::move(head), std::make_shared<Call>(), b->data.data(),
                            b->data.size(), rpc::Memory::Host, b);
  stats_.bump(&ClientStats::batches);
}

void Batcher::flush() {
  std::map<int, std::shared_ptr<Batch>> pending;
  {
    std::lock_guard lock(mu_);
    pending.swap(batches_);
  }
  for (auto& [s, b] : pending) {
    if (b) send(s, b);
  }
}

}  // namespace axon::space
