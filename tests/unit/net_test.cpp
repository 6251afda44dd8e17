// parseHostPort: the store address as the user writes it in AXON_STORE_ADDR (or as a launcher's
// variables imply it). Malformed addresses fail early, naming the text and where it came from.
#include <gtest/gtest.h>

#include <string>

#include "core/net.hpp"
#include "expect_error.hpp"

namespace axon::net {
namespace {

TEST(ParseHostPort, HostAndPort) {
  HostPort hp = parseHostPort("127.0.0.1:29500", "test");
  EXPECT_EQ(hp.host, "127.0.0.1");
  EXPECT_EQ(hp.port, 29500);
  EXPECT_EQ(hp.str(), "127.0.0.1:29500");
}

TEST(ParseHostPort, PortZeroMeansAnyFreePort) {
  HostPort hp = parseHostPort("host:0", "test");
  EXPECT_EQ(hp.host, "host");
  EXPECT_EQ(hp.port, 0);
}

TEST(ParseHostPort, HighestPort) { EXPECT_EQ(parseHostPort("h:65535", "test").port, 65535); }

TEST(ParseHostPort, BracketedIpv6LosesItsBrackets) {
  HostPort hp = parseHostPort("[::1]:80", "test");
  EXPECT_EQ(hp.host, "::1");
  EXPECT_EQ(hp.port, 80);
}

TEST(ParseHostPort, MalformedAddressesAreRejected) {
  for (std::string bad : {"nohost", ":80", "h:", "h:99999", "h:65536", "h:12x", "h:-1", "h:+80",
                          "h: 80", ""}) {
    SCOPED_TRACE("'" + bad + "'");
    std::string msg = test::errorMessageOf([&] { parseHostPort(bad, "AXON_STORE_ADDR"); },
                                           ErrorCode::InvalidArgument);
    EXPECT_TRUE(test::contains(msg, "'" + bad + "'"));
    EXPECT_TRUE(test::contains(msg, "AXON_STORE_ADDR"));
  }
}

}  // namespace
}  // namespace axon::net
