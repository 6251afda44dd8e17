// Where a staging space's key comes from (space_key.hpp).
#include "space/space_key.hpp"

#include "axon/error.hpp"
#include "core/env.hpp"

namespace axon::space {

SpaceKey serverKey(const ServerOptions& o, const Env& env) {
  if (!o.key.empty()) return {Secret::fromHex(o.key, "the staging server's key option"), "the key given", false};
  if (!o.keyFile.empty()) return {Secret::fromFile(o.keyFile), "key file " + o.keyFile, false};
  if (!env.spaceKey.empty()) return {Secret::fromHex(env.spaceKey, "AXON_SPACE_KEY"), "AXON_SPACE_KEY", false};
  return {Secret::generate(), "a new key", true};
}

SpaceKey clientKey(const ConnectOptions& o, const Env& env, const std::string& contactKey,
                   const std::string& contactFile, const std::string& address) {
  if (!o.key.empty()) return {Secret::fromHex(o.key, "the key given to connect"), "the key given to connect", false};
  if (!env.spaceKey.empty()) return {Secret::fromHex(env.spaceKey, "AXON_SPACE_KEY"), "AXON_SPACE_KEY", false};
  if (!contactKey.empty()) {
    return {Secret::fromHex(contactKey, "contact file " + contactFile), "contact file " + contactFile, false};
  }
  throw Error(ErrorCode::PermissionDenied,
              "no key for the staging space of server " + address +
                  ": a client must prove the space's key; pass it to connect (key=), set AXON_SPACE_KEY, or "
                  "connect through the server's contact file (AXON_SPACE_FILE), which holds it");
}

}  // namespace axon::space
