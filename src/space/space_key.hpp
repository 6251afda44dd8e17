// Where a staging space's key comes from (docs/security.md, "Staging space"), and where it came
// from in words, so that a refusal can say so (never the key itself).
//   A server:  ServerOptions::key, else its key file (--key-file, mode 0600), else AXON_SPACE_KEY,
//              else a new one (written into its contact file).
//   A client:  ConnectOptions::key, else AXON_SPACE_KEY, else the contact file it found the
//              server through.
#pragma once

#include <string>

#include "axon/space_server.hpp"
#include "core/secret.hpp"

namespace axon {
struct Env;
}

namespace axon::space {

struct SpaceKey {
  Secret key;
  std::string origin;  // "AXON_SPACE_KEY", "key file /path", "contact file /path", "a new key", ...
  bool generated = false;
};

SpaceKey serverKey(const ServerOptions& o, const Env& env);
// `contactKey`/`contactFile`: the key of the contact file the server was found through (empty: none).
// Throws PermissionDenied naming `address` when there is no key at all.
SpaceKey clientKey(const ConnectOptions& o, const Env& env, const std::string& contactKey,
                   const std::string& contactFile, const std::string& address);

}  // namespace axon::space
