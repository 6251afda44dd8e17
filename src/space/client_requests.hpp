// A put's or get's life once issued (the state behind axon::space::Request): the calls it waits
// for, the batches holding some of its parts, a get's reassembly that runs once every call is
// done, and its failure, kept for wait() to rethrow. Blocking calls finish here at once;
// nonblocking ones are kept until waited for, so that close() can wait for them.
#pragma once

#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "axon/space.hpp"
#include "space/client_batches.hpp"
#include "space/client_connection.hpp"

namespace axon::space {

class Requests;

struct Request::State {
  Requests* owner = nullptr;
  std::vector<std::shared_ptr<Call>> calls;
  Clock::time_point deadline;
  std::string what;
  std::vector<char> ownedCopy;  // a host-staged copy of GPU data, kept until the request is done
  std::vector<std::weak_ptr<Batch>> batches;  // batches holding some of a put's parts
  std::function<void()> finish;  // a get's reassembly, once every call is done
  bool ended = false;
  std::exception_ptr failure;
};

class Requests {
 public:
  Requests(Connection& conn, Batcher& batches, double timeoutSec)
      : conn_(conn), batches_(batches), timeoutSec_(timeoutSec) {}

  // A new request named `what` (for its errors), bounded by timeoutSec (<= 0: the client's).
  std::shared_ptr<Request::State> begin(const std::string& what, double timeoutSec);
  // A blocking call waits here (nullptr back); a nonblocking one is kept until waited for.
  std::shared_ptr<Request::State> handOver(std::shared_ptr<Request::State> state, bool blocking);
  // Waits for the request's calls, runs its finish, and rethrows its failure (every time).
  void finish(Request::State& st);
  // Whether wait() would return at once.
  bool test(Request::State& st);
  // close(): waits for every request not yet waited for; their failures are dropped.
  void finishAll();

 private:
  Connection& conn_;
  Batcher& batches_;
  const double timeoutSec_;
  std::mutex mu_;  // open_
  std::unordered_map<Request::State*, std::shared_ptr<Request::State>> open_;  // not yet waited for
};

}  // namespace axon::space
