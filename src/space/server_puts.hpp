// How data comes into a staging server, and the memory it takes: a Put, a PutBatch or a Reserve
// is admitted against --mem (the store reserves room by its policy; the arena grows to hold it)
// or, under policy block, waits in a queue until memory is freed or its timeout passes. Once
// admitted, UCX lands the bytes straight in the arena (a put's piece is committed when they are
// there); the chunks of a pipelined GPU put arrive as Writes into one reservation, visible only
// at its Commit, and an Abort gives the memory back once no Write is still landing in it.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <string>

#include "bootstrap/wire.hpp"
#include "space/protocol.hpp"
#include "space/server_clients.hpp"
#include "transport/rpc.hpp"

namespace axon::space {

class ServerArena;
class Store;

class ServerPuts {
 public:
  ServerPuts(ClientLinks& clients, Store& store, ServerArena& arena)
      : clients_(clients), store_(store), arena_(arena) {}

  // A Put, PutBatch or Reserve: started, or true when it waits for memory (policy block).
  bool start(rpc::ConnId c, const protocol::Head& h, const std::string& header, rpc::Payload& payload);
  void write(rpc::ConnId c, std::uint64_t id, wire::ByteReader& r, rpc::Payload& payload);
  void commit(rpc::ConnId c, std::uint64_t id, wire::ByteReader& r);
  void abort(rpc::ConnId c, wire::ByteReader& r);

  // Memory was freed: starts the waiting puts that fit now.
  void retry();
  // Fails the waiting puts whose timeout has passed (SpaceFull).
  void expire(Clock::time_point now);
  // The client is gone: its waiting puts are dropped.
  void dropClient(rpc::ConnId c);
  // Shutdown: every waiting put fails with `why`.
  void failAll(const std::string& why);
  // The variable was removed: the puts waiting for memory that name it fail with `why`.
  void failWaitingOn(const std::string& name, const std::string& why);

 private:
  struct Blocked : HeldRequest {  // a put waiting for memory (policy block)
    rpc::Payload payload;
  };
  struct Landing {  // a reservation with Write data still arriving
    int writes = 0;
    bool abortWhenDone = false;  // its writer aborted it meanwhile
  };

  // Finds memory for a put, a batch or a reservation and starts it; false: wait (policy block).
  bool admit(Blocked& b);
  bool admitBatch(Blocked& b, wire::ByteReader& r);

  ClientLinks& clients_;
  Store& store_;
  ServerArena& arena_;
  std::list<Blocked> blocked_;
  std::map<std::uint64_t, Landing> landing_;
};

}  // namespace axon::space
