/* twin_trace.c -- what the twin reports: phase names, the Chrome/Perfetto trace-event JSON of
 * the last simulated step (pid 1 = NPU, one thread per NPU core; pid 2 = A76, one thread per
 * CPU core; complete "X" events in µs on the model clock), and step totals added up. */
#include <ork/error.h>
#include <ork/text.h>

#include "twin_timeline.h"

#include <errno.h>
#include <string.h>

#define TWIN_PID_NPU 1
#define TWIN_PID_CPU 2

static const char *const phase_names[ORK_TWIN_PHASE_COUNT] = {
#define ORK_TWIN_PHASE_NAME_(id, name) name,
    ORK_TWIN_PHASES(ORK_TWIN_PHASE_NAME_)
#undef ORK_TWIN_PHASE_NAME_
};

const char *ork_twin_phase_name(enum ork_twin_phase p)
{
    return (unsigned)p < ORK_TWIN_PHASE_COUNT ? phase_names[p] : "?";
}

static void put_meta(FILE *f, bool *first, const char *what, int pid, int tid, const char *name)
{
    fprintf(f, "%s\n{\"ph\":\"M\",\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
            *first ? "" : ",", what, pid, tid, name);
    *first = false;
}

int ork_twin_trace_open(const struct ork_twin *tw, FILE *f)
{
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    char name[32];
    put_meta(f, &first, "process_name", TWIN_PID_NPU, 0, "NPU (model clock)");
    put_meta(f, &first, "process_name", TWIN_PID_CPU, 0, "A76 (model clock)");
    for (int i = 0; i < (int)tw->c.npu_cores; i++) {
        snprintf(name, sizeof name, "npu core %d", i);
        put_meta(f, &first, "thread_name", TWIN_PID_NPU, i, name);
    }
    for (int i = 0; i < (int)tw->c.cpu_cores; i++) {
        snprintf(name, sizeof name, "a76 core %d", i);
        put_meta(f, &first, "thread_name", TWIN_PID_CPU, i, name);
    }
    return ferror(f) ? ork_errorf(ORK_EIO, "twin trace: write error") : 0;
}

int ork_twin_trace_step(const struct ork_twin *tw, FILE *f, double offset_ns)
{
    if (!tw->ran)
        return ork_errorf(ORK_EINVAL, "twin trace: no step has been run");
    for (uint32_t id = 0; id < tw->n_ops; id++) {
        const struct ork__twin_op *op = &tw->ops[id];
        const char *label = op->d.label ? op->d.label : ork_twin_phase_name(op->phase);
        int pid = op->d.res == ORK_TWIN_NPU ? TWIN_PID_NPU : TWIN_PID_CPU;
        for (int c = 0; c < ORK_TWIN_MAX_CPU; c++) {
            if (!(op->taken & (1u << c)))
                continue;
            fputs(",\n{\"ph\":\"X\",\"name\":\"", f);
            ork_json_put_str(f, label);
            fprintf(f, "\",\"cat\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,"
                    "\"args\":{\"op\":%u,\"cores\":%u,\"bytes\":%.0f,\"idle\":%d}}",
                    ork_twin_phase_name(op->phase), pid, c, (offset_ns + op->start) / 1e3,
                    (op->end - op->start) / 1e3, id, op->k, op->w.bytes,
                    (op->flags & ORK_TWIN_OP_IDLE) ? 1 : 0);
        }
    }
    return ferror(f) ? ork_errorf(ORK_EIO, "twin trace: write error") : 0;
}

int ork_twin_trace_close(FILE *f)
{
    fputs("\n]}\n", f);
    return ferror(f) ? ork_errorf(ORK_EIO, "twin trace: write error") : 0;
}

int ork_twin_trace_write(const struct ork_twin *tw, FILE *f)
{
    if (!tw->ran)
        return ork_errorf(ORK_EINVAL, "twin trace: no step has been run");
    int ret = ork_twin_trace_open(tw, f);
    if (ret == 0)
        ret = ork_twin_trace_step(tw, f, 0);
    if (ret == 0)
        ret = ork_twin_trace_close(f);
    return ret;
}

int ork_twin_trace_save(const struct ork_twin *tw, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return ork_errorf(ORK_EIO, "twin trace '%s': %s", path, strerror(errno));
    int ret = ork_twin_trace_write(tw, f);
    if (fclose(f) != 0 && ret == 0)
        ret = ork_errorf(ORK_EIO, "twin trace '%s': %s", path, strerror(errno));
    return ret;
}

void ork_twin_result_accumulate(struct ork_twin_result *acc, const struct ork_twin_result *b,
                                const struct ork_twin_consts *c)
{
    acc->end_ns += b->end_ns;
    for (int i = 0; i < ORK_TWIN_MAX_CPU; i++)
        acc->cpu_busy_ns[i] += b->cpu_busy_ns[i];
    for (int i = 0; i < ORK_TWIN_MAX_NPU; i++)
        acc->npu_busy_ns[i] += b->npu_busy_ns[i];
    acc->cpu_active_ns += b->cpu_active_ns;
    acc->npu_active_ns += b->npu_active_ns;
    acc->hidden_ns += b->hidden_ns;
    acc->dram_bytes += b->dram_bytes;
    for (int p = 0; p < ORK_TWIN_PHASE_COUNT; p++) {
        acc->phase_ns[p] += b->phase_ns[p];
        acc->phase_core_ns[p] += b->phase_core_ns[p];
    }
    acc->n_ops += b->n_ops;
    acc->hidden_share = acc->cpu_active_ns > 0 ? acc->hidden_ns / acc->cpu_active_ns : 0;
    acc->dram_util = acc->end_ns > 0 ? acc->dram_bytes / (acc->end_ns * 1e-9 * c->dram_bw_total) : 0;
}
