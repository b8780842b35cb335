/* stress.c — many threads allocating at once under the tracer, in waves (so
 * threads end and new ones reuse their chunks), optionally while the main
 * thread sends them mark and flush signals. Each worker's calls are a pure
 * function of its number (splitmix64), so preload_test.cc recomputes them
 * and checks the trace holds exactly those calls, in order, for every thread.
 *
 * usage: stress THREADS_PER_WAVE WAVES OPS SIGNALS(0|1)
 * prints one line per worker: "worker <k> tid <tid>". */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memplan/mark.h"

#pragma weak memplan_mark

/* Without the tracer (memplan_mark unresolved) the program still runs. */
static void mark(void) {
  if (memplan_mark) memplan_mark();
}

enum { kSlots = 64, kMaxWorkers = 1024 };

static int ops_per_worker;
static long tids[kMaxWorkers];
static atomic_int running;

static uint64_t splitmix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Keep in step with SimulateStressWorker in preload_test.cc. */
static void* worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  tids[k] = (long)syscall(SYS_gettid);
  uint64_t rng = (uint64_t)k;
  unsigned char* slot[kSlots] = {0};
  size_t size[kSlots] = {0};
  for (int i = 0; i < ops_per_worker; ++i) {
    const uint64_t r = splitmix64(&rng);
    const int s = (int)((r >> 8) % kSlots);
    const size_t n = 1 + (size_t)((r >> 16) % 4096);
    switch (r % 8) {
      case 0:
      case 1:
      case 2:
      case 3:
        free(slot[s]); /* free(NULL) is not an event */
        slot[s] = malloc(n);
        size[s] = n;
        break;
      case 4:
      case 5:
        free(slot[s]);
        slot[s] = NULL;
        break;
      case 6:
        slot[s] = realloc(slot[s], n);
        size[s] = n;
        break;
      default:
        free(slot[s]);
        slot[s] = calloc(1, n);
        size[s] = n;
        break;
    }
    if (slot[s]) memset(slot[s], k & 0xFF, size[s]); /* touch: a wrong pointer would crash */
  }
  for (int s = 0; s < kSlots; ++s) free(slot[s]);
  atomic_fetch_sub(&running, 1);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: stress THREADS_PER_WAVE WAVES OPS SIGNALS\n");
    return 2;
  }
  const int per_wave = atoi(argv[1]);
  const int waves = atoi(argv[2]);
  ops_per_worker = atoi(argv[3]);
  const int signals = atoi(argv[4]);
  if (per_wave <= 0 || waves <= 0 || per_wave * waves > kMaxWorkers) return 2;
  pthread_t threads[kMaxWorkers];
  for (int w = 0; w < waves; ++w) {
    mark();
    atomic_store(&running, per_wave);
    for (int t = 0; t < per_wave; ++t) {
      const int k = w * per_wave + t;
      pthread_create(&threads[k], NULL, worker, (void*)(intptr_t)k);
    }
    /* Interrupt the workers while they allocate: marks from signal handlers
     * and flushes that must skip chunks whose lock they cannot take. */
    for (int round = 0; signals && atomic_load(&running) > 0 && round < 200; ++round) {
      for (int t = 0; t < per_wave; ++t) {
        pthread_kill(threads[w * per_wave + t], (round % 2) ? SIGUSR1 : SIGUSR2);
      }
      usleep(200);
    }
    for (int t = 0; t < per_wave; ++t) pthread_join(threads[w * per_wave + t], NULL);
  }
  mark();
  for (int k = 0; k < per_wave * waves; ++k) printf("worker %d tid %ld\n", k, tids[k]);
  return 0;
}
