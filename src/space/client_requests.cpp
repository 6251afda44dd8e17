// Requests of a staging-space client (client_requests.hpp), and axon::space::Request over them.
#include "space/client_requests.hpp"

#include "axon/error.hpp"

namespace axon::space {

using protocol::Op;

std::shared_ptr<Request::State> Requests::begin(const std::string& what, double timeoutSec) {
  auto state = std::make_shared<Request::State>();
  state->owner = this;
  state->deadline = deadlineAfter(callTimeout(timeoutSec, timeoutSec_, what));
  state->what = what;
  return state;
}

std::shared_ptr<Request::State> Requests::handOver(std::shared_ptr<Request::State> state, bool blocking) {
  if (blocking) {
    finish(*state);
    return nullptr;
  }
  std::lock_guard lock(mu_);
  open_.emplace(state.get(), state);
  return state;
}

void Requests::finish(Request::State& st) {
  if (st.ended) {
    if (st.failure) std::rethrow_exception(st.failure);
    return;
  }
  try {
    for (auto& b : st.batches) {
      std::shared_ptr<Batch> batch = b.lock();
      if (!batch) continue;
      if (!batch->call) batches_.flush();
      if (batch->call) st.calls.push_back(batch->call);
    }
    st.batches.clear();
    for (auto& c : st.calls) {
      conn_.wait(c, st.deadline + Connection::grace(), st.what);
      if (c->op != Op::Query) conn_.check(*c);  // a get's answers are read by its finish
    }
    if (st.finish) st.finish();
  } catch (...) {
    st.failure = std::current_exception();
  }
  st.ended = true;
  st.ownedCopy.clear();
  st.finish = nullptr;
  {
    std::lock_guard lock(mu_);
    open_.erase(&st);
  }
  if (st.failure) std::rethrow_exception(st.failure);
}

bool Requests::test(Request::State& st) {
  if (st.ended) return true;
  conn_.progress();
  for (auto& b : st.batches) {
    if (auto batch = b.lock(); batch && !batch->call) return false;
  }
  return conn_.allDone(st.calls);
}

void Requests::finishAll() {
  std::unordered_map<Request::State*, std::shared_ptr<Request::State>> open;
  {
    std::lock_guard lock(mu_);
    open.swap(open_);
  }
  batches_.flush();
  for (auto& [p, s] : open) {
    try {
      finish(*s);
    } catch (...) {
    }
  }
}

// --- Request ------------------------------------------------------------------------------------

Request::Request() = default;
Request::~Request() = default;
Request::Request(Request&&) noexcept = default;
Request& Request::operator=(Request&&) noexcept = default;
Request::Request(std::shared_ptr<State> s) : state_(std::move(s)) {}

bool Request::test() {
  if (!state_) throw Error(ErrorCode::InvalidArgument, "test of an empty space request");
  if (!state_->owner->test(*state_)) return false;
  state_->owner->finish(*state_);
  return true;
}

void Request::wait() {
  if (!state_) throw Error(ErrorCode::InvalidArgument, "wait on an empty space request");
  state_->owner->finish(*state_);
}

}  // namespace axon::space
