/* calib.c -- the calibration of the NPU weights (--npu-weights-calib FILE; calib.h, docs/dcomp.md
 * "Calibrated quantisation").
 *
 * 1. The executor is placed as the setting says (round-to-nearest codes).
 * 2. The model runs over the calibration text in windows; at each NPU op the executor hands
 *    its input rows to ork__npu_calib_observe, which takes, per NPU slot, the columns the slot
 *    reads and rotates them exactly as the executor does before quantising them (the same
 *    rotation object, ork__npu_rot_rows), and adds y^T y to the slot's blocked H (fp32, the
 *    diagonal blocks of ORK__NPU_GPTQ_BLOCK x ORK__NPU_GPTQ_BLOCK, calib.h). When all slots'
 *    H do not fit the memory bound at once, the slots are grouped into passes that do: every
 *    pass runs the whole text again on the same round-to-nearest executor and collects only
 *    its slots' H (so each H is the one a single pass would collect), then writes them to a
 *    temporary file (unlinked at once) and frees them.
 * 3. The executor is destroyed and created again while the collected H are applied: each
 *    slot's codes come from the setting's own quantiser first (grid and per-channel scales:
 *    max-abs or the clip search), then ork__npu_calib_requant replaces the codes with
 *    ork__npu_gptq_blocked's at those scales (an H written out is read back for it). A pack
 *    is rebuilt from them (it then holds calibrated codes), unless the run has no pack.
 *
 * The hooks find the collection through one process-wide pointer, set only for the duration
 * of one model's calibration (loads of other models meanwhile see their own executor and
 * nothing else: observe checks the executor, requant the slot's source matrices). */
#include "calib.h"
#include "npu_priv.h"

#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>
#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Calibration windows: the model's context or this many tokens, whichever is smaller (512:
 * every op of the fixtures and of 1.7B-7B models runs its prefill plans on them). */
#define CALIB_MAX_WINDOW 512
/* w4a8's codes (a tensor of grid ORK__NPU_W4A8_GRID): signed int4, the whole range
 * (npu-weight-decompression.md §2); the other grids, int8's and those of a tensor kept int8
 * under --npu-weights-int8 included, are [-L, L] (ork_orkpack_coding.grid). */
#define W4A8_LO (-8)
#define W4A8_HI 7
/* A calibration text larger than this is refused (the tokens used are a few thousand). */
#define CALIB_MAX_TEXT_BYTES (256u << 20)
/* Rows of a tensor re-quantised together (dequantised, then ork__npu_gptq_plan_rows on them:
 * 16 rows of K = 18944 are 1.2 MiB of fp32). */
#define CALIB_ROWS_AT_ONCE 16u
/* The load's output-error figure (tr(D H D^T), both codes) is summed over at most this many
 * rows of a tensor, evenly spaced (every row of the fixtures' tensors, n <= 512): each row
 * costs K x B multiply-adds per code set, twice the row's GPTQ updates. */
#define CALIB_ERR_ROWS 512u

/* One NPU slot's input statistics: the op's input columns [c0, c0 + k) (rotated by rot). */
struct calib_slot {
    int op;
    int32_t layer;                      /* the LM head: n_layers */
    const struct ork_mat *src[3];       /* the op's model matrices (identify the model) */
    uint32_t c0, k, ldx;                /* ldx: the op's whole input width */
    const struct ork__npu_rot *rot;     /* the executor's rotation (collecting only) */
    float *h;                           /* blocked H (calib.h): sum y y^T, each block's upper
                                         * triangle while collecting; NULL outside its pass
                                         * and once written out */
    uint64_t bytes;                     /* of h */
    uint32_t pass;
    bool spilled;                       /* h is at spill_off in the store's spill file */
    off_t spill_off;
    uint64_t rows;
    bool done;                          /* re-quantised (decode copies repeat the slot) */
};

struct calib_store {
    const struct ork__npu_exec *ex;     /* collecting on this executor */
    uint32_t n;
    struct calib_slot *s;
    uint32_t n_pass;
    uint64_t budget, pass_bytes;        /* the bound; the largest pass's H */
    FILE *spill;                        /* the H of every pass when there are several */
    float *y;                           /* scratch (y_rows, max k) */
    size_t y_cap;
    int err;                            /* the first error of a hook (reported after) */
    double e_rtn, e_gptq;               /* sum over slots of tr(D H D^T), both codes */
    double t_requant;                   /* seconds in ork__npu_calib_requant */
    struct ork_pool *pool;              /* the rows' threads while applying (NULL: this one) */
    uint32_t n_requant;
    uint32_t id;                        /* ork__npu_calib_pack_id while applying */
};

static _Atomic(struct calib_store *) collecting, applying;
static _Atomic uint32_t last_passes;
static pthread_mutex_t calib_lock = PTHREAD_MUTEX_INITIALIZER;  /* one calibration at a time */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void store_free(struct calib_store *st)
{
    for (uint32_t i = 0; i < st->n; i++)
        ork_free(st->s[i].h);
    ork_free(st->s);
    ork_free(st->y);
    if (st->spill)
        fclose(st->spill);
    memset(st, 0, sizeof(*st));
}

static int32_t op_layer_key(int op, int32_t layer, int32_t n_layers)
{
    return op == ORK__NPU_LM_HEAD ? n_layers : layer;
}

/* The slots of ex's NPU ops: one per distinct input column range of each op; grouped in
 * order into passes whose H fit budget bytes. */
static int store_init(struct calib_store *st, struct ork__npu_exec *ex, const struct ork_model *m,
                      uint64_t budget)
{
    memset(st, 0, sizeof(*st));
    uint32_t nt = (uint32_t)ex->n_layers * ORK__OPS_PER_LAYER + 1, cap = nt * 2;
    if (!(st->s = ork_calloc(cap, sizeof(*st->s))))
        return ORK_ENOMEM;
    for (uint32_t t = 0; t < nt; t++) {
        int op = t + 1 == nt ? ORK__NPU_LM_HEAD : (int)(t % ORK__OPS_PER_LAYER);
        int32_t layer = t + 1 == nt ? ex->n_layers : (int32_t)(t / ORK__OPS_PER_LAYER);
        const struct npu_opmat *o = &ex->ops[t];
        if (!o->on_npu)
            continue;
        const struct ork_mat *mats[3] = { 0 };
        ork__layer_op_mats(m, (enum ork__npu_op)op, layer, mats);
        uint32_t ldx = o->k_split ? o->mat[0].k + o->mat[1].k : o->mat[0].k;
        for (int i = 0; i < o->n_mats; i++) {
            const struct npu_mat *mt = &o->mat[i];
            bool seen = false;
            for (uint32_t j = 0; j < st->n; j++)
                seen |= st->s[j].op == op && st->s[j].layer == layer && st->s[j].c0 == mt->c0;
            if (seen || st->n == cap)
                continue;
            struct calib_slot *s = &st->s[st->n++];
            s->op = op;
            s->layer = layer;
            memcpy(s->src, mats, sizeof mats);
            s->c0 = mt->c0;
            s->k = mt->k;
            s->ldx = ldx;
            s->rot = mt->rot;
            s->bytes = (uint64_t)ork__npu_gptq_hb_floats(mt->k) * sizeof(float);
        }
    }
    uint64_t in_pass = 0;
    st->budget = budget;
    for (uint32_t i = 0; i < st->n; i++) {
        struct calib_slot *s = &st->s[i];
        if (s->bytes > budget) {
            char where[32] = "";
            if (s->op != ORK__NPU_LM_HEAD)
                snprintf(where, sizeof where, " of layer %d", (int)s->layer);
            int ret = ork_errorf(ORK_ENOMEM, "--npu-weights-calib: the NPU tensor %s%s "
                                 "(inputs %u..%u of %u) needs %.1f MiB of input second moments "
                                 "(%u diagonal blocks of up to %u x %u fp32), above the bound of "
                                 "%.1f MiB per pass (--npu-weights-calib-mem, calib_mem_bytes)",
                                 ork__npu_op_trace_name((enum ork__npu_op)s->op), where, s->c0,
                                 s->c0 + s->k - 1, s->ldx, (double)s->bytes / (1u << 20),
                                 ork__npu_gptq_n_blocks(s->k), ORK__NPU_GPTQ_BLOCK,
                                 ORK__NPU_GPTQ_BLOCK, (double)budget / (1u << 20));
            store_free(st);
            return ret;
        }
        if (st->n_pass == 0 || in_pass + s->bytes > budget) {
            st->n_pass++;
            in_pass = 0;
        }
        in_pass += s->bytes;
        s->pass = st->n_pass - 1;
        if (in_pass > st->pass_bytes)
            st->pass_bytes = in_pass;
    }
    st->ex = ex;
    return 0;
}

/* Each block of the blocked h (upper triangle) += y_b^T y_b over rows of y [rows][k]. */
static void add_moments(float *h, const float *y, uint32_t rows, uint32_t k)
{
    const uint32_t nb = ork__npu_gptq_n_blocks(k);
    for (uint32_t t = 0; t < rows; t++) {
        for (uint32_t b = 0; b < nb; b++) {
            const uint32_t kb = ork__npu_gptq_block_k(k, b);
            const float *restrict yt = y + (size_t)t * k + (size_t)b * ORK__NPU_GPTQ_BLOCK;
            float *restrict hb = h + ork__npu_gptq_block_off(k, b);
            for (uint32_t i = 0; i < kb; i++) {
                float a = yt[i];
                if (a == 0.0f)
                    continue;
                float *restrict hi = hb + (size_t)i * kb;
                for (uint32_t j = i; j < kb; j++)
                    hi[j] += a * yt[j];
            }
        }
    }
}

void ork__npu_calib_observe(const struct ork__npu_exec *ex, int op, int32_t layer,
                            const float *x, int32_t m)
{
    struct calib_store *st = atomic_load(&collecting);
    if (!st || st->ex != ex || m < 1 || st->err)
        return;
    int32_t key = op_layer_key(op, layer, ex->n_layers);
    for (uint32_t i = 0; i < st->n; i++) {
        struct calib_slot *s = &st->s[i];
        if (s->op != op || s->layer != key || !s->h)
            continue;
        size_t need = (size_t)m * s->k;
        if (need > st->y_cap) {
            float *y = ork_realloc(st->y, need * sizeof(float));
            if (!y) {
                st->err = ORK_ENOMEM;
                return;
            }
            st->y = y;
            st->y_cap = need;
        }
        if (s->rot)     /* exactly the executor's quant_rows: R^T of the slot's columns */
            ork__npu_rot_rows(s->rot, x, s->ldx, s->c0, (uint32_t)m, st->y);
        else
            for (int32_t r = 0; r < m; r++)
                memcpy(st->y + (size_t)r * s->k, x + (size_t)r * s->ldx + s->c0,
                       (size_t)s->k * sizeof(float));
        add_moments(s->h, st->y, (uint32_t)m, s->k);
        s->rows += (uint64_t)m;
    }
}

/* ---- re-quantisation ---------------------------------------------------------------------- */

static struct calib_slot *slot_for(struct calib_store *st, const struct pack_src *ps)
{
    for (uint32_t i = 0; i < st->n; i++) {
        struct calib_slot *s = &st->s[i];
        if (s->op == (int)ps->op && (s->op == ORK__NPU_LM_HEAD || s->layer == ps->layer) &&
            s->c0 == ps->c0 && s->k == ps->k && s->src[0] == ps->src[0])
            return s;
    }
    return NULL;
}

/* Row r of ps (columns [c0, c0 + k) of its stacked sources) into out, rotated by rot (k = 0:
 * none); row: one whole source row of scratch. */
static int slot_row(const struct pack_src *ps, size_t r, const struct ork__npu_rot *rot,
                    float *row, float *out)
{
    for (int i = 0; i < ps->ns; i++) {
        const struct ork_mat *w = ps->src[i];
        if (r < (size_t)w->n_rows) {
            const uint8_t *p = (const uint8_t *)w->data + r * w->row_bytes;
            int ret = ork_dequant_row(w->type, p, row, w->n_cols);
            if (ret < 0)
                return ret;
            if (rot->k)
                ork__npu_rot_apply(rot, row + ps->c0, out);
            else
                memcpy(out, row + ps->c0, (size_t)ps->k * sizeof(float));
            return 0;
        }
        r -= (size_t)w->n_rows;
    }
    return ork_errorf(ORK_ERANGE, "calibration: row past the tensor");
}

/* d^T H d for the row's error d = w - s q, H blocked (calib.h; each block symmetric, full):
 * the sum over the blocks of d_b^T H_b d_b. H_b d_b is summed in increasing column for each
 * entry, from H_b's rows (the same values as its columns): contiguous, so vectorised. d, hd:
 * scratch of k and of one block. */
static double out_err(const float *h, const float *w, const int8_t *q, float s, uint32_t k,
                      double *restrict d, double *restrict hd)
{
    for (uint32_t j = 0; j < k; j++)
        d[j] = (double)w[j] - (double)s * q[j];
    double e = 0.0;
    for (uint32_t b = 0, nb = ork__npu_gptq_n_blocks(k); b < nb; b++) {
        const uint32_t kb = ork__npu_gptq_block_k(k, b);
        const float *hb = h + ork__npu_gptq_block_off(k, b);
        const double *db = d + (size_t)b * ORK__NPU_GPTQ_BLOCK;
        for (uint32_t i = 0; i < kb; i++)
            hd[i] = 0.0;
        for (uint32_t j = 0; j < kb; j++) {
            const float *restrict hj = hb + (size_t)j * kb;
            const double dj = db[j];
            for (uint32_t i = 0; i < kb; i++)
                hd[i] += (double)hj[i] * dj;
        }
        for (uint32_t i = 0; i < kb; i++)
            e += db[i] * hd[i];
    }
    return e;
}

/* One thread's scratch for the rows of a tensor. */
struct requant_tls {
    float *row;                         /* one whole source row */
    float *w;                           /* (CALIB_ROWS_AT_ONCE, k) */
    int8_t *q;                          /* (CALIB_ROWS_AT_ONCE, k) */
    double *d, *hd, *wr;                /* k, one block, the plan's row scratch */
};

struct requant_bufs {
    struct ork__npu_gptq_plan plan;
    struct requant_tls *tls;            /* one per pool thread (or one) */
    int n_tls;
    double *er, *eg;                    /* per scored row: its output error, both codes */
    float *h_read;                      /* the slot's H read back from the spill file */
    struct ork__npu_rot rot;
};

static void tls_free(struct requant_tls *t)
{
    ork_free(t->row);
    ork_free(t->w);
    ork_free(t->q);
    ork_free(t->d);
    ork_free(t->hd);
    ork_free(t->wr);
}

static int tls_init(struct requant_tls *t, const struct pack_src *ps)
{
    const uint32_t k = ps->k, b0 = ork__npu_gptq_block_k(k, 0);
    size_t cols = 0;
    for (int i = 0; i < ps->ns; i++)
        if ((size_t)ps->src[i]->n_cols > cols)
            cols = (size_t)ps->src[i]->n_cols;
    memset(t, 0, sizeof(*t));
    if (!(t->row = ork_malloc(cols * sizeof(float))) ||
        !(t->w = ork_malloc((size_t)CALIB_ROWS_AT_ONCE * k * sizeof(float))) ||
        !(t->q = ork_malloc((size_t)CALIB_ROWS_AT_ONCE * k)) ||
        !(t->d = ork_malloc((size_t)k * sizeof(double))) ||
        !(t->hd = ork_malloc((size_t)b0 * sizeof(double))) ||
        !(t->wr = ork_malloc((size_t)ORK__NPU_GPTQ_ROWS_SCRATCH_ROWS * b0 * sizeof(double)))) {
        tls_free(t);
        return ORK_ENOMEM;
    }
    return 0;
}

static void bufs_free(struct requant_bufs *b)
{
    ork__npu_gptq_plan_fini(&b->plan);
    for (int i = 0; i < b->n_tls; i++)
        tls_free(&b->tls[i]);
    ork_free(b->tls);
    ork_free(b->er);
    ork_free(b->eg);
    ork_free(b->h_read);
    if (b->rot.k)
        ork__npu_rot_fini(&b->rot);
}

/* The codes of a tensor's rows, CALIB_ROWS_AT_ONCE at a time, taken from a shared counter by
 * the pool's threads (ork_pool_run_shared): each item's codes replace the round-to-nearest
 * ones in q, and a scored row's output errors (both codes) go to er/eg at its own index, so
 * the result does not depend on which thread did what. */
struct requant_job {
    const struct calib_slot *s;
    const float *h;
    const struct pack_src *ps;
    struct requant_bufs *b;
    int32_t lo, hi;
    int8_t *q;
    const float *scales;
    size_t err_step;
    atomic_size_t next;
    atomic_int err;
};

static void requant_worker(void *ctx, int ith, int nth)
{
    (void)nth;
    struct requant_job *j = ctx;
    struct requant_tls *t = &j->b->tls[ith];
    const uint32_t k = j->ps->k;
    for (;;) {
        size_t r0 = atomic_fetch_add(&j->next, CALIB_ROWS_AT_ONCE);
        if (r0 >= j->ps->n || atomic_load(&j->err))
            return;
        uint32_t nr = j->ps->n - r0 < CALIB_ROWS_AT_ONCE ? (uint32_t)(j->ps->n - r0)
                                                         : CALIB_ROWS_AT_ONCE;
        int ret = 0;
        for (uint32_t i = 0; ret == 0 && i < nr; i++)
            ret = slot_row(j->ps, r0 + i, &j->b->rot, t->row, t->w + (size_t)i * k);
        if (ret == 0)
            ret = ork__npu_gptq_plan_rows_wr(&j->b->plan, t->w, nr, j->lo, j->hi,
                                             j->scales + r0, t->wr, t->q);
        if (ret < 0) {
            atomic_store(&j->err, ret);
            return;
        }
        for (uint32_t i = 0; i < nr; i++) {
            const size_t r = r0 + i;
            const float *w = t->w + (size_t)i * k;
            int8_t *qr = j->q + r * k;
            if (!j->s->done && r % j->err_step == 0) {
                j->b->er[r / j->err_step] = out_err(j->h, w, qr, j->scales[r], k, t->d, t->hd);
                j->b->eg[r / j->err_step] = out_err(j->h, w, t->q + (size_t)i * k,
                                                    j->scales[r], k, t->d, t->hd);
            }
            memcpy(qr, t->q + (size_t)i * k, k);
        }
    }
}

/* The new codes of every row into q (on pool's threads when there is one), then, in row
 * order on this thread, the sums: the scored rows' output errors and the weights' squared
 * error and norm (each row dequantised again, so no n x k copy is held). */
static int requant_rows(const struct calib_slot *s, const float *h, const struct pack_src *ps,
                        int32_t lo, int32_t hi, int8_t *q, const float *scales,
                        struct requant_bufs *b, struct ork_pool *pool, double *e_rtn,
                        double *e_gptq, double *err2, double *ref2)
{
    const uint32_t k = ps->k;
    struct requant_job j = { .s = s, .h = h, .ps = ps, .b = b, .lo = lo, .hi = hi, .q = q,
                             .scales = scales };
    j.err_step = ps->n <= CALIB_ERR_ROWS ? 1 : (ps->n + CALIB_ERR_ROWS - 1) / CALIB_ERR_ROWS;
    atomic_init(&j.next, 0);
    atomic_init(&j.err, 0);
    if (pool && b->n_tls > 1)
        ork_pool_run_shared(pool, requant_worker, &j);
    else
        requant_worker(&j, 0, 1);
    int ret = atomic_load(&j.err);
    if (ret < 0)
        return ork_errorf(ret, "calibration: re-quantising rows of a tensor of k = %u", k);
    struct requant_tls *t = &b->tls[0];
    for (size_t r = 0; r < ps->n; r++) {
        if ((ret = slot_row(ps, r, &b->rot, t->row, t->w)) < 0)
            return ret;
        const int8_t *qn = q + r * k;
        if (!s->done && r % j.err_step == 0) {
            *e_rtn += b->er[r / j.err_step];
            *e_gptq += b->eg[r / j.err_step];
        }
        for (uint32_t c = 0; c < k; c++) {
            double dd = (double)t->w[c] - (double)scales[r] * qn[c];
            *err2 += dd * dd;
            *ref2 += (double)t->w[c] * t->w[c];
        }
    }
    return 0;
}

/* The slot's H: in memory, or read back from the spill file into b->h_read. */
static int slot_h(struct calib_store *st, const struct calib_slot *s, struct requant_bufs *b,
                  const float **h)
{
    if (s->h) {
        *h = s->h;
        return 0;
    }
    size_t nf = (size_t)(s->bytes / sizeof(float));
    if (!s->spilled || !st->spill)
        return ork_errorf(ORK_EINVAL, "calibration: no H for a slot of k = %u", s->k);
    if (!(b->h_read = ork_malloc(nf * sizeof(float))))
        return ORK_ENOMEM;
    if (fseeko(st->spill, s->spill_off, SEEK_SET) != 0 ||
        fread(b->h_read, sizeof(float), nf, st->spill) != nf)
        return ork_errorf(ORK_EIO, "calibration: reading the inputs' second moments back from "
                          "the temporary file: %s", strerror(errno));
    *h = b->h_read;
    return 0;
}

int ork__npu_calib_requant(const struct ork_npu_weights_opts *o, const struct pack_src *ps,
                           const char *name, float *row, int8_t *q, const float *scales,
                           struct ork_orkpack_coding *c)
{
    struct calib_store *st = atomic_load(&applying);
    struct calib_slot *s = st ? slot_for(st, ps) : NULL;
    if (!s || !s->rows)
        return 0;
    double t0 = now_s();
    struct requant_bufs b = { 0 };
    const uint32_t k = ps->k;
    const size_t n_err = ps->n <= CALIB_ERR_ROWS ? ps->n : CALIB_ERR_ROWS + 1;
    const float *h = NULL;
    int n_tls = st->pool ? ork_pool_threads(st->pool) : 1, ret = 0;
    (void)row;
    if (!(b.tls = ork_calloc((size_t)(n_tls > 0 ? n_tls : 1), sizeof(*b.tls))) ||
        !(b.er = ork_calloc(n_err, sizeof(double))) ||
        !(b.eg = ork_calloc(n_err, sizeof(double)))) {
        ret = ORK_ENOMEM;
        goto out;
    }
    for (; b.n_tls < (n_tls > 0 ? n_tls : 1); b.n_tls++)
        if ((ret = tls_init(&b.tls[b.n_tls], ps)) < 0)
            goto out;
    if (o && (o->flags & ORK_NPU_WENC_ROTATE) && (ret = ork__npu_rot_init(&b.rot, k)) < 0)
        goto out;
    if ((ret = slot_h(st, s, &b, &h)) < 0)
        goto out;
    if ((ret = ork__npu_gptq_plan_init(&b.plan, h, k, ORK__NPU_GPTQ_ORDER_DEFAULT)) < 0) {
        ret = ork_errorf(ret, "calibration of %s: %s", name, ork_error_message());
        goto out;
    }
    double e_rtn = 0.0, e_gptq = 0.0, err2 = 0.0, ref2 = 0.0;
    bool w4 = c->grid == ORK__NPU_W4A8_GRID;
    int32_t lo = w4 ? W4A8_LO : -(int32_t)c->grid, hi = w4 ? W4A8_HI : (int32_t)c->grid;
    if ((ret = requant_rows(s, h, ps, lo, hi, q, scales, &b, st->pool, &e_rtn, &e_gptq,
                            &err2, &ref2)) < 0)
        goto out;
    c->rel_rmse = (float)(ref2 > 0.0 ? sqrt(err2 / ref2) : 0.0);
    if (!s->done) {
        st->e_rtn += e_rtn;
        st->e_gptq += e_gptq;
        st->n_requant++;
        if (ork_debug(ORK_DBG_MODEL))
            ORK_LOGI("NPU weights: %s (%ux%u) calibrated on %llu rows, [%d, %d]: output error "
                     "on them %.4g -> %.4g (x%.3f), weights' rel-RMSE now %.4f", name, ps->n, k,
                     (unsigned long long)s->rows, lo, hi, e_rtn, e_gptq,
                     e_rtn > 0.0 ? e_gptq / e_rtn : 1.0, c->rel_rmse);
    }
    s->done = true;
out:
    bufs_free(&b);
    st->t_requant += now_s() - t0;
    return ret;
}

/* ---- the flow ------------------------------------------------------------------------------ */

/* FNV-1a, 32 bits (offset basis 2166136261, prime 16777619: the published constants). */
static uint32_t fnv1a(uint32_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static uint32_t calib_id(const int32_t *ids, size_t n)
{
    uint32_t v = ORK__NPU_CALIB_ID;
    double damp = ORK__NPU_GPTQ_DAMP;
    uint32_t h = fnv1a(2166136261u, &v, sizeof v);
    h = fnv1a(h, &damp, sizeof damp);
    h = fnv1a(h, ids, n * sizeof(*ids));
    return h ? h : 1u;
}

uint32_t ork__npu_calib_last_passes(void)
{
    return atomic_load(&last_passes);
}

uint32_t ork__npu_calib_pack_id(void)
{
    struct calib_store *st = atomic_load(&applying);
    return st ? st->id : 0;
}

static int read_text(const char *path, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ork_errorf(ORK_EIO, "--npu-weights-calib %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = ork_malloc(cap + 1);
    int ret = buf ? 0 : ORK_ENOMEM;
    while (ret == 0) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= CALIB_MAX_TEXT_BYTES) {
            ret = ork_errorf(ORK_ERANGE, "--npu-weights-calib %s: larger than %u MiB", path,
                             CALIB_MAX_TEXT_BYTES >> 20);
            break;
        }
        char *nb = ork_realloc(buf, cap * 2 + 1);
        if (!nb)
            ret = ORK_ENOMEM;
        else {
            buf = nb;
            cap *= 2;
        }
    }
    if (ret == 0 && ferror(f))
        ret = ork_errorf(ORK_EIO, "--npu-weights-calib %s: read error", path);
    fclose(f);
    if (ret < 0) {
        ork_free(buf);
        return ret;
    }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

/* The calibration text's first max_tok tokens (no BOS; the windows add it). */
static int calib_tokens(const struct ork_model *m, const char *path, uint32_t max_tok,
                        int32_t **ids, size_t *n)
{
    if (!m->tok)
        return ork_errorf(ORK_EINVAL, "--npu-weights-calib: the model was loaded without its "
                          "tokenizer");
    char *text = NULL;
    size_t len = 0;
    int ret = read_text(path, &text, &len);
    if (ret < 0)
        return ret;
    *ids = ork_malloc((len + 1) * sizeof(int32_t));
    if (!*ids)
        ret = ORK_ENOMEM;
    else
        ret = ork_tokenize(m->tok, text, len, false, false, *ids, len + 1, n);
    ork_free(text);
    if (ret == 0 && *n < 2)
        ret = ork_errorf(ORK_EINVAL, "--npu-weights-calib %s: %zu tokens (at least 2)", path,
                         *n);
    if (ret < 0) {
        ork_free(*ids);
        *ids = NULL;
        return ret;
    }
    if (*n > max_tok)
        *n = max_tok;
    return 0;
}

/* Run the model over ids in windows of w tokens (BOS first when the model wants it), every
 * token's logits computed (so the LM head sees every row). *n_win: windows run. */
static int run_windows(struct ork_model *m, const int32_t *ids, size_t n, int32_t w,
                       uint32_t *n_win)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = w;
    sp.n_batch = w;
    struct ork_session *s;
    int ret = ork_session_create(m, &sp, &s);
    if (ret < 0)
        return ret;
    int32_t bos = ork_tokenizer_add_bos(m->tok) ? ork_tokenizer_bos(m->tok) : -1;
    int32_t *win = ork_malloc((size_t)w * sizeof(int32_t));
    float *logits = ork_malloc((size_t)w * (size_t)m->cfg.n_vocab * sizeof(float));
    if (!win || !logits)
        ret = ORK_ENOMEM;
    *n_win = 0;
    for (size_t at = 0; ret == 0 && at + 1 < n;) {
        int32_t nw = 0;
        if (bos >= 0)
            win[nw++] = bos;
        while (nw < w && at < n)
            win[nw++] = ids[at++];
        ork_session_reset(s);
        ret = ork_model_eval(s, win, nw, 0, logits, ORK_EVAL_ALL_LOGITS);
        (*n_win)++;
    }
    ork_free(win);
    ork_free(logits);
    ork_session_free(s);
    return ret;
}

/* The spill file: in $TMPDIR (else /tmp), removed from the directory at once. */
static int spill_open(struct calib_store *st)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/ork-calib-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0)
        return ork_errorf(ORK_EIO, "calibration: a temporary file in %s: %s",
                          dir && *dir ? dir : "/tmp", strerror(errno));
    unlink(path);
    if (!(st->spill = fdopen(fd, "w+b"))) {
        close(fd);
        return ork_errorf(ORK_EIO, "calibration: a temporary file: %s", strerror(errno));
    }
    return 0;
}

/* Pass p: its slots' H allocated, the text run, each block's lower triangle from its upper;
 * with several passes the H are then written to the spill file and freed. */
static int collect_pass(struct ork_model *m, struct calib_store *st, uint32_t p,
                        const int32_t *ids, size_t n, uint32_t *n_win)
{
    int32_t w = m->cfg.n_ctx_train > 0 && m->cfg.n_ctx_train < CALIB_MAX_WINDOW
                    ? m->cfg.n_ctx_train : CALIB_MAX_WINDOW;
    for (uint32_t i = 0; i < st->n; i++)
        if (st->s[i].pass == p &&
            !(st->s[i].h = ork_calloc(st->s[i].bytes / sizeof(float), sizeof(float))))
            return ORK_ENOMEM;
    atomic_store(&collecting, st);
    int ret = run_windows(m, ids, n, w, n_win);
    atomic_store(&collecting, NULL);
    if (ret == 0 && st->err)
        ret = st->err;
    for (uint32_t i = 0; ret == 0 && i < st->n; i++) {
        struct calib_slot *s = &st->s[i];
        if (s->pass != p)
            continue;
        for (uint32_t bl = 0, nb = ork__npu_gptq_n_blocks(s->k); bl < nb; bl++) {
            uint32_t kb = ork__npu_gptq_block_k(s->k, bl);
            float *h = s->h + ork__npu_gptq_block_off(s->k, bl);
            for (uint32_t r = 1; r < kb; r++)
                for (uint32_t c = 0; c < r; c++)
                    h[(size_t)r * kb + c] = h[(size_t)c * kb + r];
        }
        if (st->n_pass == 1)
            continue;
        size_t nf = (size_t)(s->bytes / sizeof(float));
        if ((s->spill_off = ftello(st->spill)) < 0 ||
            fwrite(s->h, sizeof(float), nf, st->spill) != nf) {
            ret = ork_errorf(ORK_EIO, "calibration: writing the inputs' second moments to a "
                             "temporary file: %s", strerror(errno));
            break;
        }
        s->spilled = true;
        ork_free(s->h);
        s->h = NULL;
    }
    if (ret == 0 && st->spill && fflush(st->spill) != 0)
        ret = ork_errorf(ORK_EIO, "calibration: a temporary file: %s", strerror(errno));
    return ret;
}

static int collect(struct ork_model *m, struct calib_store *st, const int32_t *ids, size_t n,
                   uint32_t *n_win)
{
    int ret = st->n_pass > 1 ? spill_open(st) : 0;
    for (uint32_t p = 0; ret == 0 && p < st->n_pass; p++)
        ret = collect_pass(m, st, p, ids, n, n_win);
    return ret;
}

int ork__npu_calibrate(struct ork_model *m, const char *path, const struct ork_model_params *p)
{
    const struct ork_npu_weights_opts *wo = &p->npu_weights;
    if ((wo->flags & ORK_NPU_WENC_CALIBRATED) && !wo->calib_path)
        return ork_errorf(ORK_EINVAL, "NPU weights: ORK_NPU_WENC_CALIBRATED is the engine's "
                          "record of calibrated codes: give a calibration text "
                          "(calib_path, --npu-weights-calib) instead");
    if (!m->npu || !wo->calib_path)
        return 0;
    uint32_t max_tok = wo->calib_tokens ? wo->calib_tokens : ORK_NPU_WENC_DEFAULT_CALIB_TOKENS;
    int32_t *ids = NULL;
    size_t n = 0;
    uint32_t n_win = 0;
    struct calib_store st;
    int ret = calib_tokens(m, wo->calib_path, max_tok, &ids, &n);
    if (ret < 0)
        return ret;
    pthread_mutex_lock(&calib_lock);
    if ((ret = store_init(&st, m->npu, m, wo->calib_mem_bytes ? wo->calib_mem_bytes
                                                             : ORK__NPU_CALIB_MAX_H_BYTES)) < 0)
        goto out_unlock;
    double t0 = now_s();
    if ((ret = collect(m, &st, ids, n, &n_win)) < 0)
        goto out;
    double t1 = now_s();
    atomic_store(&last_passes, st.n_pass);
    st.id = calib_id(ids, n);
    /* 3: the executor again, every slot re-quantised (a pack rebuilt with those codes) */
    struct ork_model_params pp = *p;
    pp.npu_weights.flags |= ORK_NPU_WENC_CALIBRATED;  /* recorded by the pack (engine.h) */
    if (!(pp.npu_flags & ORK_NPU_EXEC_NO_PACK))
        pp.npu_flags |= ORK_NPU_EXEC_REBUILD_PACK;
    ork__npu_exec_destroy(m->npu);
    m->npu = NULL;
    if (ork_pool_create(0, &st.pool) < 0)     /* none: the rows on this thread */
        st.pool = NULL;
    atomic_store(&applying, &st);
    ret = ork__npu_exec_create(m, path, &pp, &m->npu);
    atomic_store(&applying, NULL);
    if (st.pool)
        ork_pool_destroy(st.pool);
    st.pool = NULL;
    if (ret < 0)
        goto out;
    double t2 = now_s();
    ork_model_twin_stats_reset(m);
    ork__npu_status(!(p->npu_flags & ORK_NPU_EXEC_QUIET), "NPU weights calibrated on %zu "
                    "tokens of %s (%u window%s, %u pass%s holding up to %.1f MiB of input "
                    "statistics; %.1f s): %u tensors re-quantised (%.1f s, of which GPTQ %.1f s); "
                    "their output error on those inputs x%.3f of round-to-nearest's", n,
                    wo->calib_path, n_win, n_win == 1 ? "" : "s", st.n_pass,
                    st.n_pass == 1 ? "" : "es", (double)st.pass_bytes / (1u << 20), t1 - t0,
                    st.n_requant, t2 - t1, st.t_requant,
                    st.e_rtn > 0.0 ? st.e_gptq / st.e_rtn : 1.0);
out:
    store_free(&st);
out_unlock:
    pthread_mutex_unlock(&calib_lock);
    ork_free(ids);
    return ret;
}
