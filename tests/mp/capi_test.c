/* The C API from C, across PEs: run as `axon run -n N capi_test`. Exits non-zero on any failure. */
#include <axon/axon.h>

#include <stdio.h>
#include <string.h>

static int failures = 0;

#define CHECK(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,        \
              __LINE__, #cond, axon_last_error());                                  \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

int main(void) {
  int me = -1, n = 0, i;
  CHECK(axon_my_pe(&me) == AXON_ERR_NOT_INITIALIZED);
  CHECK(axon_init() == AXON_SUCCESS);
  CHECK(axon_init() == AXON_ERR_ALREADY_INITIALIZED);
  CHECK(axon_my_pe(&me) == AXON_SUCCESS && axon_n_pes(&n) == AXON_SUCCESS);
  int right = (me + 1) % n, left = (me + n - 1) % n;

  int* buf = NULL;
  uint64_t* sig = NULL;
  CHECK(axon_calloc(64, sizeof(int), (void**)&buf) == AXON_SUCCESS && buf != NULL);
  CHECK(axon_calloc(1, sizeof(uint64_t), (void**)&sig) == AXON_SUCCESS && sig != NULL);
  int src[64];
  for (i = 0; i < 64; ++i) src[i] = me * 100 + i;
  CHECK(axon_put_signal(buf, src, sizeof src, sig, 1, AXON_SIGNAL_ADD, right) == AXON_SUCCESS);
  uint64_t seen = 0;
  CHECK(axon_signal_wait_until(sig, AXON_CMP_GE, 1, &seen) == AXON_SUCCESS && seen == 1);
  for (i = 0; i < 64; ++i) CHECK(buf[i] == left * 100 + i);

  int64_t* counter = NULL;
  CHECK(axon_calloc(1, sizeof(int64_t), (void**)&counter) == AXON_SUCCESS);
  int64_t before = -1;
  CHECK(axon_atomic_fetch_add_int64(counter, 2, 0, &before) == AXON_SUCCESS && before >= 0);
  CHECK(axon_barrier_all() == AXON_SUCCESS);
  int64_t total = 0;
  CHECK(axon_atomic_fetch_int64(counter, 0, &total) == AXON_SUCCESS && total == 2 * n);

  /* Two-sided messages: a ring of a small and a large message, a truncated receive, probes. */
  {
    static double out[20000], in[20000];
    for (i = 0; i < 20000; ++i) out[i] = me * 1e6 + i;
    axon_request_t rq = NULL, sq = NULL;
    axon_msg_status_t st;
    CHECK(axon_irecv(in, sizeof in, left, 3, AXON_TEAM_WORLD, &rq) == AXON_SUCCESS && rq != NULL);
    CHECK(axon_isend(out, sizeof out, right, 3, AXON_TEAM_WORLD, &sq) == AXON_SUCCESS);
    CHECK(axon_wait(&rq, &st) == AXON_SUCCESS && rq == NULL);
    CHECK(st.source == left && st.tag == 3 && st.bytes == sizeof out);
    for (i = 0; i < 20000; ++i) CHECK(in[i] == left * 1e6 + i);
    while (axon_test(&sq, NULL) == AXON_IN_PROGRESS) {
    }
    CHECK(sq == NULL);
    CHECK(axon_wait(&sq, NULL) == AXON_ERR_INVALID_ARGUMENT);
    CHECK(axon_send(out, 16, right, 4, AXON_TEAM_WORLD) == AXON_SUCCESS);
    int found = 0;
    CHECK(axon_probe(AXON_ANY_SOURCE, 4, AXON_TEAM_WORLD, &st) == AXON_SUCCESS && st.bytes == 16);
    CHECK(axon_iprobe(left, 4, AXON_TEAM_WORLD, &found, &st) == AXON_SUCCESS && found == 1);
    CHECK(axon_recv(in, 8, left, 4, AXON_TEAM_WORLD, &st) == AXON_ERR_TRUNCATED);
    CHECK(strstr(axon_last_error(), "has 16 bytes but the receive buffer holds only 8") != NULL);
    CHECK(axon_iprobe(left, 4, AXON_TEAM_WORLD, &found, &st) == AXON_SUCCESS && found == 0);
    CHECK(axon_send(out, 8, n, 0, AXON_TEAM_WORLD) == AXON_ERR_INVALID_PE);
    CHECK(axon_recv(in, 8, AXON_ANY_SOURCE, AXON_ANY_TAG, 999, &st) == AXON_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(axon_status_name(AXON_ERR_TRUNCATED), "Truncated") == 0);
  }
  {
    /* A team's own bound on its waits: set, read back, refused when not a bound, restored. */
    double was = 0, now = 0;
    CHECK(axon_team_timeout(AXON_TEAM_WORLD, &was) == AXON_SUCCESS && was > 0);
    CHECK(axon_team_set_timeout(AXON_TEAM_WORLD, 7.5) == AXON_SUCCESS);
    CHECK(axon_team_timeout(AXON_TEAM_WORLD, &now) == AXON_SUCCESS && now == 7.5);
    CHECK(axon_team_set_timeout(AXON_TEAM_WORLD, -1) == AXON_ERR_INVALID_ARGUMENT);
    CHECK(axon_team_timeout(AXON_TEAM_WORLD, NULL) == AXON_ERR_INVALID_ARGUMENT);
    CHECK(axon_team_set_timeout(AXON_TEAM_WORLD, 0) == AXON_SUCCESS);
    CHECK(axon_team_timeout(AXON_TEAM_WORLD, &now) == AXON_SUCCESS && now == was);
  }

  /* Bad input: a clear status and message, never a crash. */
  CHECK(axon_put(buf, src, sizeof src, n) == AXON_ERR_INVALID_PE);
  CHECK(strstr(axon_last_error(), "is outside the world") != NULL);
  CHECK(axon_put(buf, src, sizeof src + 4, right) == AXON_ERR_OUT_OF_BOUNDS);
  CHECK(axon_put(src, src, 4, right) == AXON_ERR_OUT_OF_BOUNDS);
  CHECK(strcmp(axon_status_name(AXON_ERR_OUT_OF_BOUNDS), "OutOfBounds") == 0);

  /* Teams: the even PEs. */
  axon_team_t evens = AXON_TEAM_INVALID;
  CHECK(axon_team_split_strided(AXON_TEAM_WORLD, 0, 2, (n + 1) / 2, &evens) == AXON_SUCCESS);
  if (me % 2 == 0) {
    int tpe = -1, tn = 0, back = -1;
    CHECK(evens != AXON_TEAM_INVALID);
    CHECK(axon_team_my_pe(evens, &tpe) == AXON_SUCCESS && tpe == me / 2);
    CHECK(axon_team_n_pes(evens, &tn) == AXON_SUCCESS && tn == (n + 1) / 2);
    CHECK(axon_team_translate_pe(evens, tpe, AXON_TEAM_WORLD, &back) == AXON_SUCCESS && back == me);
    CHECK(axon_team_barrier(evens) == AXON_SUCCESS);
    CHECK(axon_team_destroy(evens) == AXON_SUCCESS);
    CHECK(axon_team_barrier(evens) == AXON_ERR_INVALID_ARGUMENT);
  } else {
    CHECK(evens == AXON_TEAM_INVALID);
  }

  /* Teams by colour: odd and even PEs, in reverse order of rank. */
  axon_team_t parity = AXON_TEAM_INVALID;
  CHECK(axon_team_split(AXON_TEAM_WORLD, me % 2, -me, &parity) == AXON_SUCCESS && parity != AXON_TEAM_INVALID);
  {
    int tpe = -1, back = -1;
    CHECK(axon_team_my_pe(parity, &tpe) == AXON_SUCCESS);
    CHECK(axon_team_translate_pe(parity, 0, AXON_TEAM_WORLD, &back) == AXON_SUCCESS);
    CHECK(back % 2 == me % 2 && back >= me);  /* the highest rank of my parity comes first */
    CHECK(axon_team_destroy(parity) == AXON_SUCCESS);
  }

  /* How each PE is reached. */
  char path[64];
  CHECK(axon_path_to(me, path, sizeof path) == AXON_SUCCESS && strcmp(path, "self") == 0);
  CHECK(axon_path_to(right, path, sizeof path) == AXON_SUCCESS && path[0] != 0);
  CHECK(axon_path_to(me, path, 2) == AXON_ERR_INVALID_ARGUMENT);
  CHECK(strstr(axon_last_error(), "needs 5 bytes") != NULL);
  CHECK(axon_path_to(n, path, sizeof path) == AXON_ERR_INVALID_PE);

  /* The GPU calls on the host backend (these tests run with AXON_BACKEND=host): a clear Unsupported. */
  int gpu = -1, ordinal = -1;
  CHECK(axon_gpu_enabled(&gpu) == AXON_SUCCESS && gpu == 0);
  CHECK(axon_gpu_device(&ordinal) == AXON_ERR_UNSUPPORTED);
  CHECK(strstr(axon_last_error(), "AXON_BACKEND=host") != NULL);
  CHECK(axon_put_on_stream(buf, src, sizeof src, right, NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_signal_wait_until_on_stream(sig, AXON_CMP_GE, 1, NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_barrier_all_on_stream(NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_send_on_stream(src, sizeof src, right, AXON_TEAM_WORLD, NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_recv_on_stream(buf, sizeof src, right, AXON_TEAM_WORLD, NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_stream_synchronize(NULL) == AXON_ERR_UNSUPPORTED);
  CHECK(axon_group_start() == AXON_SUCCESS && axon_group_end() == AXON_SUCCESS);
  CHECK(axon_group_end() == AXON_ERR_INVALID_ARGUMENT);
  /* Host symmetric memory: allocated like axon_malloc, on every PE. */
  double* hbuf = NULL;
  CHECK(axon_malloc_host(16 * sizeof(double), (void**)&hbuf) == AXON_SUCCESS && hbuf != NULL);
  double hv[16];
  for (i = 0; i < 16; ++i) hv[i] = me + 0.5 * i;
  CHECK(axon_put(hbuf, hv, sizeof hv, right) == AXON_SUCCESS);
  CHECK(axon_barrier_all() == AXON_SUCCESS);
  for (i = 0; i < 16; ++i) CHECK(hbuf[i] == left + 0.5 * i);
  CHECK(axon_barrier_all() == AXON_SUCCESS);
  CHECK(axon_free(hbuf) == AXON_SUCCESS);

  /* Collectives from C: allreduce, broadcast, allgather; a bad root is named. */
  {
    int64_t mine[5], sum[5], gathered[64];
    float bc[3] = {0, 0, 0};
    for (i = 0; i < 5; ++i) mine[i] = (int64_t)(me + 1) * (i + 1);
    CHECK(axon_allreduce(AXON_TEAM_WORLD, mine, sum, 5, AXON_INT64, AXON_SUM) == AXON_SUCCESS);
    for (i = 0; i < 5; ++i) CHECK(sum[i] == (int64_t)n * (n + 1) / 2 * (i + 1));
    if (me == n - 1) bc[0] = 1.5f, bc[1] = 2.5f, bc[2] = -3.0f;
    CHECK(axon_broadcast(AXON_TEAM_WORLD, bc, bc, 3, AXON_FLOAT32, n - 1) == AXON_SUCCESS);
    CHECK(bc[0] == 1.5f && bc[1] == 2.5f && bc[2] == -3.0f);
    CHECK(axon_allgather(AXON_TEAM_WORLD, mine, gathered, 1, AXON_INT64) == AXON_SUCCESS);
    for (i = 0; i < n && i < 64; ++i) CHECK(gathered[i] == i + 1);
    CHECK(axon_broadcast(AXON_TEAM_WORLD, bc, bc, 3, AXON_FLOAT32, n) == AXON_ERR_INVALID_PE);
    CHECK(strstr(axon_last_error(), "root") != NULL);
    CHECK(axon_barrier(AXON_TEAM_WORLD) == AXON_SUCCESS);
  }

  /* Stream-ordered collectives and the device handle on the host backend: Unsupported, naming
   * why; argument errors are still reported as such first. */
  {
    int64_t mine[4] = {1, 2, 3, 4}, out[64];
    unsigned char handle[AXON_DEVICE_COLL_HANDLE_BYTES + 8];
    CHECK(axon_allreduce_on_stream(AXON_TEAM_WORLD, mine, out, 4, AXON_INT64, AXON_SUM, NULL) == AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "allreduce_on_stream") != NULL);
    CHECK(strstr(axon_last_error(), "stream-ordered collectives need the GPU backend") != NULL);
    CHECK(strstr(axon_last_error(), "AXON_BACKEND=host") != NULL);
    CHECK(axon_broadcast_on_stream(AXON_TEAM_WORLD, mine, out, 4, AXON_INT64, 0, NULL) == AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "broadcast_on_stream") != NULL);
    CHECK(axon_reduce_on_stream(AXON_TEAM_WORLD, mine, out, 4, AXON_INT64, AXON_MAX, n - 1, (void*)0x10) ==
          AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "reduce_on_stream") != NULL);
    CHECK(axon_allgather_on_stream(AXON_TEAM_WORLD, mine, out, 1, AXON_INT64, NULL) == AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "allgather_on_stream") != NULL);
    CHECK(axon_reduce_scatter_on_stream(AXON_TEAM_WORLD, out, mine, 1, AXON_INT64, AXON_SUM, NULL) ==
          AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "reduce_scatter_on_stream") != NULL);
    CHECK(axon_alltoall_on_stream(AXON_TEAM_WORLD, mine, out, 1, AXON_INT64, NULL) == AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "alltoall_on_stream") != NULL);
    CHECK(axon_broadcast_on_stream(AXON_TEAM_WORLD, mine, out, 4, AXON_INT64, n, NULL) == AXON_ERR_INVALID_PE);
    CHECK(strstr(axon_last_error(), "root") != NULL);
    CHECK(axon_allreduce_on_stream(AXON_TEAM_WORLD, mine, out, 4, (axon_datatype_t)42, AXON_SUM, NULL) ==
          AXON_ERR_INVALID_ARGUMENT);
    CHECK(strstr(axon_last_error(), "data type 42") != NULL);
    CHECK(axon_allreduce_on_stream(12345, mine, out, 4, AXON_INT64, AXON_SUM, NULL) == AXON_ERR_INVALID_ARGUMENT);
    CHECK(strstr(axon_last_error(), "not a live team") != NULL);

    CHECK(axon_device_coll_handle_size() == AXON_DEVICE_COLL_HANDLE_BYTES);
    CHECK(axon_device_coll_handle(AXON_TEAM_WORLD, handle, sizeof handle) == AXON_ERR_UNSUPPORTED);
    CHECK(strstr(axon_last_error(), "device_coll_handle") != NULL);
    CHECK(strstr(axon_last_error(), "the GPU backend is off") != NULL);
    CHECK(axon_device_coll_handle(AXON_TEAM_WORLD, handle, AXON_DEVICE_COLL_HANDLE_BYTES - 1) ==
          AXON_ERR_INVALID_ARGUMENT);
    CHECK(strstr(axon_last_error(), "out_bytes") != NULL);
    CHECK(axon_device_coll_handle(AXON_TEAM_WORLD, NULL, sizeof handle) == AXON_ERR_INVALID_ARGUMENT);
    /* The team's collectives still work after the refused calls. */
    CHECK(axon_allreduce(AXON_TEAM_WORLD, mine, out, 4, AXON_INT64, AXON_SUM) == AXON_SUCCESS);
    for (i = 0; i < 4; ++i) CHECK(out[i] == (int64_t)n * (i + 1));
  }

  CHECK(axon_free(counter) == AXON_SUCCESS);
  CHECK(axon_free(sig) == AXON_SUCCESS);
  CHECK(axon_free(buf) == AXON_SUCCESS);
  CHECK(axon_finalize() == AXON_SUCCESS);
  CHECK(axon_barrier_all() == AXON_ERR_NOT_INITIALIZED);
  CHECK(strstr(axon_last_error(), "after finalize") != NULL);
  if (failures == 0) printf("PE %d: C API ok\n", me);
  return failures == 0 ? 0 : 1;
}
