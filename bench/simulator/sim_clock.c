/* [simclock] The simulated clock for the cluster simulator's redis-server, loaded
 * with LD_PRELOAD (bench/simulator/broker_queue.cpp): the wall clock that redis-server
 * reads (gettimeofday, time, clock_gettime of CLOCK_REALTIME) is the simulator's
 * clock, so the broker's scripts see simulated time in Redis TIME: started_us and
 * the end of an attempt (its resource-seconds), the decay of the fair order's use,
 * key TTLs. The monotonic clocks stay real: redis-server's event loop and timers run
 * as usual.
 *
 * The clock: OJS_SIM_CLOCK names a file whose first 8 bytes are the simulated time in
 * microseconds since the epoch (an int64, native order), written by the simulator
 * through its own shared mapping before each call into Redis and never moved back.
 * A process that loads this without a readable clock file aborts: figures measured
 * on a wall clock the simulation does not drive would be wrong, silently.
 *
 * Not libfaketime: 0.9.10 deadlocks when Debian's redis-server starts (jemalloc calls
 * clock_gettime during its initialisation, libfaketime's lazy initialisation calls
 * dlsym, whose error path allocates: jemalloc's init lock is taken twice). Nothing here
 * allocates or looks a symbol up: other clocks go to the system call directly. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const int64_t* clock_map;

static int64_t sim_now_us(void) {
  const int64_t* c = __atomic_load_n(&clock_map, __ATOMIC_ACQUIRE);
  if (!c) {
    const char* path = getenv("OJS_SIM_CLOCK");
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd < 0) abort();
    void* m = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) abort();
    c = (const int64_t*)m;
    __atomic_store_n(&clock_map, c, __ATOMIC_RELEASE);  /* two threads mapping at once: one mapping leaks */
  }
  return __atomic_load_n(c, __ATOMIC_ACQUIRE);
}

int clock_gettime(clockid_t id, struct timespec* ts) {
  if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE) return (int)syscall(SYS_clock_gettime, id, ts);
  const int64_t us = sim_now_us();
  ts->tv_sec = (time_t)(us / 1000000);
  ts->tv_nsec = (long)(us % 1000000) * 1000;
  return 0;
}

int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  (void)tz;
  const int64_t us = sim_now_us();
  tv->tv_sec = (time_t)(us / 1000000);  /* tv: declared nonnull by glibc */
  tv->tv_usec = (suseconds_t)(us % 1000000);
  return 0;
}

time_t time(time_t* out) {
  const time_t s = (time_t)(sim_now_us() / 1000000);
  if (out) *out = s;
  return s;
}
