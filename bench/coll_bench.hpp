// The collective tests of axon_bench (coll_bench.cpp).
#pragma once

namespace axon::bench {

// allreduce, broadcast, reduce, allgather, reduce_scatter, alltoall
bool isCollectiveTest(const char* name);
// argv[1] is the test; returns the exit status.
int runCollectiveBench(int argc, char** argv);

}  // namespace axon::bench
