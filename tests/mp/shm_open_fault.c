/* A test shim, preloaded (LD_PRELOAD) into the PEs of a multi-process test: shm_open of an object
 * another process made (no O_CREAT: a peer's segment) fails with EACCES on one PE, for names that
 * contain a given part. It stands in for a failure that real machines give rarely (a /dev/shm
 * that refuses a peer's object) so that tests can check every PE hears of it at once.
 *   FAULT_SHM_OPEN_RANK  the AXON_RANK that fails
 *   FAULT_SHM_OPEN_NAME  the part of the name that fails ("-ws": collective workspaces) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int shm_open(const char* name, int oflag, mode_t mode) {
  static int (*real)(const char*, int, mode_t);
  if (!real) real = (int (*)(const char*, int, mode_t))dlsym(RTLD_NEXT, "shm_open");
  const char* rank = getenv("FAULT_SHM_OPEN_RANK");
  const char* part = getenv("FAULT_SHM_OPEN_NAME");
  const char* me = getenv("AXON_RANK");
  if (rank && part && me && !(oflag & O_CREAT) && strcmp(rank, me) == 0 && strstr(name, part)) {
    errno = EACCES;
    return -1;
  }
  return real(name, oflag, mode);
}
