// What a staging-space client asks its servers about the space rather than its data: variables
// (defined on every server; their definitions cached here, since every put and get needs one),
// versions (wait_version: the newest version complete on every server; release: let a version
// go) and the servers' statistics. Puts and gets (client_puts, client_gets) look variables up here.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "axon/space.hpp"
#include "space/client_connection.hpp"
#include "space/store.hpp"

namespace axon::space {

class Catalog {
 public:
  Catalog(Connection& conn, double timeoutSec) : conn_(conn), timeoutSec_(timeoutSec) {}

  // Defines the variable on every server (again: each checks it is the same).
  void define(const Variable& v);
  // The variable's definition: cached, else asked of the first server (InvalidArgument: unknown).
  Variable variable(const std::string& name);
  // The newest version >= atLeast complete on every server that owns part of the variable.
  std::int64_t waitVersion(const std::string& name, std::int64_t atLeast, double timeoutSec);
  void release(const std::string& name, std::int64_t version);
  // Removes the variable from every server (answered once it is gone everywhere) and forgets its
  // definition here.
  void remove(const std::string& name);
  // What each server holds, in placement order.
  std::vector<ServerStats> serverStats();

 private:
  Connection& conn_;
  const double timeoutSec_;
  std::mutex mu_;  // vars_
  std::map<std::string, Variable> vars_;
};

}  // namespace axon::space
