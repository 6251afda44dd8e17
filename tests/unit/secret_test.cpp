// HMAC-SHA-256 against RFC 4231's published test vectors, key parsing and key files, proofs.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "axon/error.hpp"
#include "core/hmac.hpp"
#include "core/secret.hpp"

namespace axon {
namespace {

std::vector<std::uint8_t> bytesOf(std::string_view text) { return {text.begin(), text.end()}; }

std::string hexOf(const Digest& d) {
  std::string out;
  char two[3];
  for (auto b : d) {
    std::snprintf(two, sizeof two, "%02x", b);
    out += two;
  }
  return out;
}

TEST(Hmac, MatchesRfc4231TestCases) {
  // Test case 1: key = 0x0b x 20, data = "Hi There".
  const std::vector<std::uint8_t> key1(20, 0x0b);
  EXPECT_EQ(hexOf(hmacSha256(key1, bytesOf("Hi There"))),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  // Test case 2: key = "Jefe", data = "what do ya want for nothing?".
  EXPECT_EQ(hexOf(hmacSha256(bytesOf("Jefe"), bytesOf("what do ya want for nothing?"))),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(Hmac, ConstantTimeCompareSeesEveryByte) {
  const std::vector<std::uint8_t> a{1, 2, 3, 4}, b{1, 2, 3, 5}, c{1, 2, 3};
  EXPECT_TRUE(equalInConstantTime(a, a));
  EXPECT_FALSE(equalInConstantTime(a, b));
  EXPECT_FALSE(equalInConstantTime(a, c));
}

TEST(Hmac, RandomBytesDiffer) {
  EXPECT_NE(makeNonce(), makeNonce());
  EXPECT_NE(Secret::generate().hex(), Secret::generate().hex());
  EXPECT_EQ(Secret::generate().hex().size(), 2 * Secret::kGeneratedBytes);
}

TEST(Secret, ParsesHexAndRefusesBadTextWithoutEchoingIt) {
  const std::string text = "00112233445566778899aabbccddeeff";
  EXPECT_EQ(Secret::fromHex("  " + text + "\n", "AXON_JOB_KEY").hex(), text);
  EXPECT_EQ(Secret::fromHex("00112233445566778899AABBCCDDEEFF", "k").hex(), text);
  for (const std::string bad : {"0011223344556677889", "zz112233445566778899aabbccddeeff", "0011"}) {
    try {
      Secret::fromHex(bad, "AXON_JOB_KEY");
      FAIL() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("AXON_JOB_KEY"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find(bad), std::string::npos) << "the key text must not be echoed: " << e.what();
    }
  }
}

class KeyFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("axon-secret-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(KeyFile, WritesMode0600AndReadsBack) {
  const auto path = (dir_ / "job.key").string();
  const Secret key = Secret::generate();
  ::umask(0);  // the file must still be 0600
  key.writeFile(path);
  ::umask(022);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(Secret::fromFile(path).hex(), key.hex());
  // Never replaces an existing file.
  EXPECT_THROW(Secret::generate().writeFile(path), SystemError);
  EXPECT_EQ(Secret::fromFile(path).hex(), key.hex());
}

TEST_F(KeyFile, RefusesAFileOthersMayRead) {
  const auto path = (dir_ / "open.key").string();
  Secret::generate().writeFile(path);
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  try {
    Secret::fromFile(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::PermissionDenied);
    EXPECT_NE(std::string(e.what()).find("0644"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_F(KeyFile, RefusesALink) {
  const auto target = (dir_ / "real.key").string();
  const auto link = (dir_ / "link.key").string();
  Secret::generate().writeFile(target);
  std::filesystem::create_symlink(target, link);
  EXPECT_THROW(Secret::fromFile(link), SystemError);
  EXPECT_THROW(Secret::generate().writeFile(link), SystemError);
}

TEST(Proof, DependsOnKeyLabelAndTranscript) {
  const Secret a = Secret::generate(), b = Secret::generate();
  std::vector<std::uint8_t> transcript;
  const Nonce server = makeNonce(), client = makeNonce();
  appendTranscript(transcript, server);
  appendTranscript(transcript, client);
  const Digest p = proveKey(a, "axon-store/1 client", transcript);
  EXPECT_EQ(p, proveKey(a, "axon-store/1 client", transcript));
  EXPECT_NE(p, proveKey(b, "axon-store/1 client", transcript));
  EXPECT_NE(p, proveKey(a, "axon-store/1 server", transcript));
  transcript.back() ^= 1;
  EXPECT_NE(p, proveKey(a, "axon-store/1 client", transcript));
  EXPECT_THROW(proveKey(Secret{}, "x", transcript), Error);
}

}  // namespace
}  // namespace axon
