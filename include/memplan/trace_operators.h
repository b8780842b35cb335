/* trace_operators.h — operator attribution for libmemplan_trace.so.
 *
 * A program that knows which operator (layer, kernel, op) it is running can
 * tell the tracer, and `memplan trace-info` then ranks operators by the bytes
 * they allocated. Each thread keeps a stack: an allocation is attributed to
 * the innermost operator entered and not yet exited on its thread. The
 * records take no sequence number, so ticks, iterations and extracted
 * problems are the same as without them.
 *
 * For libtorch this is done by memplan's RecordFunction recorder
 * (src/torch/operator_recorder.h). The symbols exist only while the tracer is
 * preloaded: look them up with dlsym(RTLD_DEFAULT, ...) or declare them weak.
 * None allocates through malloc or takes a lock; each costs about as much as
 * one traced malloc. */
#ifndef MEMPLAN_TRACE_OPERATORS_H_
#define MEMPLAN_TRACE_OPERATORS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Names operator `id` (0 to 65536; the caller hands out ids). Call once per
 * id, before or after its first enter; names are cut at 255 bytes. */
void memplan_trace_operator_name(uint32_t id, const char* name);

/* The calling thread starts running operator `id` (nested in whatever it runs). */
void memplan_trace_operator_enter(uint32_t id);

/* The calling thread's innermost operator has ended. An exit without a
 * matching enter is ignored. */
void memplan_trace_operator_exit(void);

#ifdef __cplusplus
}
#endif

#endif /* MEMPLAN_TRACE_OPERATORS_H_ */
