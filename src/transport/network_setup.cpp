#include "transport/network_setup.hpp"

#include "bootstrap/blob.hpp"
#include "bootstrap/bootstrap.hpp"
#include "bootstrap/setup_step.hpp"

namespace axon {
namespace {

struct NetworkCard {
  std::string version;        // "1.22.0": every PE must run the same
  std::string library;        // "UCX 1.22.0 (/path/libucp.so.0)", for messages
  std::string address;        // the worker's address
  std::vector<std::string> registrations;  // one per heap

  std::string encode() const {
    wire::BlobWriter w(wire::BlobKind::NetworkCard);
    w.str(version).str(library).str(address).u32(static_cast<std::uint32_t>(registrations.size()));
    for (const auto& r : registrations) w.str(r);
    return w.take();
  }
  static NetworkCard decode(const std::string& blob, const std::string& origin) {
    return wire::decodeBlob(blob, wire::BlobKind::NetworkCard, origin, [](wire::ByteReader& in) {
      NetworkCard c;
      c.version = in.str();
      c.library = in.str();
      c.address = in.str();
      const std::uint32_t n = in.count(4);
      for (std::uint32_t i = 0; i < n; ++i) c.registrations.push_back(in.str());
      return c;
    });
  }
};

}  // namespace

std::unique_ptr<NetworkTransport> connectNetwork(Bootstrap& boot, const NetworkSetup& setup,
                                                 const std::vector<bool>& nodeLocal,
                                                 const std::vector<std::string>& nodeNames,
                                                 const std::vector<const HeapSpace*>& heaps) {
  const int me = setup.myPe;
  std::unique_ptr<NetworkTransport> net;
  NetworkCard mine;
  SetupStep publish(boot, "network", boot.worldRanks(), "joining the nodes over UCX");
  try {
    net = makeNetworkTransport(setup);
    mine.version = net->version();
    mine.library = net->describe();
    mine.address = net->address();
    for (const HeapSpace* heap : heaps) mine.registrations.push_back(net->registration(*heap, 0));
  } catch (const Error& e) {
    publish.fail(e);
  }
  const auto all = publish.finish(mine.encode());
  std::vector<NetworkCard> cards;
  for (int pe = 0; pe < setup.nPes; ++pe) cards.push_back(NetworkCard::decode(all[pe], publish.originOf(pe)));
  // Every PE sees every card, so every PE refuses a mix alike.
  for (int pe = 0; pe < setup.nPes; ++pe) {
    if (cards[pe].version != cards[0].version || cards[pe].registrations.size() != heaps.size()) {
      throw Error(ErrorCode::Unsupported,
                  "PE " + std::to_string(me) + ": the PEs run different UCX versions: PE 0 (node " + nodeNames[0] +
                      ") has " + cards[0].library + ", PE " + std::to_string(pe) + " (node " + nodeNames[pe] + ") has " +
                      cards[pe].library + "; every node must load the same UCX");
    }
  }

  SetupStep connect(boot, "network-connect", boot.worldRanks(), "connecting to the PEs on other nodes");
  try {
    for (int pe = 0; pe < setup.nPes; ++pe) {
      if (!nodeLocal[pe]) net->connect(pe, cards[pe].address, nodeNames[pe]);
    }
    net->finishConnecting();
    for (int pe = 0; pe < setup.nPes; ++pe) {
      if (nodeLocal[pe]) continue;
      for (const auto& reg : cards[pe].registrations) {
        if (!reg.empty()) net->acceptRegistration(pe, reg, publish.originOf(pe));
      }
    }
  } catch (const Error& e) {
    connect.fail(e);
  }
  connect.finish();
  return net;
}

}  // namespace axon
