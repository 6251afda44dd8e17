// A staging server's side of removing a variable (Remove): the puts, gets and version waits that
// wait for it are refused at once, every version goes (held ones included), and the client is
// answered once nothing of it is left here. Data in flight on it (a get's fragments being read,
// a put's bytes landing) keeps its versions until it ends, bounded by the request's wait: then
// the answer is Timeout, and the variable still goes when the data has landed or been read.
#pragma once

#include <cstdint>
#include <list>
#include <string>

#include "bootstrap/wire.hpp"
#include "space/protocol.hpp"
#include "space/server_clients.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

class ServerGets;
class ServerPuts;
class Store;

class ServerRemoves {
 public:
  ServerRemoves(ClientLinks& clients, Store& store, ServerPuts& puts, ServerGets& gets)
      : clients_(clients), store_(store), puts_(puts), gets_(gets) {}

  // A Remove: answered now, or once the data in flight on the variable has ended.
  void start(rpc::ConnId c, const protocol::Head& h, wire::ByteReader& r);
  // The store changed: answers the removes that are complete now.
  void recheck();
  // Answers the removes whose wait has passed (Timeout).
  void expire(Clock::time_point now);
  // The client is gone: its removes are not answered (the variables still go).
  void dropClient(rpc::ConnId c);
  // Shutdown: every waiting remove fails with `why`.
  void failAll(const std::string& why);

 private:
  struct Pending {
    rpc::ConnId conn;
    std::uint64_t id;
    std::string name;
    Clock::time_point deadline;
  };

  ClientLinks& clients_;
  Store& store_;
  ServerPuts& puts_;
  ServerGets& gets_;
  std::list<Pending> pending_;
};

}  // namespace axon::space
