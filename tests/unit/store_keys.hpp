// The job key the store's unit tests share, and a server's options with it: every client in these
// tests proves this key, as every PE of a job proves the job's.
#pragma once

#include <string>

#include "bootstrap/store_server.hpp"
#include "core/secret.hpp"

namespace axon::test {

inline const Secret& jobKey() {
  static const Secret key = Secret::fromHex("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "the test key");
  return key;
}

inline const char* kKeySource = "the test key";

// A store for a job of `worldSize` PEs proving jobKey().
inline StoreServerOptions storeOptions(double replyTimeoutSec = 60.0, std::string version = "", int worldSize = 16) {
  StoreServerOptions o;
  o.key = jobKey();
  o.worldSize = worldSize;
  o.replyTimeoutSec = replyTimeoutSec;
  o.version = std::move(version);
  return o;
}

}  // namespace axon::test
