/* ork/trace.h -- a Chrome/Perfetto trace-event timeline of NPU submits (one track per NPU core)
 * and of caller phases (one track per thread). Process-wide; off unless started. Events are
 * buffered in memory and written as JSON ({"traceEvents": [...]}, complete "X" events, µs) by
 * ork_trace_stop. Open the file in ui.perfetto.dev or chrome://tracing.
 *
 *   ork_trace_start("run.json");
 *   ork_trace_begin("prep"); ...; ork_trace_end();       caller phases, nestable per thread
 *   ... NPU submits are recorded by libork itself ...
 *   ork_trace_stop();
 *
 * Not here: sampling, counters, anything that costs more than a clock read when tracing is off. */
#ifndef ORK_TRACE_H
#define ORK_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Start recording (clears earlier events); the file is written by ork_trace_stop. */
int ork_trace_start(const char *path);
/* Stop and write the file; returns 0 or ORK_EIO with a message. No-op (0) when not started. */
int ork_trace_stop(void);
bool ork_trace_enabled(void);

/* Caller phases on the calling thread; `name` is copied (first 31 bytes). Up to 16 nested. */
void ork_trace_begin(const char *name);
void ork_trace_end(void);

/* One complete event on track (`pid`, `tid`) from t0 to t1 (CLOCK_MONOTONIC ns). libork
 * records NPU submits with pid ORK_TRACE_PID_NPU and tid = core; callers may add their own. */
#define ORK_TRACE_PID_NPU 1
#define ORK_TRACE_PID_HOST 2
#define ORK_TRACE_TID_ANY_CORE 3   /* NPU track of single-core jobs whose core the kernel picks */
void ork_trace_event(int pid, int tid, const char *name, int64_t t0_ns, int64_t t1_ns);
/* CLOCK_MONOTONIC in ns (the clock of every event). */
int64_t ork_trace_now_ns(void);

#ifdef __cplusplus
}
#endif
#endif
