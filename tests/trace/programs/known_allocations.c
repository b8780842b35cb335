/* known_allocations.c — makes a fixed sequence of allocations between marks
 * and prints every pointer it got, so that preload_test.cc can check that the
 * tracer recorded exactly what happened.
 *
 *   iteration 1: every interposed allocation call once, in a fixed order,
 *                then frees; one block (77 bytes) escapes to iteration 4
 *   iteration 2: kThreads threads, each kPerThread mallocs then frees
 *   iteration 3: fork; the child allocates 12345 bytes and exits; the parent
 *                waits, then allocates and frees 54321 bytes
 *   iteration 4: frees the escaped block, then prints (open: ends at exit)
 *
 * Output lines: "p<i> <pointer>", "thread <k> tid <tid>", "t<k>.<i> <pointer>". */
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "memplan/mark.h"

#pragma weak memplan_mark

/* Without the tracer (memplan_mark unresolved) the program still runs. */
static void mark(void) {
  if (memplan_mark) memplan_mark();
}

enum { kThreads = 3, kPerThread = 50 };

static void* worker_pointers[kThreads][kPerThread];
static long worker_tids[kThreads];

static void* worker(void* arg) {
  const int k = (int)(intptr_t)arg;
  worker_tids[k] = (long)syscall(SYS_gettid);
  for (int i = 0; i < kPerThread; ++i) worker_pointers[k][i] = malloc((size_t)(1000 * (k + 1) + i));
  for (int i = 0; i < kPerThread; ++i) free(worker_pointers[k][i]);
  return NULL;
}

int main(void) {
  void* p[11] = {0};
  /* volatile: compilers turn realloc(NULL, n) into malloc(n) */
  void* volatile null_pointer = NULL;

  mark();
  p[0] = malloc(100);
  p[1] = calloc(10, 20);
  p[2] = realloc(p[0], 1000);
  p[3] = realloc(null_pointer, 50);
  if (posix_memalign(&p[4], 64, 1000) != 0) return 2;
  p[5] = aligned_alloc(256, 512);
  p[6] = memalign(128, 300);
  p[7] = valloc(5000);
  p[8] = pvalloc(100);
  p[9] = reallocarray(null_pointer, 7, 9);
  for (int i = 1; i <= 9; ++i) free(p[i]);
  free(NULL); /* not an event */
  p[10] = malloc(77);

  mark();
  pthread_t threads[kThreads];
  for (int k = 0; k < kThreads; ++k) pthread_create(&threads[k], NULL, worker, (void*)(intptr_t)k);
  for (int k = 0; k < kThreads; ++k) pthread_join(threads[k], NULL);

  mark();
  fflush(stdout);
  const pid_t child = fork();
  if (child == 0) {
    free(malloc(12345));
    exit(0); /* runs exit handlers: the child must not write the parent's trace */
  }
  int status = 0;
  waitpid(child, &status, 0);
  free(malloc(54321));

  mark();
  free(p[10]);
  for (int i = 0; i <= 10; ++i) printf("p%d %p\n", i, p[i]);
  for (int k = 0; k < kThreads; ++k) {
    printf("thread %d tid %ld\n", k, worker_tids[k]);
    for (int i = 0; i < kPerThread; ++i) printf("t%d.%d %p\n", k, i, worker_pointers[k][i]);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 3;
}
