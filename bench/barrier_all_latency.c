/* barrier_all latency through the C API: `axon run -n N build/bench/barrier_all_latency [ITERS]`.
 * PE 0 prints the best of 5 timed loops in microseconds per barrier_all (docs/performance.md,
 * "the team barrier's call-order check"). 1,000 untimed barriers first wake idle cores. */
#include <axon/axon.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int barriers(int count) {
  for (int i = 0; i < count; ++i) {
    if (axon_barrier_all() != AXON_SUCCESS) return 0;
  }
  return 1;
}

int main(int argc, char** argv) {
  const int iters = argc > 1 ? atoi(argv[1]) : 10000;
  if (iters < 1) {
    fprintf(stderr, "usage: barrier_all_latency [ITERS >= 1]\n");
    return 2;
  }
  if (axon_init() != AXON_SUCCESS) {
    fprintf(stderr, "axon_init failed: %s\n", axon_last_error());
    return 1;
  }
  int me = 0;
  axon_my_pe(&me);
  double best = 1e30;
  int ok = barriers(1000);
  for (int rep = 0; ok && rep < 5; ++rep) {
    const double t0 = now();
    ok = barriers(iters);
    const double us = (now() - t0) / iters * 1e6;
    if (us < best) best = us;
  }
  if (!ok) {
    fprintf(stderr, "PE %d: barrier_all failed: %s\n", me, axon_last_error());
    return 1;
  }
  if (me == 0) printf("barrier_all best-of-5 %.3f us (%d per loop)\n", best, iters);
  axon_finalize();
  return 0;
}
