/* mark.h — the C interface a program uses to talk to memplan's preloaded
 * libraries: iteration marks and trace flushing.
 *
 * The symbols are defined by libmemplan_trace.so (the tracer) and, with the
 * same meaning, by memplan's serving drop-in, so a program marks its
 * iterations once and works with either. A program that must also run
 * without them declares the symbols weak and calls them only when present:
 *
 *     #include <memplan/mark.h>
 *     #pragma weak memplan_mark
 *     ...
 *     for (;;) { if (memplan_mark) memplan_mark(); run_one_iteration(); }
 *
 * From Python, when the library is preloaded:
 *
 *     import ctypes; mark = ctypes.CDLL(None).memplan_mark
 *     for batch in data: mark(); model(batch)
 *     mark()   # close the last iteration
 *
 * Both functions are thread-safe, take no locks on the allocation path, and
 * never allocate through malloc. */
#ifndef MEMPLAN_MARK_H_
#define MEMPLAN_MARK_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks an iteration boundary: the events between two marks are one
 * iteration. Costs about as much as one traced malloc, plus one small write
 * to the trace file. */
void memplan_mark(void);

/* Marks an iteration boundary, as memplan_mark does, and names the
 * iteration that starts with a key of the program's choosing (an input
 * shape, train vs eval): iterations with the same key are one variant, which
 * the serving drop-in learns and plans on its own and serves from the
 * variant's plan from its first request. memplan_mark() is key 0. The tracer
 * treats it as memplan_mark. Declare it weak, as above, to run without
 * memplan; from Python: ctypes.CDLL(None).memplan_mark_key(ctypes.c_uint64(k)). */
void memplan_mark_key(uint64_t key);

/* An iteration boundary for the calling thread only, for programs whose
 * threads each serve requests of their own (a web server's workers): a
 * plain mark is a boundary for every thread, and would cut the other
 * threads' requests in two. The serving drop-in defines these two; the
 * tracer does not (a trace's iterations are the process's), so look them up
 * at run time: ctypes.CDLL(None).memplan_mark_thread, AttributeError when
 * absent. memplan_mark_thread_key names the variant that starts, as
 * memplan_mark_key does. */
void memplan_mark_thread(void);
void memplan_mark_thread_key(uint64_t key);

/* Writes every event recorded so far to the trace file (normally written in
 * blocks as they fill, and in full at exit). Useful before a program ends in a
 * way that skips exit handlers (_exit, exec, a fatal signal). */
void memplan_trace_flush(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_MARK_H_ */
