/* run.c -- running the ops of the NPU executor per forward batch: each op quantises its
 * input into fixed scratch, runs the smallest of its row-sized plans that holds the rows
 * (M = 1 decode, 2, 4, ... up to M = max_m prefill) and dequantises
 * into the caller's rows; more rows than one plan run takes are M-chunks pipelined on the
 * async worker; the K-split O projection (its first half asynchronous in decode, so the
 * caller computes the other heads' attention meanwhile); the statistics, with modelled NPU
 * time on the simulator (ork_npu_model_time, docs/sim.md "Timing model": a time per token
 * that does not depend on the machine running the simulator; one device is one IOMMU domain,
 * so switches between domains are counted here and charged at the simulator's domain-switch
 * cost; hardware backends have no modelled clock: zeros).
 *
 * Under ORK_NPU_WENC_ROTATE each input row is rotated (rotate.c) before its quantisation,
 * once per op (the matrices of an op share the input and its K), into the executor's scratch.
 *
 * Nothing is synthesised or allocated here: programs, buffers and scratch come from
 * placement.c at load. */
#include "npu_priv.h"
#include "calib.h"

#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/trace.h>

#include <pthread.h>
#include <string.h>

/* ork_npu_exec_stats.sect_ms: one entry per op, then the CPU rest of the batch. */
_Static_assert(sizeof(((struct ork_npu_exec_stats *)0)->sect_ms) ==
               (ORK__NPU_N_OPS + 1) * sizeof(double), "sect_ms: one per op, then the CPU rest");
_Static_assert(sizeof(((struct ork_npu_exec_stats *)0)->prog_rows) ==
               NPU_MAX_PROGS * sizeof(uint32_t), "prog_rows: one per plan size");

/* ---- run --------------------------------------------------------------------------------- */

/* Caller phases on the trace timeline (ork/trace.h; a clock read when tracing is off). */
static int ork_npu_exec_traced(const char *name)
{
    if (ork_trace_enabled())
        ork_trace_begin(name);
    return 0;
}

static void ork_npu_exec_untraced(void)
{
    if (ork_trace_enabled())
        ork_trace_end();
}

/* The board twin (model/twin_rec.c): the caller's quantisation of rows x k (after their
 * rotation when rot is not NULL: rotate.c's operation count) and dequantisation of n int32
 * results, when the model has a twin. */
static void tw_quant(const struct ork__npu_exec *ex, const struct ork__npu_rot *rot,
                     uint32_t rows, uint32_t k)
{
    if (!ex->twin)
        return;
    if (rot)
        ork__twin_cpu(ex->twin, ORK_TWIN_PHASE_ROTATE, false,
                      ork__npu_rot_work(ork__twin_consts(ex->twin), rows, k), "rotate");
    ork__twin_cpu(ex->twin, ORK_TWIN_PHASE_QUANT, false,
                  ork_twin_cpu_quantize(ork__twin_consts(ex->twin), rows, k), "quant");
}

static void tw_dequant(const struct ork__npu_exec *ex, uint64_t n)
{
    if (ex->twin)
        ork__twin_cpu(ex->twin, ORK_TWIN_PHASE_DEQUANT, false,
                      ork_twin_cpu_dequant(ork__twin_consts(ex->twin), n, 4), "dequant");
}

/* Quantise columns [c0, c0 + k) of rows [0, mr) of x (row stride ldx) into dense a8 [mr][k]. */
static int quantize_cols(const float *x, uint32_t ldx, uint32_t c0, uint32_t k, uint32_t mr,
                         int8_t *a8, float *a_s)
{
    for (uint32_t i = 0; i < mr; i++) {
        int ret = ork_npu_quantize_rows_i8(x + (size_t)i * ldx + c0, 1, k, a8 + (size_t)i * k,
                                           a_s + i);
        if (ret < 0)
            return ret;
    }
    return 0;
}

/* The int8 rows of a matrix's input: columns [c0, c0 + k) of rows [0, mr) of x (row stride
 * ldx) into dense a8 [mr][k] and their scales a_s, each row rotated first (R^T x, into the
 * executor's scratch ex->xr) when the matrix has a rotation. The matrices of one op share K,
 * hence the rotation: their input is rotated and quantised once. */
static int quant_rows(struct ork__npu_exec *ex, const struct ork__npu_rot *rot, const float *x,
                      uint32_t ldx, uint32_t c0, uint32_t k, uint32_t mr, int8_t *a8, float *a_s)
{
    if (rot) {
        ork__npu_rot_rows(rot, x, ldx, c0, mr, ex->xr);
        return ork_npu_quantize_rows_i8(ex->xr, mr, k, a8, a_s);
    }
    if (ldx == k && c0 == 0)
        return ork_npu_quantize_rows_i8(x, mr, k, a8, a_s);
    return quantize_cols(x, ldx, c0, k, mr, a8, a_s);
}

/* y = dequantised C columns [c0, c0 + n) of rows [0, m) (C row stride ldc). */
static void dequant_part(const int32_t *c, uint32_t ldc, uint32_t c0, uint32_t n, uint32_t m,
                         const float *a_s, const float *w_s, float *y)
{
    for (uint32_t i = 0; i < m; i++) {
        const int32_t *ci = c + (size_t)i * ldc + c0;
        float *yi = y + (size_t)i * n;
        float as = a_s[i];
        for (uint32_t j = 0; j < n; j++)
            yi[j] = (float)ci[j] * as * w_s[c0 + j];
    }
}

struct ork_npu_matmul *ork__npu_mat_plan(const struct ork__npu_exec *ex, const struct npu_mat *mt,
                                         uint32_t m, uint32_t *idx,
                                         const struct ork_npu_matmul_info **info)
{
    uint32_t i = 0;
    while (i + 1 < ex->n_prog && !(ex->prog_rows[i] >= m && mt->prog[i]))
        i++;            /* the max_m plan is always made */
    *idx = i;
    if (i < mt->n_dprog && mt->dprog[i]) {
        *info = &mt->dinfo[i];
        return mt->dprog[i];
    }
    *info = &mt->info[i];
    return mt->prog[i];
}

/* One run of mt's plan of size idx (in: its info, prog's or the decode copy's). */
static void count_run(struct ork__npu_exec *ex, const struct npu_mat *mt,
                      const struct ork_npu_matmul_info *in, uint32_t idx)
{
    if (mt->dev != ex->last_dev) {
        ex->last_dev = mt->dev;
        ex->n_domain_switches++;
    }
    ex->st.n_submits += in->n_submits ? in->n_submits : 1;
    ex->st.prog_runs[idx]++;
    if (in == &mt->dinfo[idx])
        ex->st.decode_copy_runs++;
}

/* Dequantise rows [r0, r0 + mr) of a fused op from C (row stride mt->n) into its parts. */
static void scatter_parts(const struct npu_opmat *o, const int32_t *c, const float *a_s,
                          uint32_t mr, int32_t r0, float *const *outs)
{
    const struct npu_mat *mt = &o->mat[0];
    uint32_t c0 = 0;
    for (int pi = 0; pi < o->n_parts; pi++) {
        dequant_part(c, mt->n, c0, o->part_n[pi], mr, a_s, mt->scales,
                     outs[pi] + (size_t)r0 * o->part_n[pi]);
        c0 += o->part_n[pi];
    }
}

/* A fused op over more rows than one plan run takes (prefill): M-chunks pipelined on the async
 * worker, so the CPU quantises chunk i+1 and dequantises chunk i-1 while the NPU runs chunk i.
 * A is copied in at submit, so one A buffer serves; C and the row scales are double-buffered. */
static int run_pipelined(struct ork__npu_exec *ex, struct npu_opmat *o, const float *x, int32_t m,
                         float *const *outs)
{
    struct npu_mat *mt = &o->mat[0];
    uint32_t k = mt->k, mm = mt->max_m, idx;
    int32_t nc = (int32_t)((m + (int32_t)mm - 1) / (int32_t)mm);
    struct ork_npu_job *job = NULL;
    int ret;
    uint32_t mr0 = (uint32_t)(m < (int32_t)mm ? m : (int32_t)mm);
    /* each chunk on the smallest plan that holds it (the last may be short) */
    const struct ork_npu_matmul_info *in;
    struct ork_npu_matmul *plan = ork__npu_mat_plan(ex, mt, mr0, &idx, &in);
    uint32_t run_idx = idx;
    tw_quant(ex, mt->rot, mr0, k);
    if ((ret = ork__twin_npu_submit(ex->twin, in, mr0, mt->dev, true, 0, ex->tw_label)) < 0 ||
        (ret = quant_rows(ex, mt->rot, x, k, 0, k, mr0, ex->a8, ex->a_scales)) < 0 ||
        (ret = ork_npu_matmul_submit_async(plan, ex->a8, mr0, ex->c32, &job)) < 0)
        return ret;
    for (int32_t i = 0; i < nc; i++) {
        int32_t r0 = i * (int32_t)mm;
        uint32_t mr = (uint32_t)(m - r0 < (int32_t)mm ? m - r0 : (int32_t)mm);
        int32_t r1 = r0 + (int32_t)mm;
        uint32_t mr1 = i + 1 < nc ? (uint32_t)(m - r1 < (int32_t)mm ? m - r1 : (int32_t)mm) : 0;
        float *as_next = ex->a_scales + (size_t)((i + 1) & 1) * mm;
        int qret = 0;
        if (mr1) {      /* overlaps chunk i on the NPU */
            tw_quant(ex, mt->rot, mr1, k);
            qret = quant_rows(ex, mt->rot, x + (size_t)r1 * k, k, 0, k, mr1, ex->a8, as_next);
        }
        if ((ret = ork_npu_job_wait(job)) < 0 || (ret = ork__twin_npu_wait(ex->twin, i & 1)) < 0)
            return ret;
        if (qret < 0)
            return qret;
        count_run(ex, mt, in, run_idx);
        if (mr1) {
            plan = ork__npu_mat_plan(ex, mt, mr1, &idx, &in);
            run_idx = idx;
        }
        if (mr1 && ((ret = ork__twin_npu_submit(ex->twin, in, mr1, mt->dev, true, (i + 1) & 1,
                                                ex->tw_label)) < 0 ||
                    (ret = ork_npu_matmul_submit_async(plan, ex->a8, mr1,
                                                       ex->c32 + (size_t)((i + 1) & 1) * ex->c32_half,
                                                       &job)) < 0))
            return ret;
        /* overlaps chunk i+1 on the NPU */
        tw_dequant(ex, (uint64_t)mr * mt->n);
        scatter_parts(o, ex->c32 + (size_t)(i & 1) * ex->c32_half,
                      ex->a_scales + (size_t)(i & 1) * mm, mr, r0, outs);
    }
    return 0;
}

static int run_mat(struct ork__npu_exec *ex, struct npu_mat *mt, uint32_t m)
{
    uint32_t idx;
    const struct ork_npu_matmul_info *in;
    struct ork_npu_matmul *plan = ork__npu_mat_plan(ex, mt, m, &idx, &in);
    int ret = ork__twin_npu_submit(ex->twin, in, m, mt->dev, false, 0, ex->tw_label);
    if (ret == 0)
        ret = ork_npu_matmul_run_i8(plan, ex->a8, m, ex->c32);
    if (ret == 0)
        ret = ork__twin_npu_wait(ex->twin, 0);
    if (ret < 0)
        return ret;
    count_run(ex, mt, in, idx);
    return 0;
}

/* ---- the K-split O projection ------------------------------------------------------------
 * The O projection's input (the attention output, head-major) is split by heads into columns
 * [0, ka) and [ka, K). Each half is its own int8 matrix with per-output-channel scales ws_h,
 * and each row of each half of the input is quantised with its own scale as_h, so
 *   y[i][j] = sum_h as_h[i] * ws_h[j] * C_h[i][j],  C_h = A_h . W_h^T (int32, exact),
 * which is the same w8a8 formula applied to two shorter dot products and then summed in f32:
 * each half is quantised over its own range (at least as fine as one scale over the row). */


/* y (+)= dequantised C [m][n] (add: accumulate into y). */
static void dequant_add(const int32_t *c, uint32_t n, uint32_t m, const float *a_s,
                        const float *w_s, float *y, bool add)
{
    for (uint32_t i = 0; i < m; i++) {
        const int32_t *ci = c + (size_t)i * n;
        float *yi = y + (size_t)i * n;
        float as = a_s[i];
        if (add)
            for (uint32_t j = 0; j < n; j++)
                yi[j] += (float)ci[j] * as * w_s[j];
        else
            for (uint32_t j = 0; j < n; j++)
                yi[j] = (float)ci[j] * as * w_s[j];
    }
}

/* A K-split op over m rows, synchronously: per M-chunk, each half quantised, run and summed. */
static int run_ksplit(struct ork__npu_exec *ex, struct npu_opmat *o, const float *x, int32_t m,
                      float *y)
{
    uint32_t kx = o->mat[0].k + o->mat[1].k, n = o->mat[0].n;
    int32_t rows = (int32_t)(o->mat[0].max_m < o->mat[1].max_m ? o->mat[0].max_m
                                                                : o->mat[1].max_m);
    for (int32_t r0 = 0; r0 < m; r0 += rows) {
        uint32_t mr = (uint32_t)(m - r0 < rows ? m - r0 : rows);
        for (int h = 0; h < 2; h++) {
            struct npu_mat *mt = &o->mat[h];
            tw_quant(ex, mt->rot, mr, mt->k);
            int ret = quant_rows(ex, mt->rot, x + (size_t)r0 * kx, kx, mt->c0, mt->k, mr, ex->a8,
                                 ex->a_scales);
            if (ret < 0 || (ret = run_mat(ex, mt, mr)) < 0)
                return ret;
            tw_dequant(ex, (uint64_t)mr * n);
            dequant_add(ex->c32, n, mr, ex->a_scales, mt->scales, y + (size_t)r0 * n, h > 0);
        }
    }
    return 0;
}

/* Model clock of device dev (0 on hardware). */
static int64_t model_now(const struct ork__npu_exec *ex, int dev)
{
    struct ork_npu_model_time t;
    if (!ex->is_sim || ork_npu_model_time(ex->dev[dev], &t) < 0)
        return 0;
    return t.now_ns;
}

int32_t ork__npu_exec_o_split(struct ork__npu_exec *ex, int32_t layer, int32_t m,
                              int32_t n_heads)
{
    if (!ex || m < 1)
        return 0;
    const struct npu_opmat *o = npu_op_at(ex, ORK__NPU_O, layer);
    if (!o->on_npu || !o->k_split || !ex->plan->step[ORK__NPU_O].overlap ||
        m > (int32_t)o->mat[0].max_m || m > (int32_t)o->mat[1].max_m)
        return 0;
    uint32_t kx = o->mat[0].k + o->mat[1].k;
    return (int32_t)((uint64_t)o->mat[0].k * (uint64_t)n_heads / kx);
}

int ork__npu_exec_o_submit(struct ork__npu_exec *ex, int32_t layer, const float *att, int32_t m)
{
    struct npu_opmat *o = npu_op_at(ex, ORK__NPU_O, layer);
    struct npu_mat *mt = &o->mat[0];
    uint32_t kx = mt->k + o->mat[1].k;
    ork__npu_calib_observe(ex, ORK__NPU_O, layer, att, m);      /* both halves' input */
    int64_t t0 = ork__now_ns();
    ork_npu_exec_traced("npu o_a (async)");
    uint32_t idx;
    const struct ork_npu_matmul_info *in;
    struct ork_npu_matmul *plan = ork__npu_mat_plan(ex, mt, (uint32_t)m, &idx, &in);
    tw_quant(ex, mt->rot, (uint32_t)m, mt->k);
    int ret = ork__twin_npu_submit(ex->twin, in, (uint32_t)m, mt->dev, true, 0,
                                   "npu o_a (async)");
    if (ret == 0)
        ret = quant_rows(ex, mt->rot, att, kx, mt->c0, mt->k, (uint32_t)m, ex->a8,
                         ex->a_scales);
    ex->o_model0_ns = model_now(ex, mt->dev);
    if (ret == 0)
        ret = ork_npu_matmul_submit_async(plan, ex->a8, (uint32_t)m, ex->c32, &ex->o_job);
    ork_npu_exec_untraced();
    if (ret < 0) {
        ex->o_job = NULL;
        return ret;
    }
    count_run(ex, mt, in, idx);
    ex->o_sub_ns = ork__now_ns();
    double ms = (double)(ex->o_sub_ns - t0) / 1e6;
    ex->st.npu_wall_ms += ms;
    ex->batch_npu_ms += ms;
    ex->st.sect_ms[ORK__NPU_O] += ms;
    /* the caller's work from here to _o_finish runs while the first half is on the NPU */
    ork_npu_exec_traced("cpu overlapped (o_a in flight)");
    return 0;
}

/* Wait for the first O half; account the caller's CPU time since its submit as overlapped,
 * up to the submit's modelled duration. */
static int o_wait_first(struct ork__npu_exec *ex, const struct npu_mat *mt)
{
    int64_t t = ork__now_ns();
    ork_npu_exec_untraced();
    int ret = ork_npu_job_wait(ex->o_job);
    int tret = ork__twin_npu_wait(ex->twin, 0);
    if (ret == 0)
        ret = tret;
    ex->o_job = NULL;
    double cpu_ms = (double)(t - ex->o_sub_ns) / 1e6;
    double npu_ms = (double)(model_now(ex, mt->dev) - ex->o_model0_ns) / 1e6;
    ex->st.n_overlapped++;
    ex->st.cpu_inflight_ms += cpu_ms;
    ex->st.cpu_overlap_ms += cpu_ms < npu_ms ? cpu_ms : npu_ms;
    return ret;
}

int ork__npu_exec_o_finish(struct ork__npu_exec *ex, int32_t layer, const float *att, int32_t m,
                           float *y)
{
    struct npu_opmat *o = npu_op_at(ex, ORK__NPU_O, layer);
    struct npu_mat *ma = &o->mat[0], *mb = &o->mat[1];
    uint32_t kx = ma->k + mb->k, n = ma->n, mr = (uint32_t)m;
    int ret = o_wait_first(ex, ma);
    int64_t t0 = ork__now_ns();
    ork_npu_exec_traced("npu o_b");
    /* the second half, synchronously (nothing is left to overlap it with but the first
     * half's dequantisation, which is not worth a hand-off to the async worker): its own row
     * scales and C buffer */
    float *as_b = ex->a_scales + ex->max_m;
    int32_t *c_b = ex->c32 + ex->c32_half;
    uint32_t idx;
    const struct ork_npu_matmul_info *inb;
    struct ork_npu_matmul *plan_b = ork__npu_mat_plan(ex, mb, mr, &idx, &inb);
    tw_quant(ex, mb->rot, mr, mb->k);
    if (ret == 0)
        ret = quant_rows(ex, mb->rot, att, kx, mb->c0, mb->k, mr, ex->a8, as_b);
    if (ret == 0)
        ret = ork__twin_npu_submit(ex->twin, inb, mr, mb->dev, false, 1, "npu o_b");
    if (ret == 0)
        ret = ork_npu_matmul_run_i8(plan_b, ex->a8, mr, c_b);
    if (ret == 0)
        ret = ork__twin_npu_wait(ex->twin, 1);
    if (ret == 0) {
        tw_dequant(ex, (uint64_t)mr * n);
        tw_dequant(ex, (uint64_t)mr * n);
        count_run(ex, mb, inb, idx);
        dequant_add(ex->c32, n, mr, ex->a_scales, ma->scales, y, false);
        dequant_add(c_b, n, mr, as_b, mb->scales, y, true);
    }
    ork_npu_exec_untraced();
    double ms = (double)(ork__now_ns() - t0) / 1e6;
    ex->st.npu_wall_ms += ms;
    ex->batch_npu_ms += ms;
    ex->st.sect_ms[ORK__NPU_O] += ms;
    return ret;
}

int ork__npu_exec_run(struct ork__npu_exec *ex, enum ork__npu_op op, int32_t layer,
                      const float *x, int32_t m, float *const *outs)
{
    if (!ex)
        return 0;
    struct npu_opmat *o = npu_op_at(ex, op, layer);
    if (!o->on_npu)
        return 0;
    ork__npu_calib_observe(ex, op, layer, x, m);     /* --npu-weights-calib (calib.c) */
    int64_t t0 = ork__now_ns();
    uint32_t k = o->mat[0].k;
    int ret = ork_npu_exec_traced(ork__npu_op_trace_name(op));
    ex->tw_label = ork__npu_op_trace_name(op);
    if (o->k_split) {
        ret = run_ksplit(ex, o, x, m, outs[0]);
        m = 0;      /* done */
    }
    /* rows per run: the smallest largest plan of the op's matrices (the same K: the same) */
    int32_t rows = (int32_t)o->mat[0].max_m;
    for (int pi = 1; pi < o->n_mats; pi++)
        rows = (int32_t)o->mat[pi].max_m < rows ? (int32_t)o->mat[pi].max_m : rows;
    if (o->n_mats == 1 && m > rows) {
        ret = run_pipelined(ex, o, x, m, outs);
        m = 0;      /* done */
    }
    for (int32_t r0 = 0; r0 < m; r0 += rows) {
        uint32_t mr = (uint32_t)(m - r0 < rows ? m - r0 : rows);
        tw_quant(ex, o->mat[0].rot, mr, k);
        if ((ret = quant_rows(ex, o->mat[0].rot, x + (size_t)r0 * k, k, 0, k, mr, ex->a8,
                              ex->a_scales)) < 0)
            break;
        if (o->n_mats == 1) {
            if ((ret = run_mat(ex, &o->mat[0], mr)) < 0)
                break;
            tw_dequant(ex, (uint64_t)mr * o->mat[0].n);
            scatter_parts(o, ex->c32, ex->a_scales, mr, r0, outs);
        } else {
            for (int pi = 0; pi < o->n_mats; pi++) {
                struct npu_mat *mt = &o->mat[pi];
                if ((ret = run_mat(ex, mt, mr)) < 0)
                    break;
                tw_dequant(ex, (uint64_t)mr * mt->n);
                dequant_part(ex->c32, mt->n, 0, mt->n, mr, ex->a_scales, mt->scales,
                             outs[pi] + (size_t)r0 * mt->n);
            }
            if (ret < 0)
                break;
        }
    }
    ork_npu_exec_untraced();
    if (ret < 0)
        return ret;
    double ms = (double)(ork__now_ns() - t0) / 1e6;
    ex->st.npu_wall_ms += ms;
    ex->batch_npu_ms += ms;
    ex->st.sect_ms[op] += ms;
    return 1;
}

void ork__npu_exec_batch_begin(struct ork__npu_exec *ex)
{
    if (!ex)
        return;
    pthread_mutex_lock(&ex->lock);
    ork_npu_exec_traced("forward");
    ex->batch_t0 = ork__now_ns();
    ex->batch_npu_ms = 0;
}

void ork__npu_exec_batch_end(struct ork__npu_exec *ex, int32_t m)
{
    if (!ex)
        return;
    if (ex->o_job) {        /* a forward that failed between _o_submit and _o_finish */
        ork_npu_exec_untraced();
        ork_npu_job_wait(ex->o_job);
        ex->o_job = NULL;
    }
    double wall = (double)(ork__now_ns() - ex->batch_t0) / 1e6;
    ex->st.wall_ms += wall;
    ex->st.sect_ms[ORK__NPU_N_OPS] += wall - ex->batch_npu_ms;    /* the CPU rest */
    ex->st.n_forward++;
    ex->st.n_rows += (uint64_t)m;
    ork_npu_exec_untraced();
    pthread_mutex_unlock(&ex->lock);
}

/* ---- public ------------------------------------------------------------------------------ */

void ork__npu_model_base_reset(struct ork__npu_exec *ex)
{
    if (!ex->is_sim)
        return;
    for (int d = 0; d < ex->n_dev; d++)
        if (ork_npu_model_time(ex->dev[d], &ex->model_base[d]) < 0)
            memset(&ex->model_base[d], 0, sizeof ex->model_base[d]);
    ex->switches_base = ex->n_domain_switches;
}

int ork_model_npu_stats(const struct ork_model *m, struct ork_npu_exec_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (!m || !m->npu)
        return ORK_ENOENT;
    const struct ork__npu_exec *ex = m->npu;
    *out = ex->st;
    /* modelled time: the simulators' clocks since the base, plus the domain switches */
    bool modelled = false;
    int64_t switch_ns = 0;
    for (int d = 0; ex->is_sim && d < ex->n_dev; d++) {
        struct ork_npu_model_time t;
        if (ork_npu_model_time(ex->dev[d], &t) < 0)
            continue;
        const struct ork_npu_model_time *b = &ex->model_base[d];
        modelled = true;
        switch_ns = t.domain_switch_ns;
        out->model_npu_ms += (double)(t.now_ns - b->now_ns) / 1e6;
        for (uint32_t c = 0; c < t.n_cores && c < 3; c++)
            out->model_core_busy_ms[c] += (double)(t.core_busy_ns[c] - b->core_busy_ns[c]) / 1e6;
    }
    if (modelled)
        out->model_npu_ms += (double)(ex->n_domain_switches - ex->switches_base) *
                             (double)switch_ns / 1e6;
    return 0;
}

void ork_model_npu_stats_reset(struct ork_model *m)
{
    if (!m || !m->npu)
        return;
    struct ork_npu_exec_stats *s = &m->npu->st;
    s->n_forward = s->n_rows = s->n_submits = 0;
    s->wall_ms = s->npu_wall_ms = s->model_npu_ms = 0;
    s->n_overlapped = 0;
    memset(s->prog_runs, 0, sizeof s->prog_runs);
    s->decode_copy_runs = 0;
    s->cpu_inflight_ms = s->cpu_overlap_ms = 0;
    memset(s->model_core_busy_ms, 0, sizeof s->model_core_busy_ms);
    memset(s->sect_ms, 0, sizeof s->sect_ms);
    ork__npu_model_base_reset(m->npu);
}

const char *ork_model_device(const struct ork_model *m)
{
    return m && m->npu ? m->npu->st.backend : "cpu";
}
