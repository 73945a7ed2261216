/* placement.c -- loading the NPU executor: the devices (one per IOMMU domain, each a <= 4 GiB
 * 32-bit IOVA window), the weights of each op (tiled from the .orkpack, pack_build.c, or
 * quantised and tiled here), made resident once, each layer in the domain that still has room
 * (a new domain per ~3.8 GiB, at layer boundaries), and every plan of every matrix created now
 * (a decode plan of M = 1 and a prefill plan of M = max_m, then, once every matrix is placed,
 * the row-sized plans between: docs/npu-inference.md "Row-sized programs"), its programs at
 * fixed addresses, split across the cores by libork's budget. How each op is laid out (fused or one matrix per
 * model matrix, K-split halves) comes from the executor plan (plan.c); running is run.c. */
#include "npu_priv.h"
#include "weights_policy.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes of resident weights per domain: the simulator's and the project's 3900 MiB guard
 * (spec §13) less room for the plans' A, C and program buffers. */
#define NPU_DOMAIN_BUDGET ((uint64_t)3900 << 20)
#define NPU_DOMAIN_MARGIN ((uint64_t)128 << 20)
/* A plan's buffers, as libork makes them: page-granular (4 KiB, spec §13), int32 results
 * (spec §6.2), one 112-entry regcmd program of 8-byte entries per task (spec §2.3). */
#define NPU_PAGE 4096u
#define NPU_OUT_BYTES 4u
#define NPU_PROG_BYTES (112u * 8u)

/* The simulator's `load` file, the vendor debugfs file `ork top` reads on a board
 * (docs/cli.md "ork top"): one per process, DIR/sim-load.PID with DIR = $XDG_RUNTIME_DIR/ork,
 * else /tmp/ork-UID (made 0700). One file per process, so concurrent runs never share the
 * simulator's write-then-rename; cmd_top.c looks in the same directory. The first executor of
 * the process on the simulator owns it (its first domain writes it) and removes it when it is
 * destroyed. */
#define SIM_LOAD_NAME "sim-load"
static _Atomic(const struct ork__npu_exec *) sim_load_owner;
static char sim_load_file[512];

static const char *sim_load_claim(const struct ork__npu_exec *ex)
{
    const struct ork__npu_exec *none = NULL;
    if (!atomic_compare_exchange_strong(&sim_load_owner, &none, ex))
        return atomic_load(&sim_load_owner) == ex ? sim_load_file : NULL;
    char dir[400];
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg)
        snprintf(dir, sizeof dir, "%s/ork", xdg);
    else
        snprintf(dir, sizeof dir, "/tmp/ork-%u", (unsigned)getuid());
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        atomic_store(&sim_load_owner, NULL);
        return NULL;        /* no load file; the run itself is unaffected */
    }
    snprintf(sim_load_file, sizeof sim_load_file, "%s/" SIM_LOAD_NAME ".%ld", dir,
             (long)getpid());
    return sim_load_file;
}

static void sim_load_release(const struct ork__npu_exec *ex)
{
    if (atomic_load(&sim_load_owner) != ex)
        return;
    unlink(sim_load_file);
    atomic_store(&sim_load_owner, NULL);
}

/* Open one more device (domain) of the executor with the model's NPU options. */
static int open_device(struct ork__npu_exec *ex, const char *device,
                       const struct ork_model_params *p)
{
    if (ex->n_dev >= NPU_MAX_DOMAINS)
        return ork_errorf(ORK_ENOMEM, "NPU: the resident weights need more than %d IOMMU "
                          "domains", NPU_MAX_DOMAINS);
    bool sim = !strcmp(device, "sim") || !strcmp(device, "sim-rocket");
    struct ork_sim_opts so = { .struct_size = sizeof so,
                               .timing = (enum ork_sim_timing)p->sim_timing,
                               .load_path = sim && !ex->n_dev ? sim_load_claim(ex) : NULL,
                               .domain_limit = p->npu_domain_bytes,
                               /* the simulator runs the executor's one-job multi-core form
                                * (on a board it needs a selftest-confirmed capability, else
                                * libork runs the per-core form; docs/npu.md "Submit forms");
                                * the twin records one op per plan core either way */
                               .confirm_one_job = true,
                               .dcomp_gbps = p->sim_dcomp_gbps };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = device, .sim = &so,
                              .domain = (uint32_t)ex->n_dev,
                              .capabilities = p->npu_capabilities,
                              .wait_timeout_ms = p->npu_wait_ms,
                              .blocking_submits = p->npu_blocking_submits,
                              .worker_spin_us = p->npu_spin_us < 0 ? 0
                                                : p->npu_spin_us ? (uint32_t)p->npu_spin_us
                                                : ORK_NPU_WORKER_SPIN_US_DEFAULT };
    int ret = ork_npu_open(&o, &ex->dev[ex->n_dev]);
    if (ret < 0)
        return ret;
    ex->n_dev++;
    return 0;
}

/* Device bytes of a plan (its A, C and program buffers, page-rounded as libork's estimate
 * rounds them, src/libork/estimate.c) and of its regcmd programs. */
static uint64_t pages(uint64_t b)
{
    return (b + NPU_PAGE - 1) / NPU_PAGE * NPU_PAGE;
}

uint64_t ork__npu_plan_bytes(const struct ork_npu_matmul_info *in, uint64_t *regcmd)
{
    uint64_t ks = in->n_kslices ? in->n_kslices : 1;
    uint64_t rc = (uint64_t)in->n_tasks * NPU_PROG_BYTES;
    if (regcmd)
        *regcmd = rc;
    return pages((uint64_t)in->m * in->k_padded) +
           pages((uint64_t)in->m * in->n_padded * NPU_OUT_BYTES * ks) + pages(rc);
}

static void count_plan(struct ork__npu_exec *ex, uint32_t i, const struct ork_npu_matmul_info *in)
{
    uint64_t regcmd;
    ex->st.prog_bytes[i] += ork__npu_plan_bytes(in, &regcmd);
    ex->st.prog_regcmd_bytes[i] += regcmd;
}

/* Plan size i (ex->prog_rows[i] rows) of matrix mt. */
static int make_plan(struct ork__npu_exec *ex, struct npu_mat *mt, uint32_t i)
{
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = ex->prog_rows[i],
                                      .cores = mt->cores, .flags = ORK_NPU_MATMUL_ONE_JOB };
    int ret = ork_npu_matmul_create(mt->w, &md, &mt->prog[i]);
    if (ret < 0) {
        mt->prog[i] = NULL;
        return ret;
    }
    ork_npu_matmul_get_info(mt->prog[i], &mt->info[i]);
    count_plan(ex, i, &mt->info[i]);
    return 0;
}

/* Index of the largest size of at most `rows` rows (mt->max_m is a size: ex->max_m or
 * NPU_BASE_MAX_M, which prog_sizes always makes). */
static uint32_t size_at_most(const struct ork__npu_exec *ex, uint32_t rows)
{
    uint32_t i = ex->n_prog - 1;
    while (i > 0 && ex->prog_rows[i] > rows)
        i--;
    return i;
}

/* The plan made with M = 1 at placement: M = max_m up to NPU_BASE_MAX_M rows (its buffers and
 * programs are those of an executor without plans above it); the larger come with the sizes
 * between. */
static uint32_t first_size(const struct ork__npu_exec *ex, const struct npu_mat *mt)
{
    return size_at_most(ex, mt->max_m < NPU_BASE_MAX_M ? mt->max_m : NPU_BASE_MAX_M);
}

/* The executor's rotation of K = k (ORK_NPU_WENC_ROTATE): made the first time a matrix of
 * that K is placed, shared by every matrix of it. */
static int rot_for(struct ork__npu_exec *ex, uint32_t k, const struct ork__npu_rot **out)
{
    *out = NULL;
    if (!(ex->wopts.flags & ORK_NPU_WENC_ROTATE))
        return 0;
    for (int i = 0; i < ex->n_rot; i++)
        if (ex->rot[i].k == k) {
            *out = &ex->rot[i];
            return 0;
        }
    if (ex->n_rot >= NPU_MAX_ROTS)
        return ork_errorf(ORK_ERANGE, "NPU rotation: more than %d distinct K", NPU_MAX_ROTS);
    int ret = ork__npu_rot_init(&ex->rot[ex->n_rot], k);
    if (ret < 0)
        return ret;
    *out = &ex->rot[ex->n_rot++];
    return 0;
}

/* Weights from int8 rows q (tiled here), or, when tiled is not NULL, from the pack's tiled
 * bytes as they are. */
static int make_mat(struct ork__npu_exec *ex, struct npu_mat *mt, int dev, const int8_t *q,
                    const void *tiled, uint64_t tiled_bytes, const float *scales, uint32_t n,
                    uint32_t k, uint32_t cores)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = q, .scales = scales,
                                       .max_m = ork__npu_mat_rows(ex->max_m, k),
                                       .encoding = ex->wcur.encoding,
                                       .grid_max_abs = ex->wcur.grid };
    const struct ork__npu_rot *rot;
    int ret = rot_for(ex, k, &rot);
    if (ret < 0)
        return ret;
    ret = tiled ? ork_npu_weights_create_packed(ex->dev[dev], &wd, tiled, tiled_bytes, &mt->w)
                : ork_npu_weights_create(ex->dev[dev], &wd, &mt->w);
    if (ret < 0)
        return ret;
    mt->rot = rot;
    mt->n = n;
    mt->k = k;
    mt->dev = dev;
    mt->grid = ex->wcur.grid;
    mt->kept_int8 = ex->wkept;
    mt->scales = ork_npu_weights_scales(mt->w);
    ex->dev_bytes[dev] += ork_npu_weights_bytes(mt->w);
    ex->st.resident_bytes += ork_npu_weights_bytes(mt->w);
    mt->cores = cores;
    mt->max_m = wd.max_m;
    /* the decode and prefill plans now; the row sizes between after placement */
    if ((ret = make_plan(ex, mt, 0)) < 0)
        return ret;
    uint32_t first = first_size(ex, mt);
    return first > 0 ? make_plan(ex, mt, first) : 0;
}

static void free_mat(struct npu_mat *mt)
{
    for (int i = NPU_MAX_PROGS - 1; i >= 0; i--)
        ork_npu_matmul_destroy(mt->dprog[i]);
    ork_npu_weights_destroy(mt->dw);
    for (int i = NPU_MAX_PROGS - 1; i >= 0; i--)
        ork_npu_matmul_destroy(mt->prog[i]);
    ork_npu_weights_destroy(mt->w);
    memset(mt, 0, sizeof(*mt));
}

/* The row-sized plans of every placed matrix besides M = 1 and its first size, made after all
 * of those (so that theirs sit where an executor without them puts them): the sizes between,
 * then those above NPU_BASE_MAX_M rows. A size that does not fit its domain is left out (runs
 * take the next larger plan; above the first size, the matrix's runs stop at its first). */
static int make_row_plans(struct ork__npu_exec *ex)
{
    int64_t t0 = ork__now_ns();
    uint32_t nt = (uint32_t)ex->n_layers * ORK__OPS_PER_LAYER + 1;
    for (uint32_t i = 1; i < ex->n_prog; i++)
        for (uint32_t t = 0; t < nt; t++)
            for (int j = 0; j < 3; j++) {
                struct npu_mat *mt = &ex->ops[t].mat[j];
                if (!mt->w || i == first_size(ex, mt) || i > size_at_most(ex, mt->max_m))
                    continue;
                int ret = make_plan(ex, mt, i);
                if (ret == ORK_ENOMEM) {
                    ex->st.prog_missing++;
                    if (i > first_size(ex, mt))     /* runs stay within the plans made */
                        mt->max_m = ex->prog_rows[first_size(ex, mt)];
                    continue;
                }
                if (ret < 0)
                    return ret;
            }
    if (ex->st.prog_missing)
        ORK_LOGW("NPU: %u row-sized plan(s) did not fit their IOMMU domain; those runs take "
                 "the next larger plan", ex->st.prog_missing);
    ex->st.prog_extra_load_ms = (double)(ork__now_ns() - t0) / 1e6;
    return 0;
}

/* Undo a partly placed op. */
static void drop_op(struct ork__npu_exec *ex, struct npu_opmat *o)
{
    for (int i = 0; i < 3; i++)
        if (o->mat[i].w) {
            uint64_t b = ork_npu_weights_bytes(o->mat[i].w);
            ex->dev_bytes[o->mat[i].dev] -= b;
            ex->st.resident_bytes -= b;
            free_mat(&o->mat[i]);
        }
    o->on_npu = false;
    o->n_mats = 0;
}

/* Place pack tensor ps (rows q [n][k], or the pack's tiled bytes) into op o on device dev:
 * a fused step makes it o->mat[ps->half] (the two halves of a K-split op are two matrices of
 * one op); an unfused step cuts it into one matrix per source. */
static int place_op(struct ork__npu_exec *ex, const struct pack_src *ps, struct npu_opmat *o,
                    int dev, const int8_t *q, const void *tiled, uint64_t tiled_bytes,
                    const float *scales)
{
    uint32_t k = ps->k;
    o->n_parts = ps->ns;
    for (int i = 0; i < ps->ns; i++)
        o->part_n[i] = (uint32_t)ps->src[i]->n_rows;
    /* cores: 0 lets libork's core budget pick per shape (sched.h); the plan may fix it. Split
     * plans run as one job with a task range per core (ORK_NPU_MATMUL_ONE_JOB): one submit
     * per matmul, not one per core. */
    uint32_t cores = ex->plan->cores;
    int ret;
    if (!ex->plan->step[ps->op].fused) {
        o->n_mats = ps->ns;
        size_t r0 = 0;
        for (int i = 0; i < ps->ns; i++) {
            if ((ret = make_mat(ex, &o->mat[i], dev, q + r0 * k, NULL, 0, scales + r0,
                                o->part_n[i], k, cores)) < 0)
                return ret;
            r0 += o->part_n[i];
        }
    } else {
        /* a K-split half gets the cores the budget picks for the whole matrix: on its own
         * shape it may pick fewer (half the bytes per run), and the halves run one after the
         * other, so each would then stream at a single core's bandwidth */
        if (!cores && ps->k < (uint32_t)ps->src[0]->n_cols)
            cores = ork_npu_budget_pick(ORK_NPU_I8, 1, (uint32_t)ps->src[0]->n_cols, ps->n,
                                        ORK_NPU_MODEL_MAX_CORES);
        o->n_mats = ps->half + 1;
        o->k_split = ps->half > 0;
        if ((ret = make_mat(ex, &o->mat[ps->half], dev, tiled ? NULL : q, tiled, tiled_bytes,
                            scales, ps->n, k, cores)) < 0)
            return ret;
        o->mat[ps->half].c0 = ps->c0;
    }
    o->on_npu = true;
    return 0;
}

/* Place the pack tensors of one op, slots [t0, t0 + nt), on device dev: from the pack's tiled
 * bytes, or quantised here into qbuf/sbuf. */
static int place_tensors(struct ork__npu_exec *ex, const struct ork_model *m, uint32_t t0,
                         uint32_t nt, struct ork_orkpack *pack, int dev, int8_t *qbuf,
                         float *sbuf, float *row)
{
    int ret = 0;
    for (uint32_t t = t0; t < t0 + nt; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(ex->plan, m, t, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        struct npu_opmat *o = npu_op_at(ex, ps.op, ps.layer);
        const int8_t *q = NULL;
        const void *tiled = NULL;
        uint64_t tiled_bytes = 0;
        const float *sc;
        if (pack) {
            struct ork_orkpack_tensor pt;
            if ((ret = ork_orkpack_tensor_find(pack, name, &pt)) < 0)
                return ret;
            if (pt.n != ps.n || pt.k != ps.k)
                return ork_errorf(ORK_EFORMAT, "orkpack tensor '%s' is %ux%u, the model "
                                  "wants %ux%u", name, pt.n, pt.k, ps.n, ps.k);
            tiled = pt.q;
            tiled_bytes = pt.q_bytes;
            sc = pt.scales;
            ex->wcur = pt.coding;
        } else {
            if ((ret = ork__npu_quantize_slot(&ex->wopts, &ps, name, row, qbuf, sbuf,
                                              &ex->wcur)) < 0)
                return ret;
            q = qbuf;
            sc = sbuf;
        }
        ex->wkept = ork__npu_keep_int8(&ex->wopts, &ps);
        if ((ret = place_op(ex, &ps, o, dev, q, tiled, tiled_bytes, sc)) < 0)
            return ret;
    }
    return 0;
}

/* The engine's device names (ork_model_params.device) to libork's (ork_npu_open): "cpu"/NULL =
 * no NPU; "npu" = the best real backend present (libork's "auto": rknpu, else rocket), an error
 * without one; "rknpu", "rocket", "sim", "sim-rocket" = that backend; "auto" = "npu", falling
 * back to the CPU without a device (returns 1). */
static int resolve_device(const char *want, const char **dev)
{
    static const char *const direct[] = { "rknpu", "rocket", "sim", "sim-rocket" };
    *dev = NULL;
    if (!want || !strcmp(want, "cpu"))
        return 0;
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (!strcmp(want, direct[i])) {
            *dev = direct[i];
            return 0;
        }
    if (!strcmp(want, "npu")) {
        *dev = "auto";
        return 0;
    }
    if (!strcmp(want, "auto")) {
        *dev = "auto";
        return 1;       /* fall back to the CPU without a device */
    }
    return ork_errorf(ORK_EINVAL, "unknown device '%s' (cpu, npu, rknpu, rocket, sim, "
                      "sim-rocket or auto)", want);
}

/* Where the weights come from and the scratch of the placement: the pack's tiled bytes, or
 * rows quantised here into q/scales (row: one whole source row). */
struct place_src {
    struct ork_orkpack *pack;
    int8_t *q;
    float *scales, *row;
};

/* Placement state: the device of the current domain and its estimated use. */
struct placer {
    const char *dev_name;
    const struct ork_model_params *mp;  /* the model's NPU options (each new domain's device) */
    uint64_t cap;                       /* estimated bytes a domain may take */
    int cur;
    uint64_t used;
    int n_fallback;
    char fb_names[256];
};

static int new_domain(struct ork__npu_exec *ex, struct placer *pc)
{
    int ret = open_device(ex, pc->dev_name, pc->mp);
    if (ret < 0)
        return ret;
    pc->cur = ex->n_dev - 1;
    pc->used = 0;
    return 0;
}

/* libork's estimate of weights n x k with their plans of 1 and max_m rows: W4A8 weights' own
 * upper bound (their K-slicing, hence their int16 partials, depends on the codes: docs/w4a8.md
 * "Weights and runs"), else int8's (an upper bound for DCOMP too). */
static uint64_t estimate(const struct ork__npu_exec *ex, const struct pack_src *ps,
                         uint32_t max_m)
{
    uint32_t n = ps->n, k = ps->k;
    if (ork__npu_wenc_libork(&ex->wopts) == ORK_NPU_WEIGHTS_W4A8 &&
        !ork__npu_keep_int8(&ex->wopts, ps))
        return ork_npu_weights_estimate_bytes_w4a8(n, k, max_m);
    return ork_npu_weights_estimate_bytes(ORK_NPU_I8, n, k, max_m);
}

/* Estimated device bytes of layer l's slots (l = n_layers: the LM head): libork's estimate of
 * each tensor's weights and plans (estimate()). */
static uint64_t layer_need(const struct ork__npu_exec *ex, const struct ork_model *m, int32_t l)
{
    uint32_t spl = ork__npu_plan_slots_per_layer(ex->plan), t0 = (uint32_t)l * spl;
    uint32_t t1 = l == m->cfg.n_layers ? t0 + 1 : t0 + spl;
    uint64_t need = 0;
    for (uint32_t t = t0; t < t1; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(ex->plan, m, t, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        uint32_t rows_max = ork__npu_mat_rows(ex->max_m, ps.k);
        uint64_t full = estimate(ex, &ps, rows_max);
        need += full;
        /* the row-sized plans between: their A and C scale with the rows; libork's estimate
         * counts the M = 1 and M = max_m plans, so the difference of the two estimates is
         * about one max_m-row plan */
        uint64_t dec = estimate(ex, &ps, 1);
        uint64_t per_max = full > dec ? full - dec : 0, rows = 0;
        for (uint32_t i = 1; i + 1 < ex->n_prog && ex->prog_rows[i] < rows_max; i++)
            rows += ex->prog_rows[i];
        need += per_max * rows / rows_max;
        /* a decode copy (decode_copy.c) when M = 1 takes fewer K-slices than max_m rows */
        if (ex->decode_single && ork_npu_weights_kslices(ORK_NPU_I8, ps.k, 1) <
                                     ork_npu_weights_kslices(ORK_NPU_I8, ps.k, rows_max))
            need += dec;
    }
    return need;
}

/* Place op of layer l in the current domain (a new one when the estimate was short); shapes or
 * memory the NPU cannot take leave the op on the CPU. Errors: a pack that does not fit the
 * model, or a device that cannot be opened. */
static int place_one(struct ork__npu_exec *ex, const struct ork_model *m, struct placer *pc,
                     const struct place_src *src, enum ork__npu_op op, int32_t l, uint64_t need)
{
    uint32_t spl = ork__npu_plan_slots_per_layer(ex->plan);
    uint32_t ts = (uint32_t)l * spl + ork__npu_plan_op_slot(ex->plan, op);
    uint32_t tn = ex->plan->step[op].n_slots;
    struct npu_opmat *o = npu_op_at(ex, op, l);
    struct pack_src ps;
    char name[ORK_ORKPACK_NAME_MAX];
    ork__npu_pack_source(ex->plan, m, ts, &ps, name, sizeof name);
    int ret = place_tensors(ex, m, ts, tn, src->pack, pc->cur, src->q, src->scales, src->row);
    if (ret == ORK_ENOMEM && ex->dev_bytes[pc->cur] > 0) {
        /* the estimate was short and the domain is full: this op (and the rest of the layer)
         * starts a new domain */
        drop_op(ex, o);
        if ((ret = new_domain(ex, pc)) < 0)
            return ret;
        pc->used = need;
        ret = place_tensors(ex, m, ts, tn, src->pack, pc->cur, src->q, src->scales, src->row);
    }
    if (ret == ORK_EFORMAT || (src->pack && ret == ORK_ENOENT))
        return ret;     /* a pack that does not fit the model */
    if (ret < 0) {
        /* shapes or memory the NPU cannot take: this op stays on the CPU */
        drop_op(ex, o);
        size_t at = strlen(pc->fb_names);
        if (pc->n_fallback++ < 4)
            snprintf(pc->fb_names + at, sizeof pc->fb_names - at, "%s%s (%s)",
                     pc->n_fallback > 1 ? ", " : "", name, ork_error_message());
        ex->st.n_cpu_mats += ps.ns;
    } else {
        ex->st.n_npu_mats += ps.ns;
    }
    return 0;
}

/* Placement: layer by layer, a new domain when the next layer does not fit. */
static int place_all(struct ork__npu_exec *ex, const struct ork_model *m,
                     const struct ork_model_params *p, const char *dev_name,
                     const struct place_src *src)
{
    uint64_t dom_bytes = p->npu_domain_bytes ? p->npu_domain_bytes : NPU_DOMAIN_BUDGET;
    /* the margin covers what the estimate does not see (the kernel's own mappings, a plan
     * taking fewer cores than the most); small test domains keep 1/8 */
    uint64_t margin = dom_bytes / 8 < NPU_DOMAIN_MARGIN ? dom_bytes / 8 : NPU_DOMAIN_MARGIN;
    struct placer pc = { .dev_name = dev_name, .mp = p, .cap = dom_bytes - margin };
    bool show = !(ex->flags & ORK_NPU_EXEC_QUIET);
    int last = -1, ret;
    for (int32_t l = 0; l <= m->cfg.n_layers; l++) {
        bool head = l == m->cfg.n_layers;
        uint64_t need = layer_need(ex, m, l);
        if (pc.used > 0 && pc.used + need > pc.cap && (ret = new_domain(ex, &pc)) < 0)
            return ret;
        pc.used += need;
        for (int op = head ? ORK__NPU_LM_HEAD : 0; op < (head ? ORK__NPU_N_OPS : ORK__OPS_PER_LAYER);
             op++)
            if ((ret = place_one(ex, m, &pc, src, (enum ork__npu_op)op, l, need)) < 0)
                return ret;
        ork__npu_progress(show, "loading NPU weights", (uint64_t)l + 1,
                          (uint64_t)m->cfg.n_layers + 1, &last);
    }
    if (pc.n_fallback)
        ORK_LOGW("NPU: %d op(s) run on the CPU: %s%s", pc.n_fallback, pc.fb_names,
                 pc.n_fallback > 4 ? ", ..." : "");
    return 0;
}

/* Scratch: the quantisation buffers when there is no pack, the executor's A, scales and C. */
static int alloc_scratch(struct ork__npu_exec *ex, const struct ork_model *m,
                         struct place_src *src)
{
    size_t max_q, max_n, max_k, max_row;
    ork__npu_pack_max_dims(ex->plan, m, &max_q, &max_n, &max_k, &max_row);
    if (!src->pack) {
        src->q = ork_malloc(max_q);
        src->scales = ork_malloc(max_n * sizeof(float));
        src->row = ork_malloc(max_row * sizeof(float));
        if (!src->q || !src->scales || !src->row)
            return ORK_ENOMEM;
    }
    if (ex->wopts.flags & ORK_NPU_WENC_ROTATE) {
        ex->xr = ork_malloc((size_t)ex->max_m * max_k * sizeof(float));
        if (!ex->xr)
            return ORK_ENOMEM;
    }
    ex->a8 = ork_malloc((size_t)ex->max_m * max_k);
    ex->a_scales = ork_malloc(2 * (size_t)ex->max_m * sizeof(float));
    ex->c32_half = (size_t)ex->max_m * max_n;
    ex->c32 = ork_malloc(2 * ex->c32_half * sizeof(int32_t));
    if (!ex->a8 || !ex->a_scales || !ex->c32)
        return ORK_ENOMEM;
    return 0;
}

static void place_src_fini(struct place_src *src)
{
    ork_orkpack_close(src->pack);
    ork_free(src->q);
    ork_free(src->scales);
    ork_free(src->row);
}

/* The plan sizes: 1, the powers of two below max_m that mask selects (0: all of them; the
 * NPU_BASE_MAX_M size always, the largest of matrices that keep it), and max_m. Powers of two keep a run's padding below 2x its rows with log2(max_m) + 1 sizes;
 * docs/npu-inference.md "Row-sized programs" gives the measured cost. */
static void prog_sizes(struct ork__npu_exec *ex, uint32_t mask)
{
    ex->n_prog = 0;
    ex->prog_rows[ex->n_prog++] = 1;
    for (uint32_t b = 1; b < 31 && (1u << b) < ex->max_m && ex->n_prog + 1 < NPU_MAX_PROGS; b++)
        if (!mask || (mask & (1u << b)) || (1u << b) == NPU_BASE_MAX_M)
            ex->prog_rows[ex->n_prog++] = 1u << b;      /* the base: some matrices' largest */
    if (ex->max_m > 1)
        ex->prog_rows[ex->n_prog++] = ex->max_m;
    ex->st.n_prog_sizes = ex->n_prog;
    memcpy(ex->st.prog_rows, ex->prog_rows, sizeof ex->st.prog_rows);
}

int ork__npu_exec_create(struct ork_model *m, const char *path, const struct ork_model_params *p,
                         struct ork__npu_exec **out)
{
    *out = NULL;
    const char *dev_name;
    int soft = resolve_device(p->device, &dev_name);
    if (soft < 0)
        return soft;
    if (!dev_name)
        return 0;
    struct ork__npu_exec *ex = ork_calloc(1, sizeof(*ex));
    if (!ex)
        return ORK_ENOMEM;
    pthread_mutex_init(&ex->lock, NULL);
    ex->flags = p->npu_flags;
    ex->plan = ork__npu_plan_for(ex->flags);
    ex->max_m = p->npu_max_m > 0 ? (uint32_t)p->npu_max_m : NPU_DEFAULT_MAX_M;
    ex->decode_single = p->npu_decode_kslice == ORK_NPU_DECODE_KSLICE_SINGLE ||
                        (p->npu_decode_kslice == ORK_NPU_DECODE_KSLICE_DEFAULT &&
                         NPU_DEFAULT_DECODE_SINGLE);
    prog_sizes(ex, p->npu_prog_rows);
    ex->n_layers = m->cfg.n_layers;
    ex->twin = m->twin;
    ex->wopts = p->npu_weights;
    bool show = !(ex->flags & ORK_NPU_EXEC_QUIET);
    struct place_src src = { 0 };
    int ret = 0;
    if (ex->wopts.int8_tensors) {   /* the executor's own copy: the caller's may go */
        if (!(ex->wkeep_spec = ork_strdup(ex->wopts.int8_tensors))) {
            ret = ORK_ENOMEM;
            goto err;
        }
        ex->wopts.int8_tensors = ex->wkeep_spec;
    }
    ret = ork__npu_wenc_check(&ex->wopts);
    if (ret == 0)
        ret = ork__npu_keep_check_layers(&ex->wopts, m->cfg.n_layers);
    if (ret == 0)
        ret = open_device(ex, dev_name, p);
    if (ret == 0)
        ret = ork__npu_wenc_device_check(&ex->wopts, ex->dev[0]);
    if (ret == 0)       /* DCOMP only where it can win (weights_policy.c) */
        ret = ork__npu_weights_policy(&ex->wopts, ex->dev[0], p);
    if (ret < 0) {
        if (soft && ret == ORK_ENOENT) {
            if (show)
                ORK_LOGW("device auto: no NPU found, running on the CPU");
            ork__npu_exec_destroy(ex);
            return 0;
        }
        goto err;
    }
    ex->ops = ork_calloc((size_t)m->cfg.n_layers * ORK__OPS_PER_LAYER + 1, sizeof(*ex->ops));
    if (!ex->ops) {
        ret = ORK_ENOMEM;
        goto err;
    }
    /* weights: tiled from the pack (built or rebuilt when needed), or quantised and tiled here */
    if (ex->plan->pack && !(ex->flags & ORK_NPU_EXEC_NO_PACK) &&
        ork__npu_pack_ensure(m, path, p->npu_pack_path, ex->flags, ex->dev[0], ex->max_m,
                             &ex->wopts, &src.pack, NULL) < 0) {
        ORK_LOGW("%s; quantising for the NPU in memory", ork_error_message());
        src.pack = NULL;
    }
    if ((ret = alloc_scratch(ex, m, &src)) < 0 || (ret = place_all(ex, m, p, dev_name, &src)) < 0 ||
        (ret = make_row_plans(ex)) < 0 || (ret = ork__npu_make_decode_copies(ex, m)) < 0)
        goto err;
    snprintf(ex->st.backend, sizeof ex->st.backend, "%s", ork_npu_backend(ex->dev[0]));
    ex->is_sim = ork_npu_is_sim(ex->dev[0]);
    ork__npu_model_base_reset(ex);
    ex->st.n_domains = ex->n_dev;
    ork__npu_status(show, "NPU (%s): %d matrices resident (%.1f MiB in %d IOMMU domain%s), %d "
                    "on the CPU; executor: %s", ex->st.backend, ex->st.n_npu_mats,
                    (double)ex->st.resident_bytes / (1 << 20), ex->n_dev,
                    ex->n_dev > 1 ? "s" : "", ex->st.n_cpu_mats, ex->plan->summary);
    ork__npu_wstats_exec(ex, show);
    place_src_fini(&src);
    *out = ex;
    return 0;
err:
    place_src_fini(&src);
    ork__npu_exec_destroy(ex);
    return ret;
}

void ork__npu_exec_destroy(struct ork__npu_exec *ex)
{
    if (!ex)
        return;
    if (ex->ops) {
        uint32_t nt = (uint32_t)ex->n_layers * ORK__OPS_PER_LAYER + 1;
        for (uint32_t t = 0; t < nt; t++)
            for (int i = 0; i < 3; i++)
                if (ex->ops[t].mat[i].w)
                    free_mat(&ex->ops[t].mat[i]);
        ork_free(ex->ops);
    }
    for (int d = 0; d < ex->n_dev; d++)
        ork_npu_close(ex->dev[d]);
    sim_load_release(ex);
    for (int i = 0; i < ex->n_rot; i++)
        ork__npu_rot_fini(&ex->rot[i]);
    ork_free(ex->xr);
    ork_free(ex->a8);
    ork_free(ex->a_scales);
    ork_free(ex->c32);
    ork_free(ex->wkeep_spec);
    pthread_mutex_destroy(&ex->lock);
    ork_free(ex);
}
