// The two-sided tests of axon_bench (p2p_bench.cpp): OSU's latency, bw, bibw and a ping-ping on
// axon::send/recv/isend/irecv.
#pragma once

namespace axon::bench {

// p2p-latency, p2p-bw, p2p-bibw, p2p-pingping
bool isP2pTest(const char* name);
// argv[1] is the test; returns the exit status.
int runP2pBench(int argc, char** argv);

}  // namespace axon::bench
