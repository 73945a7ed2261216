/* matmul.c -- matmul plans on resident weights: lay out A, C and program buffers, emit every
 * program once (program.c) from the tiling (plan.c), chain them (spec §8.3), validate their
 * addresses, and run: copy A in, submit, sum the K-slice partials into C on the host (§1.4).
 * Not here: register values (program.c), tiling rules (plan.c), ioctls (kmd/). */
#include "ork_priv.h"

#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include <string.h>

/* Warm-up submits at plan creation: the first submit writing a fresh output buffer can return
 * stale data on hardware; the validated practice is two warm-up submits (spec §14.4). */
#define WARMUP_SUBMITS 2
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

/* Build the tile list, M-tile outermost (a run of fewer rows is then a prefix of the tasks). */
static int make_tiles(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    uint32_t tile = mm->m;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        uint32_t t = ork__plan_m_tile(w->dtype, mm->m, w->kplan.s[j].pad);
        if (!t)
            return ork_errorf(ORK_ERANGE, "npu matmul: no M-tile for K-slice of %u at M=%u",
                              w->kplan.s[j].pad, mm->m);
        tile = t < tile ? t : tile;
    }
    mm->m_tile = tile;
    uint32_t n_m = (mm->m + tile - 1) / tile;
    uint64_t n = (uint64_t)n_m * w->kplan.n_slices * w->nplan.n_slices;
    if (n > UINT32_MAX / 2)
        return ork_errorf(ORK_ERANGE, "npu matmul: %llu programs", (unsigned long long)n);
    mm->n_tasks = (uint32_t)n;
    mm->tiles = ork_calloc(n, sizeof *mm->tiles);
    mm->tasks = ork_calloc(n, sizeof *mm->tasks);
    if (!mm->tiles || !mm->tasks)
        return ork_errorf(ORK_ENOMEM, "npu matmul: %u task records", mm->n_tasks);
    uint32_t t = 0;
    for (uint32_t mt = 0; mt < n_m; mt++)
        for (uint32_t j = 0; j < w->kplan.n_slices; j++)
            for (uint32_t i = 0; i < w->nplan.n_slices; i++) {
                struct ork_mm_tile *tl = &mm->tiles[t++];
                tl->kslice = j;
                tl->nslice = i;
                tl->m0 = mt * tile;
                tl->m = mm->m - tl->m0 < tile ? mm->m - tl->m0 : tile;
            }
    return 0;
}

static int make_buffers(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    const uint32_t esz = esz_of(w->dtype);
    uint64_t a_total = 0, c_total = 0;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        mm->a_off[j] = a_total;
        a_total += (uint64_t)mm->m * w->kplan.s[j].pad * esz;
    }
    mm->c_off = ork_calloc((size_t)w->kplan.n_slices * w->nplan.n_slices, sizeof *mm->c_off);
    if (!mm->c_off)
        return ork_errorf(ORK_ENOMEM, "npu matmul: output offsets");
    for (uint32_t j = 0; j < w->kplan.n_slices; j++)
        for (uint32_t i = 0; i < w->nplan.n_slices; i++) {
            mm->c_off[j * w->nplan.n_slices + i] = c_total;
            c_total += (uint64_t)mm->m * w->nplan.s[i].pad * OUT_BYTES;
        }
    int ret = ork__npu_bo_create(mm->npu, a_total, ORK_KBO_CACHEABLE, &mm->a_bo, "npu matmul A");
    if (ret < 0)
        return ret;
    ret = ork__npu_bo_create(mm->npu, c_total, ORK_KBO_CACHEABLE, &mm->c_bo, "npu matmul C");
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
    const struct ork_iova_range bufs[] = {
        { w->bo.iova, w->bo.size },
        { mm->a_bo.iova, mm->a_bo.size },
        { mm->c_bo.iova, mm->c_bo.size },
    };
    uint64_t *progs = ork_malloc((size_t)mm->n_tasks * ORK_PROG_ENTRIES * sizeof *progs);
    if (!progs)
        return ork_errorf(ORK_ENOMEM, "npu matmul: %u programs", mm->n_tasks);
    int ret = 0;
    for (uint32_t t = 0; t < mm->n_tasks && ret == 0; t++) {
        const struct ork_mm_tile *tl = &mm->tiles[t];
        const struct ork_slice *ks = &w->kplan.s[tl->kslice];
        const struct ork_slice *ns = &w->nplan.s[tl->nslice];
        const uint64_t c_blk = mm->c_off[tl->kslice * w->nplan.n_slices + tl->nslice];
        struct ork_mm_task task = {
            .dtype = w->dtype,
            .m = tl->m,
            .k = ks->pad,
            .n = ns->pad,
            .stride = ns->pad,
            /* rows [m0, m0+m) of A_j and of C_ji; column block n0 of slice j (spec §4.5) */
            .a = (uint32_t)(mm->a_bo.iova + mm->a_off[tl->kslice] + (uint64_t)tl->m0 * ks->pad * esz),
            .b = (uint32_t)(w->bo.iova + w->slice_off[tl->kslice] + (uint64_t)ns->off * ks->pad * esz),
            .c = (uint32_t)(mm->c_bo.iova + c_blk + (uint64_t)tl->m0 * ns->pad * OUT_BYTES),
            .cbuf = ork__plan_cbuf_con0(w->dtype, tl->m, ks->pad),
            .grains = ork__plan_grains(w->dtype, tl->m, ks->pad),
        };
        struct ork_prog_reloc rel[ORK_PROG_MAX_RELOCS];
        uint32_t n_rel = 0;
        uint64_t *prog = progs + (size_t)t * ORK_PROG_ENTRIES;
        ret = ork__prog_emit_matmul(&task, prog, rel, &n_rel);
        if (ret == 0)
            ret = ork__prog_validate(rel, n_rel, t, bufs, sizeof bufs / sizeof bufs[0]);
        mm->tasks[t] = (struct ork_ktask){
            .regcmd_iova = (uint32_t)(mm->prog_bo.iova + (uint64_t)t * ORK_PROG_SLOT),
            .regcfg_amount = ORK_PROG_COUNTED,
            .enable_mask = ORK_ENABLE_MATMUL,
            .int_mask = ORK_TASK_INT_MASK_DPU,
            .op_idx = t,
        };
    }
    if (ret < 0)
        goto out;
    if (chain) {
        /* Link each group of `group` tasks; group ends are terminal (one job each). */
        for (uint32_t g0 = 0; g0 < mm->n_tasks && ret == 0; g0 += mm->group) {
            uint32_t n = mm->n_tasks - g0 < mm->group ? mm->n_tasks - g0 : mm->group;
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
        if (ret < 0)
            goto out;
    }
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

/* Make program `last` terminal (or restore its chain link) for a run of a task prefix. */
static int set_terminal(struct ork_npu_matmul *mm, uint32_t last, bool terminal)
{
    if (!mm->npu->pc_chain || mm->group == 1)
        return 0;
    bool group_end = (last + 1) % mm->group == 0 || last + 1 == mm->n_tasks;
    if (group_end)
        return 0;   /* already terminal */
    uint64_t trailer[2];
    uint64_t next_iova = terminal ? 0 : mm->tasks[last + 1].regcmd_iova;
    uint64_t tmp[ORK_PROG_ENTRIES];
    ork__prog_set_next(tmp, (uint32_t)next_iova, ORK_PROG_COUNTED);
    trailer[0] = tmp[ORK_PROG_NEXT_ADDR_IDX];
    trailer[1] = tmp[ORK_PROG_NEXT_AMOUNT_IDX];
    uint64_t off = (uint64_t)last * ORK_PROG_SLOT + ORK_PROG_NEXT_ADDR_IDX * 8u;
    ork__prog_store((uint8_t *)mm->prog_bo.map + off, trailer, 2);
    return ork__npu_bo_sync(mm->npu, &mm->prog_bo, off, 16, ORK_KBO_SYNC_TO_DEVICE);
}

static int submit_tasks(struct ork_npu_matmul *mm, uint32_t n_tasks)
{
    int ret = 0;
    const bool chain = mm->npu->pc_chain && mm->group > 1;
    if (chain && n_tasks < mm->n_tasks)
        ret = set_terminal(mm, n_tasks - 1, true);
    for (uint32_t t0 = 0; t0 < n_tasks && ret == 0; t0 += mm->group) {
        uint32_t n = n_tasks - t0 < mm->group ? n_tasks - t0 : mm->group;
        struct ork_kjob job = {
            .tasks = &mm->tasks[t0],
            .n_tasks = n,
            .core_mask = 0,
            .range = { { 0, n } },
            .flags = chain ? ORK_KJOB_PINGPONG : 0,   /* matmul-only chains: PC|PINGPONG (§8.3) */
            .timeout_ms = mm->timeout_ms,
            .domain = mm->npu->domain,
        };
        ret = mm->npu->kmd->submit(mm->npu->kctx, &job);
        if (ret < 0) {
            ret = ork_errorf(ret, "npu matmul: submit of tasks %u..%u failed: %s", t0, t0 + n - 1,
                             ork_error_describe(ret));
            break;
        }
        if (ork_debug(ORK_DBG_SUBMIT))
            ORK_LOGI("npu submit: tasks %u..%u (%u done), %lld ns", t0, t0 + n - 1,
                     job.task_counter, (long long)job.hw_elapse_ns);
    }
    if (chain && n_tasks < mm->n_tasks) {
        int r2 = set_terminal(mm, n_tasks - 1, false);
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
    if (md.m < 1 || md.m > w->kplan.max_m)
        return ork_errorf(ORK_ERANGE, "npu matmul: M=%u outside 1..%u (the weights' max_m)", md.m,
                          w->kplan.max_m);
    struct ork_npu_matmul *mm = ork_calloc(1, sizeof *mm);
    if (!mm)
        return ork_errorf(ORK_ENOMEM, "npu matmul: out of memory");
    mm->w = w;
    mm->npu = w->npu;
    mm->m = md.m;
    mm->flags = md.flags;
    mm->timeout_ms = md.timeout_ms;
    int ret = make_tiles(mm);
    if (ret == 0)
        ret = make_buffers(mm);
    if (ret == 0)
        ret = emit_programs(mm);
    for (int i = 0; ret == 0 && !(md.flags & ORK_NPU_MATMUL_NO_WARMUP) && i < WARMUP_SUBMITS; i++) {
        ret = ork__npu_bo_sync(mm->npu, &mm->a_bo, 0, mm->a_bo.size, ORK_KBO_SYNC_TO_DEVICE);
        if (ret == 0)
            ret = submit_tasks(mm, mm->n_tasks);
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
    ork__npu_bo_destroy(mm->npu, &mm->prog_bo);
    ork__npu_bo_destroy(mm->npu, &mm->c_bo);
    ork__npu_bo_destroy(mm->npu, &mm->a_bo);
    ork_free(mm->c_off);
    ork_free(mm->tiles);
    ork_free(mm->tasks);
    ork_free(mm);
}

int ork_npu_matmul_submit(struct ork_npu_matmul *mm, const void *a, uint32_t m)
{
    if (!mm || !a)
        return ork_errorf(ORK_EINVAL, "npu matmul: NULL plan or A");
    if (mm->in_flight)
        return ork_errorf(ORK_EBUSY, "npu matmul: a run is already in flight on this plan");
    if (m < 1 || m > mm->m)
        return ork_errorf(ORK_ERANGE, "npu matmul: M=%u outside 1..%u (the plan's rows)", m, mm->m);
    const struct ork_npu_weights *w = mm->w;
    const uint32_t esz = esz_of(w->dtype);
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
    int ret = ork__npu_bo_sync(mm->npu, &mm->a_bo, 0, mm->a_bo.size, ORK_KBO_SYNC_TO_DEVICE);
    if (ret < 0)
        return ret;
    uint32_t n_mt = (m + mm->m_tile - 1) / mm->m_tile;
    mm->run_m = m;
    mm->run_tasks = n_mt * w->kplan.n_slices * w->nplan.n_slices;
    mm->run_ret = submit_tasks(mm, mm->run_tasks);
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
    const struct ork_npu_weights *w = mm->w;
    const uint32_t m = mm->run_m, n = w->n;
    int ret = ork__npu_bo_sync(mm->npu, &mm->c_bo, 0, mm->c_bo.size, ORK_KBO_SYNC_FROM_DEVICE);
    if (ret < 0)
        return ret;
    /* Sum the K-slice partials (spec §1.4, §6.5) and gather the N-slices into C[m][n]. */
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        for (uint32_t i = 0; i < w->nplan.n_slices; i++) {
            const struct ork_slice *ns = &w->nplan.s[i];
            const uint8_t *blk = (const uint8_t *)mm->c_bo.map +
                                 mm->c_off[j * w->nplan.n_slices + i];
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
    out->n_nslices = w->nplan.n_slices;
    out->m_tile = mm->m_tile;
    out->n_tasks = mm->n_tasks;
    out->n_submits = (mm->n_tasks + mm->group - 1) / mm->group;
}
