/* matmul.c -- matmul plans on resident weights: lay out A, C and program buffers, emit every
 * program once (program.c) from the tiling (plan.c), chain them (spec §8.3), validate their
 * addresses, and run: copy A in, submit, sum the K-slice partials into C on the host (§1.4).
 * W4A8 plans (int4 tasks, two physical rows a token) keep the same blocks; their copy-in, gather
 * and doorbell sentinels are w4a8_plan.c's (docs/w4a8.md).
 * Not here: register values (program.c), tiling rules (plan.c), ioctls (kmd/). */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/trace.h>

#include <stdio.h>
#include <string.h>

/* Warm-up submits at plan creation: the first submit writing a fresh output buffer can return
 * stale data on hardware; the validated practice is two warm-up submits (spec §14.4). */
#define WARMUP_SUBMITS 2
/* Completion doorbell seed for int32/fp32 outputs (spec §8.6). Never a real result: an int8
 * slice of K <= 8192 sums to at most 2^27 in magnitude, and fp32 0x7fffffff is a NaN that
 * finite fp16 products cannot produce. */
#define DOORBELL_SENTINEL 0x7fffffffu
/* Output element bytes: int32 / fp32 (spec §4.2). */
#define OUT_BYTES 4u

static uint32_t esz_of(enum ork_npu_dtype dt)
{
    return dt == ORK_NPU_I8 ? 1u : 2u;
}

static void log_program(const struct ork_npu_matmul *mm, uint32_t t, const uint64_t *prog)
{
    char line[256];
    ORK_LOGI("npu program %u/%u (kslice %u nslice %u rows %u+%u) at 0x%08x:", t, mm->n_tasks,
             mm->tiles[t].kslice, mm->tiles[t].nslice, mm->tiles[t].m0, mm->tiles[t].m,
             mm->tasks[t].regcmd_iova);
    for (uint32_t i = 0; i < ORK_PROG_ENTRIES; i++) {
        ork_regcmd_format(line, sizeof line, prog[i]);
        ORK_LOGI("  %3u %s", i, line);
    }
}

/* The plan's N-slices: the weights' split for the cores the budget gives (plan.c
 * ork__plan_nsplit, spec §9; DCOMP weights keep the partition their streams were cut for). */
static int make_nslices(struct ork_npu_matmul *mm, uint32_t want_cores)
{
    return ork__weights_nsplit(mm->w, ork__budget_cores(mm, want_cores), &mm->n_cores, &mm->ns,
                               &mm->n_ns, mm->core_ns0);
}

/* Build the tile list: per core, M-tile outermost (a run of fewer rows is then a prefix of
 * each core's tasks), then K-slice, then the core's N-slices. */
static int make_tiles(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    uint32_t tile = mm->m;
    if (ork__weights_w4a8(w))   /* 2 physical int4 rows a token, <= 128 a program (plan.h) */
        tile = ork__plan_m_tile_i4(mm->m);
    for (uint32_t j = 0; j < w->kplan.n_slices && !ork__weights_w4a8(w); j++) {
        uint32_t t = ork__plan_m_tile_forms(w->dtype, mm->m, w->kplan.s[j].pad,
                                            mm->npu->confirmed_forms);
        if (!t)
            return ork_errorf(ORK_ERANGE, "npu matmul: no M-tile for K-slice of %u at M=%u%s",
                              w->kplan.s[j].pad, mm->m,
                              ork__plan_wide_k(w->dtype, w->kplan.s[j].pad, ORK_NPU_FORM_WIDE_K)
                                  ? " (the wide-K M-tile rule, npu-weight-decompression.md "
                                    "§4.3, is not confirmed on this device: ORK_NPU_FORM_WIDE_K)"
                                  : "");
        tile = t < tile ? t : tile;
    }
    mm->m_tile = tile;
    mm->n_mtiles = (mm->m + tile - 1) / tile;
    uint64_t n = (uint64_t)mm->n_mtiles * w->kplan.n_slices * mm->n_ns;
    if (n > UINT32_MAX / 2)
        return ork_errorf(ORK_ERANGE, "npu matmul: %llu programs", (unsigned long long)n);
    mm->n_tasks = (uint32_t)n;
    mm->tiles = ork_calloc(n, sizeof *mm->tiles);
    mm->tasks = ork_calloc(n, sizeof *mm->tasks);
    if (!mm->tiles || !mm->tasks)
        return ork_errorf(ORK_ENOMEM, "npu matmul: %u task records", mm->n_tasks);
    uint32_t t = 0;
    for (uint32_t c = 0; c < mm->n_cores; c++) {
        mm->core_t0[c] = t;
        for (uint32_t mt = 0; mt < mm->n_mtiles; mt++)
            for (uint32_t j = 0; j < w->kplan.n_slices; j++)
                for (uint32_t i = mm->core_ns0[c]; i < mm->core_ns0[c + 1]; i++) {
                    struct ork_mm_tile *tl = &mm->tiles[t++];
                    tl->kslice = j;
                    tl->nslice = i;
                    tl->core = c;
                    tl->m0 = mt * tile;
                    tl->m = mm->m - tl->m0 < tile ? mm->m - tl->m0 : tile;
                }
    }
    mm->core_t0[mm->n_cores] = t;
    return 0;
}

/* Tasks of core c in a run of `mtiles` M-tiles. */
static uint32_t core_run_tasks(const struct ork_npu_matmul *mm, uint32_t c, uint32_t mtiles)
{
    return mtiles * mm->w->kplan.n_slices * (mm->core_ns0[c + 1] - mm->core_ns0[c]);
}

/* Index in c_bo of N-slice i's C buffer: 0, or the owning core's on a rocket split. */
uint32_t ork__matmul_cbo_idx(const struct ork_npu_matmul *mm, uint32_t nslice)
{
    uint32_t b = 0;
    if (mm->n_cbo > 1)
        while (b + 1 < mm->n_cores && nslice >= mm->core_ns0[b + 1])
            b++;
    return b;
}

/* The C buffer task t writes. */
static struct ork_kbo *cbo_of_task(struct ork_npu_matmul *mm, uint32_t t)
{
    return &mm->c_bo[ork__matmul_cbo_idx(mm, mm->tiles[t].nslice)];
}

static int make_buffers(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    const uint32_t esz = esz_of(w->dtype);
    uint64_t a_total = 0, c_total[ORK_MM_MAX_CORES] = { 0 };
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        mm->a_off[j] = a_total;
        a_total += (uint64_t)mm->m * w->kplan.s[j].pad * esz;
    }
    /* rocket orders jobs that write one BO after each other (implicit dependencies, §11.3): a
     * split's cores get a C buffer each so that their jobs run at once */
    mm->n_cbo = mm->npu->multi_job && mm->n_cores > 1 ? mm->n_cores : 1;
    mm->c_off = ork_calloc((size_t)w->kplan.n_slices * mm->n_ns, sizeof *mm->c_off);
    if (!mm->c_off)
        return ork_errorf(ORK_ENOMEM, "npu matmul: output offsets");
    for (uint32_t j = 0; j < w->kplan.n_slices; j++)
        for (uint32_t i = 0; i < mm->n_ns; i++) {
            uint32_t b = ork__matmul_cbo_idx(mm, i);
            mm->c_off[j * mm->n_ns + i] = c_total[b];
            c_total[b] += (uint64_t)mm->m * mm->ns[i].pad * OUT_BYTES;
        }
    int ret = ork__npu_bo_create(mm->npu, a_total, ORK_KBO_CACHEABLE, &mm->a_bo, "npu matmul A");
    for (uint32_t b = 0; b < mm->n_cbo && ret == 0; b++)
        ret = ork__npu_bo_create(mm->npu, c_total[b], ORK_KBO_CACHEABLE, &mm->c_bo[b],
                                 "npu matmul C");
    if (ret < 0)
        return ret;
    return ork__npu_bo_create(mm->npu, (uint64_t)mm->n_tasks * ORK_PROG_SLOT, ORK_KBO_CACHEABLE,
                              &mm->prog_bo, "npu matmul programs");
}

static int emit_programs(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    const uint32_t esz = esz_of(w->dtype);
    const bool chain = mm->npu->pc_chain && !(mm->flags & ORK_NPU_MATMUL_NO_CHAIN);
    /* Jobs: chained groups on rknpu/sim; rocket kicks tasks itself (§11.3); NO_CHAIN: 1 each. */
    mm->group = (mm->flags & ORK_NPU_MATMUL_NO_CHAIN) ? 1 : mm->npu->max_tasks;
    struct ork_iova_range bufs[2 + ORK_MM_MAX_CORES] = {
        { w->bo.iova, w->bo.size },
        { mm->a_bo.iova, mm->a_bo.size },
    };
    for (uint32_t b = 0; b < mm->n_cbo; b++)
        bufs[2 + b] = (struct ork_iova_range){ mm->c_bo[b].iova, mm->c_bo[b].size };
    uint64_t *progs = ork_malloc((size_t)mm->n_tasks * ORK_PROG_ENTRIES * sizeof *progs);
    if (!progs)
        return ork_errorf(ORK_ENOMEM, "npu matmul: %u programs", mm->n_tasks);
    int ret = 0;
    for (uint32_t t = 0; t < mm->n_tasks && ret == 0; t++) {
        const struct ork_mm_tile *tl = &mm->tiles[t];
        const struct ork_slice *ks = &w->kplan.s[tl->kslice];
        const struct ork_slice *ns = &mm->ns[tl->nslice];
        const uint64_t c_blk = mm->c_off[tl->kslice * mm->n_ns + tl->nslice];
        struct ork_mm_task task = {
            .dtype = w->dtype,
            .m = tl->m,
            .k = ks->pad,
            .n = ns->pad,
            .stride = ns->pad,
            /* rows [m0, m0+m) of A_j and of C_ji; column block n0 of slice j (spec §4.5) */
            .a = (uint32_t)(mm->a_bo.iova + mm->a_off[tl->kslice] + (uint64_t)tl->m0 * ks->pad * esz),
            .c = (uint32_t)(cbo_of_task(mm, t)->iova + c_blk +
                            (uint64_t)tl->m0 * ns->pad * OUT_BYTES),
            .cbuf = ork__plan_cbuf_con0_forms(w->dtype, tl->m, ks->pad, mm->npu->confirmed_forms),
            .grains = ork__plan_grains_forms(w->dtype, tl->m, ks->pad, mm->npu->confirmed_forms),
        };
        if (ork__weights_w4a8(w)) {
            /* the tile's split rows, int16 C; the CBUF split and grains the program derives
             * for int4 (cbuf, grains 0: program.c) */
            task.i4 = true;
            task.m = 2 * tl->m;
            task.stride = 0;
            task.cbuf = 0;
            task.grains = 0;
        }
        ork__weights_block(w, tl->kslice, tl->nslice, ns, &task);  /* B: raw or a DCOMP stream */
        struct ork_prog_reloc rel[ORK_PROG_MAX_RELOCS];
        uint32_t n_rel = 0;
        uint64_t *prog = progs + (size_t)t * ORK_PROG_ENTRIES;
        ret = ork__prog_emit_matmul(&task, prog, rel, &n_rel);
        if (ret == 0)
            ret = ork__prog_validate(rel, n_rel, t, bufs, 2 + mm->n_cbo);
        mm->tasks[t] = (struct ork_ktask){
            .regcmd_iova = (uint32_t)(mm->prog_bo.iova + (uint64_t)t * ORK_PROG_SLOT),
            .regcfg_amount = ORK_PROG_COUNTED,
            .enable_mask = ORK_ENABLE_MATMUL,
            .int_mask = ORK_TASK_INT_MASK_DPU,
            .op_idx = t,
        };
    }
    if (ret == 0 && ork__weights_w4a8(w))
        ret = ork__w4a8_sentinels(mm);
    if (ret < 0)
        goto out;
    for (uint32_t c = 0; chain && c < mm->n_cores; c++) {
        /* Link each group of `group` tasks of a core; group ends are terminal (one job each). */
        const uint32_t end = mm->core_t0[c + 1];
        for (uint32_t g0 = mm->core_t0[c]; g0 < end && ret == 0; g0 += mm->group) {
            uint32_t n = end - g0 < mm->group ? end - g0 : mm->group;
            uint64_t **ptrs = ork_malloc((size_t)n * sizeof *ptrs);
            uint32_t *iovas = ork_malloc((size_t)n * sizeof *iovas);
            if (!ptrs || !iovas) {
                ret = ork_errorf(ORK_ENOMEM, "npu matmul: chain of %u", n);
            } else {
                for (uint32_t i = 0; i < n; i++) {
                    ptrs[i] = progs + (size_t)(g0 + i) * ORK_PROG_ENTRIES;
                    iovas[i] = mm->tasks[g0 + i].regcmd_iova;
                }
                ret = ork__prog_link(ptrs, iovas, n);
            }
            ork_free(ptrs);
            ork_free(iovas);
        }
    }
    if (ret < 0)
        goto out;
    for (uint32_t t = 0; t < mm->n_tasks; t++) {
        const uint64_t *prog = progs + (size_t)t * ORK_PROG_ENTRIES;
        ork__prog_store((uint8_t *)mm->prog_bo.map + (size_t)t * ORK_PROG_SLOT, prog,
                        ORK_PROG_ENTRIES);
        if (ork_debug(ORK_DBG_REGS))
            log_program(mm, t, prog);
    }
    ret = ork__npu_bo_sync(mm->npu, &mm->prog_bo, 0, mm->prog_bo.size, ORK_KBO_SYNC_TO_DEVICE);
out:
    ork_free(progs);
    return ret;
}

/* Make program `last` of core c terminal (or restore its chain link) for a run of a prefix. */
static int set_terminal(struct ork_npu_matmul *mm, uint32_t c, uint32_t last, bool terminal)
{
    if (!mm->npu->pc_chain || mm->group == 1)
        return 0;
    bool group_end = (last + 1 - mm->core_t0[c]) % mm->group == 0 || last + 1 == mm->core_t0[c + 1];
    if (group_end)
        return 0;   /* already terminal */
    uint64_t tmp[ORK_PROG_ENTRIES];
    ork__prog_set_next(tmp, terminal ? 0 : mm->tasks[last + 1].regcmd_iova, ORK_PROG_COUNTED);
    uint64_t off = (uint64_t)last * ORK_PROG_SLOT + ORK_PROG_NEXT_ADDR_IDX * 8u;
    ork__prog_store((uint8_t *)mm->prog_bo.map + off, tmp + ORK_PROG_NEXT_ADDR_IDX, 2);
    return ork__npu_bo_sync(mm->npu, &mm->prog_bo, off, 16, ORK_KBO_SYNC_TO_DEVICE);
}

static int restore_cuts(struct ork_npu_matmul *mm, const uint32_t *count)
{
    int ret = 0;
    for (uint32_t c = 0; c < mm->n_cores; c++) {
        int r2 = set_terminal(mm, c, mm->core_t0[c] + count[c] - 1, false);
        if (ret == 0)
            ret = r2;
    }
    return ret;
}

/* One submit on the trace timeline, named by the plan's shape. */
static void trace_submit(const struct ork_npu_matmul *mm, int core, int64_t t0)
{
    if (!ork_trace_enabled())
        return;
    char name[48];
    snprintf(name, sizeof name, "mm %ux%ux%u", mm->run_m ? mm->run_m : mm->m, mm->w->k, mm->w->n);
    ork__trace_submit(core, name, t0);
}

/* Byte offset in C of the word task t writes last: row M-1, column N-1 of its block (§8.6). */
static uint64_t last_word_off(const struct ork_npu_matmul *mm, uint32_t t)
{
    const struct ork_mm_tile *tl = &mm->tiles[t];
    const struct ork_slice *ns = &mm->ns[tl->nslice];
    return mm->c_off[tl->kslice * mm->n_ns + tl->nslice] +
           ((uint64_t)(tl->m0 + tl->m - 1) * ns->pad + ns->pad - 1) * OUT_BYTES;
}

bool ork__matmul_sentinel_needed(const struct ork_npu_matmul *mm)
{
    return mm->npu->multi_job;
}

/* The doorbell sentinel of task t: one no result can equal (W4A8: per task, w4a8.h). */
static uint32_t sentinel_of(const struct ork_npu_matmul *mm, uint32_t t)
{
    return mm->sentinel ? mm->sentinel[t] : DOORBELL_SENTINEL;
}

int ork__matmul_sentinel_seed(struct ork_npu_matmul *mm, uint32_t last_task)
{
    uint64_t off = last_word_off(mm, last_task);
    uint32_t seed = sentinel_of(mm, last_task);
    struct ork_kbo *cb = cbo_of_task(mm, last_task);
    memcpy((uint8_t *)cb->map + off, &seed, sizeof seed);
    return ork__npu_bo_sync(mm->npu, cb, off, sizeof seed, ORK_KBO_SYNC_TO_DEVICE);
}

int ork__matmul_sentinel_check(struct ork_npu_matmul *mm, uint32_t last_task, const char *what)
{
    uint64_t off = last_word_off(mm, last_task);
    uint32_t v;
    memcpy(&v, (const uint8_t *)cbo_of_task(mm, last_task)->map + off, sizeof v); /* synced */
    if (v != sentinel_of(mm, last_task))
        return 0;
    int ret = ork_errorf(ORK_ETIMEDOUT, "task %u completed without writing its last output word "
                         "(still the sentinel 0x%08x): the kernel timed the job out and reset "
                         "the core (500 ms, spec §11.3)", last_task, sentinel_of(mm, last_task));
    return ork__npu_failed(mm->npu, ret, what);
}

/* Fill a job's BO lists (rocket orders jobs by them and waits on the outputs, §11.3): with a
 * C buffer per core, each core range lists its own (range_out) instead of one shared C. */
static void job_bos(const struct ork_npu_matmul *mm, struct ork_kjob *job)
{
    job->in_bos = mm->in_bos;
    job->n_in_bos = sizeof mm->in_bos / sizeof mm->in_bos[0];
    if (mm->n_cbo > 1) {
        for (uint32_t c = 0; c < mm->n_cbo; c++)
            if (job->range[c].count)
                job->range_out[c] = &mm->c_bo[c];
        return;
    }
    job->out_bos = mm->out_bos;
    job->n_out_bos = sizeof mm->out_bos / sizeof mm->out_bos[0];
}

uint32_t ork__matmul_bound_ms(const struct ork_npu_matmul *mm)
{
    return mm->timeout_ms ? mm->timeout_ms : mm->npu->wait_ms;
}

int ork__matmul_arm(struct ork_npu_matmul *mm, struct ork_kjob *job, uint32_t last)
{
    /* one doorbell word: single-core jobs only (core_mask 0 = the kernel's pick, or one bit) */
    if (!mm->npu->nonblock || (job->core_mask & (job->core_mask - 1)))
        return 0;
    int ret = ork__matmul_sentinel_seed(mm, last);
    if (ret < 0)
        return ret;
    job->flags |= ORK_KJOB_NONBLOCK;
    job->doorbell_bo = cbo_of_task(mm, last);
    job->doorbell_off = last_word_off(mm, last);
    job->doorbell_sentinel = sentinel_of(mm, last);
    /* the kernel gives up when the host does, so a dropped job is not left in its list */
    job->timeout_ms = ork__matmul_bound_ms(mm);
    return 1;
}

int ork__matmul_wait_armed(struct ork_npu_matmul *mm, struct ork_kjob *job)
{
    uint32_t bound = ork__matmul_bound_ms(mm);
    int ret = mm->npu->kmd->wait(mm->npu->kctx, job, (int64_t)bound * 1000000);
    if (ret == ORK_ETIMEDOUT) {
        char why[384];
        snprintf(why, sizeof why, "%s", ork_error_message());
        return ork_errorf(ret, "no completion within the host bound of %u ms (ork_npu_opts."
                          "wait_timeout_ms, spec §8.6): %s", bound, why);
    }
    return ret;
}

/* Plan core c's tasks of the first `mtiles` M-tiles, blocking, on hardware core `hw` (-1: the
 * kernel picks one): one submit per group of chained programs, its own job record, so the
 * cores of a split run are submitted from different threads at once (spec §9). */
static int submit_core(struct ork_npu_matmul *mm, uint32_t c, uint32_t mtiles, int hw)
{
    const bool chain = mm->npu->pc_chain && mm->group > 1;
    const bool cut = chain && mtiles < mm->n_mtiles;
    const uint32_t count = core_run_tasks(mm, c, mtiles);
    int ret = 0;
    if (cut && count)
        ret = set_terminal(mm, c, mm->core_t0[c] + count - 1, true);
    for (uint32_t done = 0; done < count && ret == 0; done += mm->group) {
        const uint32_t start = mm->core_t0[c] + done;
        const uint32_t n = count - done < mm->group ? count - done : mm->group;
        struct ork_kjob job = {
            .tasks = &mm->tasks[start],
            .n_tasks = n,
            .core_mask = hw < 0 ? 0 : 1u << hw,
            .flags = chain ? ORK_KJOB_PINGPONG : 0,    /* matmul-only chains (§8.3) */
            .timeout_ms = mm->timeout_ms,
            .domain = mm->npu->domain,
        };
        job.range[hw < 0 ? 0 : hw] = (struct ork_kcore_range){ 0, n };
        job_bos(mm, &job);
        const bool sentinel = ork__matmul_sentinel_needed(mm);
        if (sentinel && (ret = ork__matmul_sentinel_seed(mm, start + n - 1)) < 0)
            break;
        int armed = ork__matmul_arm(mm, &job, start + n - 1);
        if (armed < 0) {
            ret = armed;
            break;
        }
        int64_t t0 = ork_trace_now_ns();
        ret = mm->npu->kmd->submit(mm->npu->kctx, &job);
        if (ret == 0 && armed)
            ret = ork__matmul_wait_armed(mm, &job);
        trace_submit(mm, hw, t0);
        if (ret == 0 && sentinel)
            ret = ork__matmul_sentinel_check(mm, start + n - 1, "npu matmul: submit");
        if (ret < 0) {
            char what[96];
            snprintf(what, sizeof what, "npu matmul: submit of tasks %u..%u on core %d", start,
                     start + n - 1, hw);
            ret = ork__npu_failed(mm->npu, ret, what);
        } else if (ork_debug(ORK_DBG_SUBMIT)) {
            ORK_LOGI("npu submit: tasks %u..%u on core %d (%u done), %lld ns", start,
                     start + n - 1, hw, job.task_counter, (long long)job.hw_elapse_ns);
        }
    }
    if (cut && count) {
        int r2 = set_terminal(mm, c, mm->core_t0[c] + count - 1, false);
        if (ret == 0)
            ret = r2;
    }
    return ret;
}

struct split_ctx {
    struct ork_npu_matmul *mm;
    uint32_t mtiles;
};

static int split_core(void *arg, uint32_t c)
{
    const struct split_ctx *s = arg;
    return submit_core(s->mm, c, s->mtiles, (int)c);
}

/* Run the first `mtiles` M-tiles: per job, each core runs its next group of tasks; a job over
 * several cores carries one range per core (spec §9; the backend fills subcore_task).
 * With `async`, a run that is one single-core chained job is queued NONBLOCK with the last
 * output word as its doorbell (spec §8.6) and finish_tasks() completes it; everything else
 * completes before returning. */
static int submit_tasks(struct ork_npu_matmul *mm, uint32_t mtiles, bool async)
{
    if (mm->n_cores > 1 && !(mm->flags & ORK_NPU_MATMUL_ONE_JOB) && !mm->npu->multi_job) {
        /* the default split: one submit per core, cores 1.. from the per-core workers; rocket
         * takes the cores' ranges as several jobs of one SUBMIT below (§11.3) */
        struct split_ctx s = { mm, mtiles };
        return ork__pool_run(mm->npu, mm->n_cores, split_core, &s);
    }
    int ret = 0;
    const bool chain = mm->npu->pc_chain && mm->group > 1;
    const bool cut = chain && mtiles < mm->n_mtiles;
    uint32_t *count = mm->run_count, rounds = 0;
    for (uint32_t c = 0; c < mm->n_cores; c++) {
        count[c] = core_run_tasks(mm, c, mtiles);
        uint32_t r = (count[c] + mm->group - 1) / mm->group;
        rounds = r > rounds ? r : rounds;
        if (cut && ret == 0)
            ret = set_terminal(mm, c, mm->core_t0[c] + count[c] - 1, true);
    }
    /* Single-core jobs go NONBLOCK with a doorbell (ork__matmul_arm); a one-round run with
     * `async` is left in flight for finish_tasks(), the others are waited for here. */
    const bool defer = async && rounds == 1;
    bool pending = false;
    for (uint32_t g = 0; g < rounds && ret == 0; g++) {
        uint32_t lo = UINT32_MAX, hi = 0, mask = 0;
        struct ork_kcore_range range[ORK_KMD_MAX_CORES] = { { 0, 0 } };
        for (uint32_t c = 0; c < mm->n_cores; c++) {
            uint32_t done = g * mm->group;
            if (done >= count[c])
                continue;
            uint32_t start = mm->core_t0[c] + done;
            uint32_t n = count[c] - done < mm->group ? count[c] - done : mm->group;
            range[c] = (struct ork_kcore_range){ start, n };
            mask |= 1u << c;
            lo = start < lo ? start : lo;
            hi = start + n > hi ? start + n : hi;
        }
        struct ork_kjob *job = &mm->job;
        *job = (struct ork_kjob){
            .tasks = &mm->tasks[lo],
            .n_tasks = hi - lo,
            .core_mask = mm->n_cores > 1 ? mask : 0,   /* 0: the kernel picks one core */
            .flags = chain ? ORK_KJOB_PINGPONG : 0,    /* matmul-only chains: PC|PINGPONG (§8.3) */
            .timeout_ms = mm->timeout_ms,
            .domain = mm->npu->domain,
        };
        for (uint32_t c = 0; c < mm->n_cores; c++)
            if (mask & (1u << c))
                job->range[mm->n_cores > 1 ? c : 0] =
                    (struct ork_kcore_range){ range[c].start - lo, range[c].count };
        job_bos(mm, job);
        const bool sentinel = ork__matmul_sentinel_needed(mm);
        for (uint32_t c = 0; sentinel && c < mm->n_cores && ret == 0; c++)
            if (mask & (1u << c))
                ret = ork__matmul_sentinel_seed(mm, range[c].start + range[c].count - 1);
        if (ret < 0)
            break;
        /* Doorbell: row M-1, column N-1 of the last program's C, written last (§8.6). */
        int armed = mm->n_cores == 1 ? ork__matmul_arm(mm, job, hi - 1) : 0;
        if (armed < 0) {
            ret = armed;
            break;
        }
        int64_t t0 = ork_trace_now_ns();
        ret = mm->npu->kmd->submit(mm->npu->kctx, job);
        pending = ret == 0 && armed && defer;
        if (ret == 0 && armed && !defer)
            ret = ork__matmul_wait_armed(mm, job);
        if (!pending)
            trace_submit(mm, mm->n_cores > 1 ? 0 : -1, t0);
        if (ret < 0) {
            char what[96];
            snprintf(what, sizeof what, "npu matmul: submit %u (tasks %u..%u, core mask 0x%x)",
                     g, lo, hi - 1, mask);
            ret = ork__npu_failed(mm->npu, ret, what);
            break;
        }
        for (uint32_t c = 0; sentinel && c < mm->n_cores && ret == 0; c++)
            if (mask & (1u << c))
                ret = ork__matmul_sentinel_check(mm, range[c].start + range[c].count - 1,
                                                 "npu matmul: submit");
        if (ret < 0)
            break;
        if (ork_debug(ORK_DBG_SUBMIT))
            ORK_LOGI("npu submit: tasks %u..%u on core mask 0x%x%s (%u done), %lld ns", lo, hi - 1,
                     job->core_mask, armed ? " nonblocking" : "", job->task_counter,
                     (long long)job->hw_elapse_ns);
    }
    if (ret == 0 && pending) {
        mm->job_pending = true;
        mm->cut_pending = cut;
        return 0;
    }
    if (cut) {
        int r2 = restore_cuts(mm, count);
        if (ret == 0)
            ret = r2;
    }
    return ret;
}

/* Complete a nonblocking run: wait for its job, then restore the chain links it cut (the NPU
 * reads the programs while it runs, so not before). */
static int finish_tasks(struct ork_npu_matmul *mm)
{
    if (!mm->job_pending)
        return 0;
    mm->job_pending = false;
    int64_t t0 = ork_trace_now_ns();
    int ret = ork__matmul_wait_armed(mm, &mm->job);
    trace_submit(mm, -1, t0);
    if (ret < 0)
        ret = ork__npu_failed(mm->npu, ret, "npu matmul: waiting for the run");
    if (mm->cut_pending) {
        mm->cut_pending = false;
        int r2 = restore_cuts(mm, mm->run_count);
        if (ret == 0)
            ret = r2;
    }
    return ret;
}

int ork_npu_matmul_create(struct ork_npu_weights *w, const struct ork_npu_matmul_desc *d,
                          struct ork_npu_matmul **out)
{
    struct ork_npu_matmul_desc md = { 0 };
    if (!out)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL output");
    *out = NULL;
    if (!w || !d || !d->struct_size)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL weights or descriptor");
    memcpy(&md, d, d->struct_size < sizeof md ? d->struct_size : sizeof md);
    /* Weights sliced for decode (max_m 1: one K-slice per 8192) also take plans of more rows
     * where their K-slices have an M-tile for them (make_tiles refuses otherwise): K <= 4096
     * in the full-K envelope, or K above it under ORK_NPU_FORM_WIDE_K */
    uint32_t m_max = w->kplan.max_m > 1 ? w->kplan.max_m : ORK_PLAN_M_MAX;
    if (md.m < 1 || md.m > m_max)
        return ork_errorf(ORK_ERANGE, "npu matmul: M=%u outside 1..%u (the weights' max_m%s)",
                          md.m, m_max, w->kplan.max_m > 1 ? "" : " 1: decode weights");
    struct ork_npu_matmul *mm = ork_calloc(1, sizeof *mm);
    if (!mm)
        return ork_errorf(ORK_ENOMEM, "npu matmul: out of memory");
    mm->w = w;
    mm->npu = w->npu;
    mm->m = md.m;
    mm->flags = md.flags;
    mm->timeout_ms = md.timeout_ms;
    int ret = make_nslices(mm, md.cores);
    if (ret == 0 && (mm->flags & ORK_NPU_MATMUL_ONE_JOB) && mm->n_cores > 1 && !mm->npu->multi_job &&
        !(mm->npu->confirmed_forms & ORK_NPU_FORM_ONE_JOB)) {
        /* the one-job form (core_mask 0x7, subcore_task[2..4]) is [CAP] only (spec §9): without
         * a capability confirming it, the validated per-core form runs the same programs */
        mm->flags &= ~(uint32_t)ORK_NPU_MATMUL_ONE_JOB;
        if (!mm->npu->one_job_logged) {
            mm->npu->one_job_logged = true;
            ORK_LOGN("npu: multi-core plans asked for the one-job form (core_mask 0x7, spec §9 "
                     "[CAP]), which no capability record confirms on this device; using one "
                     "submit per core (the validated form). Confirm it on a board with `ork "
                     "selftest --confirm-forms`");
        }
    }
    mm->in_bos[0] = &w->bo;
    mm->in_bos[1] = &mm->a_bo;
    mm->in_bos[2] = &mm->prog_bo;
    mm->out_bos[0] = &mm->c_bo[0];
    if (ret == 0)
        ret = make_tiles(mm);
    if (ret == 0)
        ret = make_buffers(mm);
    if (ret == 0)
        ret = emit_programs(mm);
    for (int i = 0; ret == 0 && !(md.flags & ORK_NPU_MATMUL_NO_WARMUP) && i < WARMUP_SUBMITS; i++) {
        ret = ork__npu_bo_sync(mm->npu, &mm->a_bo, 0, mm->a_bo.size, ORK_KBO_SYNC_TO_DEVICE);
        if (ret == 0)
            ret = submit_tasks(mm, mm->n_mtiles, false);
    }
    if (ret < 0) {
        ork_npu_matmul_destroy(mm);
        return ret;
    }
    *out = mm;
    return 0;
}

void ork_npu_matmul_destroy(struct ork_npu_matmul *mm)
{
    if (!mm)
        return;
    if (mm->ajob.queued)
        (void)ork_npu_job_wait(&mm->ajob);
    if (mm->job_pending)
        (void)finish_tasks(mm);     /* never free buffers under a running job */
    ork__npu_bo_destroy(mm->npu, &mm->prog_bo);
    for (uint32_t b = 0; b < ORK_MM_MAX_CORES; b++)
        ork__npu_bo_destroy(mm->npu, &mm->c_bo[b]);
    ork__npu_bo_destroy(mm->npu, &mm->a_bo);
    ork_free(mm->xq);
    ork_free(mm->xscale);
    ork_free(mm->sentinel);
    ork_free(mm->c_off);
    ork_free(mm->ns);
    ork_free(mm->tiles);
    ork_free(mm->tasks);
    ork_free(mm);
}

int ork__matmul_copy_in(struct ork_npu_matmul *mm, const void *a, uint32_t m)
{
    const struct ork_npu_weights *w = mm->w;
    const uint32_t esz = esz_of(w->dtype);
    if (ork__weights_w4a8(w))
        return ork__w4a8_copy_in(mm, a, m);
    /* Copy A into each K-slice's dense block; padding columns stay zero (set at creation). */
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        const struct ork_slice *s = &w->kplan.s[j];
        uint8_t *dst = (uint8_t *)mm->a_bo.map + mm->a_off[j];
        const uint8_t *src = (const uint8_t *)a + (size_t)s->off * esz;
        if (s->len == s->pad && w->kplan.n_slices == 1) {
            memcpy(dst, src, (size_t)m * w->k * esz);
            continue;
        }
        for (uint32_t r = 0; r < m; r++)
            memcpy(dst + (size_t)r * s->pad * esz, src + (size_t)r * w->k * esz,
                   (size_t)s->len * esz);
    }
    return ork__npu_bo_sync(mm->npu, &mm->a_bo, 0, mm->a_bo.size, ORK_KBO_SYNC_TO_DEVICE);
}

int ork__matmul_gather(struct ork_npu_matmul *mm, void *c, uint32_t m)
{
    const struct ork_npu_weights *w = mm->w;
    const uint32_t n = w->n;
    for (uint32_t b = 0; b < mm->n_cbo; b++) {
        int ret = ork__npu_bo_sync(mm->npu, &mm->c_bo[b], 0, mm->c_bo[b].size,
                                   ORK_KBO_SYNC_FROM_DEVICE);
        if (ret < 0)
            return ret;
    }
    if (ork__weights_w4a8(w))
        return ork__w4a8_gather(mm, c, m);
    /* Sum the K-slice partials (spec §1.4, §6.5) and gather the N-slices into C[m][n]. */
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        for (uint32_t i = 0; i < mm->n_ns; i++) {
            const struct ork_slice *ns = &mm->ns[i];
            const uint8_t *blk = (const uint8_t *)mm->c_bo[ork__matmul_cbo_idx(mm, i)].map +
                                 mm->c_off[j * mm->n_ns + i];
            for (uint32_t r = 0; r < m; r++) {
                if (w->dtype == ORK_NPU_I8) {
                    const int32_t *src = (const int32_t *)blk + (size_t)r * ns->pad;
                    int32_t *dst = (int32_t *)c + (size_t)r * n + ns->off;
                    if (j == 0) {
                        memcpy(dst, src, (size_t)ns->len * sizeof *dst);
                    } else {
                        /* unsigned add: wraps like the int32 accumulator, never UB */
                        for (uint32_t x = 0; x < ns->len; x++)
                            dst[x] = (int32_t)((uint32_t)dst[x] + (uint32_t)src[x]);
                    }
                } else {
                    const float *src = (const float *)blk + (size_t)r * ns->pad;
                    float *dst = (float *)c + (size_t)r * n + ns->off;
                    if (j == 0) {
                        memcpy(dst, src, (size_t)ns->len * sizeof *dst);
                    } else {
                        for (uint32_t x = 0; x < ns->len; x++)
                            dst[x] += src[x];
                    }
                }
            }
        }
    }
    return 0;
}

int ork_npu_matmul_submit(struct ork_npu_matmul *mm, const void *a, uint32_t m)
{
    if (!mm || !a)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL plan or A");
    if (mm->in_flight)
        return ork_errorf(ORK_EBUSY, "npu matmul: a run is already in flight on this plan");
    if (m < 1 || m > mm->m)
        return ork_errorf(ORK_ERANGE, "npu matmul: M=%u outside 1..%u (the plan's rows)", m, mm->m);
    int ret = ork__matmul_copy_in(mm, a, m);
    if (ret < 0)
        return ret;
    mm->run_m = m;
    mm->run_mtiles = (m + mm->m_tile - 1) / mm->m_tile;
    mm->run_ret = submit_tasks(mm, mm->run_mtiles, true);
    mm->in_flight = true;
    return mm->run_ret;
}

int ork_npu_matmul_wait(struct ork_npu_matmul *mm, void *c)
{
    if (!mm || !c)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL plan or C");
    if (!mm->in_flight)
        return ork_errorf(ORK_EINVAL, "npu matmul: wait without a submit");
    mm->in_flight = false;
    if (mm->run_ret < 0)
        return mm->run_ret;
    int ret = finish_tasks(mm);
    if (ret < 0)
        return ret;
    return ork__matmul_gather(mm, c, mm->run_m);
}

int ork__matmul_exec(struct ork_npu_matmul *mm, uint32_t m, int hw_core)
{
    mm->run_m = m;
    const uint32_t mtiles = (m + mm->m_tile - 1) / mm->m_tile;
    if (hw_core >= 0 && mm->n_cores == 1)
        return submit_core(mm, 0, mtiles, hw_core);
    return submit_tasks(mm, mtiles, false);
}

static int run(struct ork_npu_matmul *mm, enum ork_npu_dtype dt, const void *a, uint32_t m,
               void *c)
{
    if (!mm)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL plan");
    if (mm->w->dtype != dt)
        return ork_errorf(ORK_EINVAL, "npu matmul: plan is %s, run called for %s",
                          mm->w->dtype == ORK_NPU_I8 ? "int8" : "fp16",
                          dt == ORK_NPU_I8 ? "int8" : "fp16");
    int ret = ork_npu_matmul_submit(mm, a, m);
    if (ret < 0) {
        mm->in_flight = false;
        return ret;
    }
    return ork_npu_matmul_wait(mm, c);
}

int ork_npu_matmul_run_i8(struct ork_npu_matmul *mm, const int8_t *a, uint32_t m, int32_t *c)
{
    return run(mm, ORK_NPU_I8, a, m, c);
}

int ork_npu_matmul_run_f16(struct ork_npu_matmul *mm, const uint16_t *a, uint32_t m, float *c)
{
    return run(mm, ORK_NPU_F16, a, m, c);
}

int ork_npu_matmul_run_f32(struct ork_npu_matmul *mm, const float *x, uint32_t m, float *y)
{
    if (!mm || !x || !y)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL plan, X or Y");
    const struct ork_npu_weights *w = mm->w;
    if (m < 1 || m > mm->m)
        return ork_errorf(ORK_ERANGE, "npu matmul: M=%u outside 1..%u (the plan's rows)", m, mm->m);
    if (w->dtype == ORK_NPU_I8 && !w->scales)
        return ork_errorf(ORK_EINVAL, "npu matmul: float run on int8 weights created without "
                          "scales");
    if (!mm->xq) {
        mm->xq = ork_malloc((size_t)mm->m * w->k * esz_of(w->dtype));
        mm->xscale = ork_malloc((size_t)mm->m * sizeof *mm->xscale);
        if (!mm->xq || !mm->xscale) {
            ork_free(mm->xq);
            ork_free(mm->xscale);
            mm->xq = NULL;
            mm->xscale = NULL;
            return ork_errorf(ORK_ENOMEM, "npu matmul: float-run scratch for %u x %u", mm->m,
                              w->k);
        }
    }
    if (w->dtype == ORK_NPU_F16) {
        uint16_t *h = mm->xq;
        for (size_t i = 0; i < (size_t)m * w->k; i++)
            h[i] = ork_npu_f32_to_f16(x[i]);
        return ork_npu_matmul_run_f16(mm, h, m, y);
    }
    int ret = ork_npu_quantize_rows_i8(x, m, w->k, mm->xq, mm->xscale);
    if (ret < 0)
        return ret;
    /* int32 results land in Y's storage (same size), then become floats in place. */
    ret = ork_npu_matmul_run_i8(mm, mm->xq, m, (int32_t *)(void *)y);
    if (ret < 0)
        return ret;
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < w->n; j++) {
            int32_t acc;
            float *p = y + (size_t)i * w->n + j;
            memcpy(&acc, p, sizeof acc);
            *p = mm->xscale[i] * w->scales[j] * (float)acc;
        }
    return 0;
}

void ork_npu_matmul_get_info(const struct ork_npu_matmul *mm, struct ork_npu_matmul_info *out)
{
    memset(out, 0, sizeof *out);
    if (!mm)
        return;
    const struct ork_npu_weights *w = mm->w;
    out->dtype = w->dtype;
    out->m = mm->m;
    out->k = w->k;
    out->n = w->n;
    out->k_padded = w->kplan.k_padded;
    out->n_padded = w->nplan.n_padded;
    out->n_kslices = w->kplan.n_slices;
    out->n_nslices = mm->n_ns;
    out->n_cores = mm->n_cores;
    out->m_tile = mm->m_tile;
    out->n_tasks = mm->n_tasks;
    out->w4a8 = ork__weights_w4a8(w);
    ork__weights_pass_bytes(w, &out->w_stored_bytes, &out->w_dcomp_bytes);
    for (uint32_t c = 0; c < mm->n_cores; c++) {
        uint32_t r = (core_run_tasks(mm, c, mm->n_mtiles) + mm->group - 1) / mm->group;
        out->n_submits = r > out->n_submits ? r : out->n_submits;
    }
}
