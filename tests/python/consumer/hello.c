/* A C program as a user of the installed package builds it: `cc hello.c $(axon config --cflags
 * --libs)`, or through axon.pc. It joins (a world of one when started alone), puts a value into its
 * own symmetric memory and reads it back; exit 0 and one line on success. */
#include <axon/axon.h>
#include <stdint.h>
#include <stdio.h>

static int check(axon_status_t st, const char* what) {
  if (st != AXON_SUCCESS) {
    fprintf(stderr, "%s: %s: %s\n", what, axon_status_name(st), axon_last_error());
    return 1;
  }
  return 0;
}

int main(void) {
  int me = -1, n = 0;
  int64_t* word = NULL;
  int64_t value = 4242;
  if (check(axon_init(), "axon_init") || check(axon_my_pe(&me), "axon_my_pe") ||
      check(axon_n_pes(&n), "axon_n_pes") ||
      check(axon_calloc(1, sizeof(int64_t), (void**)&word), "axon_calloc") ||
      check(axon_put(word, &value, sizeof value, me), "axon_put") ||
      check(axon_barrier_all(), "axon_barrier_all"))
    return 1;
  if (*word != value) {
    fprintf(stderr, "read %lld back, expected %lld\n", (long long)*word, (long long)value);
    return 1;
  }
  printf("hello from PE %d of %d: %lld\n", me, n, (long long)*word);
  if (check(axon_free(word), "axon_free") || check(axon_finalize(), "axon_finalize")) return 1;
  return 0;
}
