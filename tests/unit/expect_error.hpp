// Assertions shared by the unit tests: "this throws axon::Error with that code" and "this text
// contains that", with failure messages that show the whole text.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "axon/error.hpp"

namespace axon::test {

// Runs `fn` and expects axon::Error with `code`. Returns the message so that callers can check
// what it names; returns "" (after recording a failure) when nothing was thrown.
template <class F>
std::string errorMessageOf(F&& fn, ErrorCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(errorCodeName(e.code()), std::string(errorCodeName(code))) << "message: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected axon::Error(" << errorCodeName(code) << "), nothing was thrown";
  return "";
}

inline ::testing::AssertionResult contains(std::string_view text, std::string_view part) {
  if (text.find(part) != std::string_view::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << part << "' not found in: " << text;
}

}  // namespace axon::test
