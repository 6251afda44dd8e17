// A shared secret (a job's key, a staging space's key) and the challenge-response that proves
// it without sending it: the side that accepts connections sends a fresh nonce, the connecting
// side answers with an HMAC of both sides' nonces under the key, and the acceptor answers with
// its own HMAC (another label) so that the connecting side knows it reached the real server.
// docs/security.md describes the handshakes built on this.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/hmac.hpp"

namespace axon {

using Nonce = std::array<std::uint8_t, 32>;

class Secret {
 public:
  // Shortest key accepted (bytes, i.e. twice as many hex digits) and the size of generated keys.
  static constexpr std::size_t kMinBytes = 16;
  static constexpr std::size_t kGeneratedBytes = 32;

  Secret() = default;
  static Secret generate();
  // Hex digits (surrounding whitespace allowed). `source` names where the text came from
  // (e.g. "AXON_JOB_KEY") in the error for a bad or short key.
  static Secret fromHex(std::string_view text, const std::string& source);
  // Reads a key file written by writeFile (or by hand: hex digits). Refuses a file that another
  // user owns or that its group or others may read or write, naming the path and its mode.
  static Secret fromFile(const std::string& path);
  // Creates `path` with mode 0600 (never follows a link, never replaces a file) and writes the
  // key as hex. Throws SystemError when the file exists.
  void writeFile(const std::string& path) const;

  bool empty() const { return bytes_.empty(); }
  std::string hex() const;
  std::span<const std::uint8_t> bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

// Creates `path` with mode 0600 (never follows a link, never replaces a file) holding `text`.
// Throws SystemError naming `path` when it exists or cannot be written.
void writeNewPrivateFile(const std::string& path, const std::string& text);
// Puts a 0600 file holding `text` at `path`, replacing what was there: written aside first and
// renamed into place, so a reader sees the old file or the whole new one, never half of it.
void replacePrivateFile(const std::string& path, const std::string& text);

Nonce makeNonce();

// HMAC-SHA-256 under the key of `label` (which says which protocol and which side proves, so a
// proof is never valid in another place) followed by the transcript (both nonces and whatever the
// prover claims, e.g. its rank).
Digest proveKey(const Secret& key, std::string_view label, std::span<const std::uint8_t> transcript);

// Appends bytes to a transcript.
void appendTranscript(std::vector<std::uint8_t>& transcript, std::span<const std::uint8_t> bytes);
void appendTranscript(std::vector<std::uint8_t>& transcript, std::string_view text);

}  // namespace axon
