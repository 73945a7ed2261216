/* trace.c -- the trace-event recorder of <ork/trace.h>: a mutex-guarded growing array of complete
 * events, per-thread phase stacks, and the Chrome/Perfetto JSON writer. It records; it never
 * decides anything about scheduling. */
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/text.h>
#include <ork/trace.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define TRACE_NAME_MAX 32       /* bytes of an event name kept (with the NUL) */
#define TRACE_DEPTH 16          /* nested caller phases per thread */
#define TRACE_PATH_MAX 4096

struct trace_ev {
    char name[TRACE_NAME_MAX];
    int pid, tid;
    int64_t t0, t1;
};

static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool trace_on;
static struct trace_ev *trace_ev;
static size_t trace_n, trace_cap;
static char trace_path[TRACE_PATH_MAX];
static int64_t trace_epoch;

static _Thread_local struct {
    int depth;
    int64_t t0[TRACE_DEPTH];
    char name[TRACE_DEPTH][TRACE_NAME_MAX];
} phase;

int64_t ork_trace_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

bool ork_trace_enabled(void)
{
    return atomic_load_explicit(&trace_on, memory_order_relaxed);
}

int ork_trace_start(const char *path)
{
    if (!path || !*path)
        return ork_errorf(ORK_EINVAL, "trace: no output path");
    if (strlen(path) >= sizeof trace_path)
        return ork_errorf(ORK_EINVAL, "trace: path longer than %zu bytes", sizeof trace_path - 1);
    pthread_mutex_lock(&trace_lock);
    snprintf(trace_path, sizeof trace_path, "%s", path);
    trace_n = 0;
    trace_epoch = ork_trace_now_ns();
    atomic_store(&trace_on, true);
    pthread_mutex_unlock(&trace_lock);
    return 0;
}

void ork_trace_event(int pid, int tid, const char *name, int64_t t0_ns, int64_t t1_ns)
{
    if (!ork_trace_enabled())
        return;
    pthread_mutex_lock(&trace_lock);
    if (trace_n == trace_cap) {
        size_t cap = trace_cap ? trace_cap * 2 : 1024;
        struct trace_ev *ev = ork_realloc(trace_ev, cap * sizeof *ev);
        if (!ev) {
            pthread_mutex_unlock(&trace_lock);
            return;                     /* dropping an event is better than failing a run */
        }
        trace_ev = ev;
        trace_cap = cap;
    }
    struct trace_ev *e = &trace_ev[trace_n++];
    snprintf(e->name, sizeof e->name, "%s", name ? name : "?");
    e->pid = pid;
    e->tid = tid;
    e->t0 = t0_ns;
    e->t1 = t1_ns < t0_ns ? t0_ns : t1_ns;
    pthread_mutex_unlock(&trace_lock);
}

void ork_trace_begin(const char *name)
{
    if (!ork_trace_enabled())
        return;
    if (phase.depth >= TRACE_DEPTH) {
        phase.depth++;                  /* counted so ends still pair up */
        return;
    }
    snprintf(phase.name[phase.depth], TRACE_NAME_MAX, "%s", name ? name : "?");
    phase.t0[phase.depth++] = ork_trace_now_ns();
}

void ork_trace_end(void)
{
    if (phase.depth <= 0)
        return;
    phase.depth--;
    if (phase.depth >= TRACE_DEPTH || !ork_trace_enabled())
        return;
    ork_trace_event(ORK_TRACE_PID_HOST, (int)syscall(SYS_gettid), phase.name[phase.depth],
                    phase.t0[phase.depth], ork_trace_now_ns());
}

int ork_trace_stop(void)
{
    if (!ork_trace_enabled())
        return 0;
    atomic_store(&trace_on, false);
    pthread_mutex_lock(&trace_lock);
    FILE *f = fopen(trace_path, "w");
    if (!f) {
        pthread_mutex_unlock(&trace_lock);
        return ork_errorf(ORK_EIO, "trace: cannot write %s", trace_path);
    }
    fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"NPU\"}},\n",
            ORK_TRACE_PID_NPU);
    fprintf(f, "{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"host\"}}",
            ORK_TRACE_PID_HOST);
    bool named[8] = { false };
    for (size_t i = 0; i < trace_n; i++) {
        const struct trace_ev *e = &trace_ev[i];
        if (e->pid == ORK_TRACE_PID_NPU && e->tid >= 0 && e->tid < 8 && !named[e->tid]) {
            named[e->tid] = true;
            if (e->tid == ORK_TRACE_TID_ANY_CORE)
                fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                        "\"args\":{\"name\":\"NPU (kernel's core)\"}}", e->pid, e->tid);
            else
                fprintf(f, ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\","
                        "\"args\":{\"name\":\"NPU core %d\"}}", e->pid, e->tid, e->tid);
        }
        fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":\"",
                e->pid, e->tid, (double)(e->t0 - trace_epoch) / 1e3, (double)(e->t1 - e->t0) / 1e3);
        ork_json_put_str(f, e->name);
        fprintf(f, "\"}");
    }
    fprintf(f, "\n]}\n");
    int bad = ferror(f);
    bad |= fclose(f);
    trace_n = 0;
    pthread_mutex_unlock(&trace_lock);
    if (bad)
        return ork_errorf(ORK_EIO, "trace: error writing %s", trace_path);
    return 0;
}
