// The one-sided conformance suite (onesided_conformance.cpp) in the GPU suite's build: the same
// tests, with device memory outside the heaps (cudaMalloc) as one more kind of local buffer.
#define AXON_CONFORMANCE_CUDA 1
#include "onesided_conformance.cpp"
