// The job key and store nonce of the fuzz target's handshake (wire_fuzz.cpp), with which
// make_seeds.cpp proves its Hello seeds: fixed, so that a seed's proof stays right from run to run.
#pragma once

#include "core/secret.hpp"

namespace axon::wire {

inline const Secret& fuzzKey() {
  static const Secret key = Secret::fromHex("66757a7a2d6b65792d666f722d617865" "6f6e2d73746f72652d68616e647368", "the fuzz key");
  return key;
}

inline constexpr Nonce kFuzzNonce = {'f', 'u', 'z', 'z', '-', 's', 't', 'o', 'r', 'e', '-', 'n', 'o', 'n', 'c', 'e',
                                     0,   1,   2,   3,   4,   5,   6,   7,   8,   9,   10,  11,  12,  13,  14,  15};

}  // namespace axon::wire
