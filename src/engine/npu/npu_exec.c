/* npu_exec.c -- the engine's NPU backend and executor: w8a8 matmuls of a model on libork
 * (int8 activations with a per-row scale, int8 weights with per-output-channel scales, int32
 * results dequantised on the CPU); everything else stays on the CPU (forward.c).
 *
 * At load: the NPU matrices of each layer are fused by rows where they share an input
 * ([Q|K|V] and [gate|up]) so each is one matmul and one submit; their int8 rows come from the
 * .orkpack beside the model (built on first use, orkpack.c) and are made resident once, each
 * layer in the IOMMU domain that still has room (a new domain per ~3.8 GiB, at layer
 * boundaries: one device handle per domain); every plan (a decode plan of M = 1 and a prefill
 * plan of M = npu_max_m) is created then, with its programs at fixed addresses, split across
 * the cores by libork's budget. Per token nothing is synthesised or allocated: each op
 * quantises its input into fixed scratch, runs its plan and dequantises into the caller's rows.
 * A layer takes 5 submits (QKV, O_a, O_b, gate|up, down) plus the LM head once per batch: the
 * O projection is split along K by attention heads, so in decode its first half runs
 * asynchronously while the caller computes the other heads' attention (ork__npu_exec_o_*;
 * the CPU time spent while it is in flight is counted as overlapped up to its modelled
 * duration).
 *
 * ORK_NPU_EXEC_PER_MATMUL builds the baseline instead: one single-core plan per model matrix
 * (the O projection whole), one synchronous submit each (7 per layer), for comparison.
 *
 * Modelled time: on the `sim` device the statistics read the simulator's own model clock and
 * per-core busy time (ork_npu_model_time, docs/sim.md "Timing model"), so benchmarks report an
 * NPU time per token that does not depend on the speed of the machine running the simulator.
 * One device is one IOMMU domain, so switches between domains are counted here and charged at
 * the simulator's domain-switch cost. Hardware backends have no modelled clock (zeros).
 *
 * Not here: the transformer (forward.c), the pack file format (orkpack.c), NPU programs
 * (libork). */
#include "model/model_priv.h"

#include <ork-engine/orkpack.h>
#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>
#include <ork/sched.h>
#include <ork/sim.h>
#include <ork/trace.h>
#include <ork-kernels/types.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define NPU_MAX_DOMAINS 16              /* RKNPU_MAX_IOMMU_DOMAIN_NUM (spec §13) */
/* Bytes of resident weights per domain: the simulator's and the project's 3900 MiB guard
 * (spec §13) less room for the plans' A, C and program buffers. */
#define NPU_DOMAIN_BUDGET ((uint64_t)3900 << 20)
#define NPU_DOMAIN_MARGIN ((uint64_t)128 << 20)
#define NPU_DEFAULT_MAX_M 64            /* prefill rows per NPU matmul (M-tile cap at K=3072..4096
                                         * is 64, docs/npu.md) */

/* Pack tensors per layer, in this order, then the LM head. The O projection is stored as two
 * halves along K, split by attention heads (o_split_cols): O_A takes the first half of the
 * heads' attention output, O_B the rest, each quantised with its own per-channel scales, so the
 * executor can submit O_A while the CPU still computes the second half's attention. */
enum { PK_QKV, PK_O_A, PK_O_B, PK_GATE_UP, PK_DOWN, PK_PER_LAYER };
/* Executor ops per layer (enum ork__npu_op before the LM head). */
#define OPS_PER_LAYER ORK__NPU_LM_HEAD

/* What one pack tensor holds: the stacked rows of 1..3 model matrices, columns [c0, c0 + k)
 * of each, for op `op`; `half` is 1 for O_B. ns = 0: no such tensor for this model. */
struct pack_src {
    int ns;
    const struct ork_mat *src[3];
    uint32_t c0, k, n;
    enum ork__npu_op op;
    int half;
};

/* One NPU matrix (a pack tensor, or in the baseline a row range of one) with its plans. */
struct npu_mat {
    struct ork_npu_weights *w;
    struct ork_npu_matmul *dec;         /* M = 1 */
    struct ork_npu_matmul *pre;         /* M = max_m; NULL when max_m == 1 (dec serves) */
    uint32_t n, k;
    int dev;                            /* device (domain) index */
    uint32_t c0;                        /* first input column (the second O half: its K offset) */
    const float *scales;                /* (n) */
    struct ork_npu_matmul_info dinfo, pinfo;
};

/* One op of one layer: 1..3 matrices whose outputs are split into parts (q, k, v). */
struct npu_opmat {
    int n_mats;
    struct npu_mat mat[3];
    int n_parts;
    uint32_t part_n[3];                 /* output columns of each part (sum = total rows) */
    bool k_split;                       /* mat[0], mat[1] = the op's input columns split in two
                                         * (the O projection by heads): y = sum of both */
    bool on_npu;
};

struct ork__npu_exec {
    int n_dev;
    struct ork_npu *dev[NPU_MAX_DOMAINS];
    uint64_t dev_bytes[NPU_MAX_DOMAINS];
    uint32_t max_m;
    uint32_t flags;
    int32_t n_layers;
    struct npu_opmat *ops;              /* (n_layers * 4 + 1): per layer QKV, O, GATE_UP, DOWN;
                                         * then the LM head */
    /* scratch, sized at load for the largest op */
    int8_t *a8;                         /* (max_m, max_k) */
    float *a_scales;                    /* (2, max_m): double-buffered for the prefill pipeline */
    int32_t *c32;                       /* (2, max_m, max_n) */
    size_t c32_half;                    /* elements of one c32 buffer */
    pthread_mutex_t lock;               /* one forward at a time (plans are single-user) */
    struct ork_npu_exec_stats st;
    int64_t batch_t0;
    double batch_npu_ms;
    int last_dev;                       /* domain of the last submit */
    uint64_t n_domain_switches;
    /* modelled clocks of the devices at load or the last stats reset (sim only) */
    struct ork_npu_model_time model_base[NPU_MAX_DOMAINS];
    uint64_t switches_base;
    bool is_sim;                        /* the devices are simulators (modelled clocks) */
    /* the O projection's first half in flight (ork__npu_exec_o_submit .. _o_finish) */
    struct ork_npu_job *o_job;
    int64_t o_sub_ns;                   /* wall clock when the submit returned */
    int64_t o_model0_ns;                /* its device's model clock before the submit */
};

static struct npu_opmat *op_at(struct ork__npu_exec *ex, enum ork__npu_op op, int32_t layer)
{
    if (op == ORK__NPU_LM_HEAD)
        return &ex->ops[(size_t)ex->n_layers * OPS_PER_LAYER];
    return &ex->ops[(size_t)layer * OPS_PER_LAYER + (size_t)op];
}

/* ---- pack building ------------------------------------------------------------------------ */

/* K multiple of weights tiled for prefill plans (max_m > 1; docs/npu.md tiling rules, as in
 * est_bytes): a K-split half whose K is not a multiple of it is padded up to one. */
#define NPU_PREFILL_K_ALIGN 512u

/* Columns of the O projection's first half: the attention output of its first heads
 * (head-major layout, forward.c). The heads nearest n_heads / 2 whose columns are a multiple of
 * NPU_PREFILL_K_ALIGN (no padding added by the split: Qwen2.5-7B's 28 heads of 128 split 12 +
 * 16, not 14 + 14 = 1792 columns padded to 2048 twice), ties to fewer (more attention behind the
 * first half), else n_heads / 2. 0 when there is one head (no split). */
static uint32_t o_split_cols(const struct ork_model_config *c)
{
    int32_t nh = c->n_heads, hd = c->head_dim;
    if (nh < 2)
        return 0;
    for (int32_t d = 0; d <= nh / 2; d++) {
        int32_t cand[2] = { nh / 2 - d, nh / 2 + d };
        for (int i = 0; i < 2; i++)
            if (cand[i] >= 1 && cand[i] < nh &&
                ((uint32_t)cand[i] * (uint32_t)hd) % NPU_PREFILL_K_ALIGN == 0)
                return (uint32_t)cand[i] * (uint32_t)hd;
    }
    return (uint32_t)(nh / 2) * (uint32_t)hd;
}

/* Pack tensor t of model m into *ps, and its name. whole_o: the O projection as one tensor in
 * O_A's slot and none in O_B's (the per-matmul baseline, which never reads a pack). */
static void pack_sources(const struct ork_model *m, uint32_t t, bool whole_o,
                         struct pack_src *ps, char *name, size_t cap)
{
    int32_t nl = m->cfg.n_layers;
    memset(ps, 0, sizeof(*ps));
    ps->ns = 1;
    if ((int32_t)(t / PK_PER_LAYER) >= nl) {
        ps->src[0] = &m->w.output;
        ps->op = ORK__NPU_LM_HEAD;
        snprintf(name, cap, "output");
    } else {
        const struct ork_layer_weights *L = &m->w.layers[t / PK_PER_LAYER];
        int l = (int)(t / PK_PER_LAYER);
        uint32_t ka = whole_o ? 0 : o_split_cols(&m->cfg);
        switch (t % PK_PER_LAYER) {
        case PK_QKV:
            ps->src[0] = &L->wq; ps->src[1] = &L->wk; ps->src[2] = &L->wv;
            ps->ns = 3;
            ps->op = ORK__NPU_QKV;
            snprintf(name, cap, "blk.%d.attn_qkv", l);
            break;
        case PK_O_A:
            ps->src[0] = &L->wo;
            ps->op = ORK__NPU_O;
            if (ka) {
                ps->k = ka;
                snprintf(name, cap, "blk.%d.attn_output.a", l);
            } else {
                snprintf(name, cap, "blk.%d.attn_output", l);
            }
            break;
        case PK_O_B:
            ps->src[0] = &L->wo;
            ps->op = ORK__NPU_O;
            ps->half = 1;
            ps->ns = ka ? 1 : 0;
            ps->c0 = ka;
            ps->k = (uint32_t)L->wo.n_cols - ka;
            snprintf(name, cap, "blk.%d.attn_output.b", l);
            break;
        case PK_GATE_UP:
            ps->src[0] = &L->w_gate; ps->src[1] = &L->w_up;
            ps->ns = 2;
            ps->op = ORK__NPU_GATE_UP;
            snprintf(name, cap, "blk.%d.ffn_gate_up", l);
            break;
        default:
            ps->src[0] = &L->w_down;
            ps->op = ORK__NPU_DOWN;
            snprintf(name, cap, "blk.%d.ffn_down", l);
            break;
        }
    }
    if (!ps->k)
        ps->k = (uint32_t)ps->src[0]->n_cols;
    for (int i = 0; i < ps->ns; i++)
        ps->n += (uint32_t)ps->src[i]->n_rows;
}

/* Quantise columns [c0, c0 + k) of the rows of ps's sources (stacked) into q [n][k] and
 * scales [n]; row holds one whole source row. */
static int quantize_sources(const struct pack_src *ps, float *row, int8_t *q, float *scales)
{
    size_t r = 0;
    for (int i = 0; i < ps->ns; i++) {
        const struct ork_mat *w = ps->src[i];
        for (int64_t j = 0; j < w->n_rows; j++, r++) {
            const uint8_t *p = (const uint8_t *)w->data + (size_t)j * w->row_bytes;
            int ret = ork_dequant_row(w->type, p, row, w->n_cols);
            if (ret < 0)
                return ret;
            ret = ork_npu_quantize_weights_i8(row + ps->c0, 1, ps->k, q + r * (size_t)ps->k,
                                              scales + r);
            if (ret < 0)
                return ret;
        }
    }
    return 0;
}

static uint32_t n_pack_slots(const struct ork_model *m)
{
    return (uint32_t)m->cfg.n_layers * PK_PER_LAYER + 1;
}

/* Tensors the pack of m holds (slots with a tensor). */
static uint32_t n_pack_tensors(const struct ork_model *m)
{
    return n_pack_slots(m) - (o_split_cols(&m->cfg) ? 0 : (uint32_t)m->cfg.n_layers);
}

/* Largest rows, cols and whole source row (for scratch sizing) over the pack slots. */
static void pack_max_dims(const struct ork_model *m, bool whole_o, size_t *max_q, size_t *max_n,
                          size_t *max_k, size_t *max_row)
{
    *max_q = *max_n = *max_k = *max_row = 0;
    for (uint32_t t = 0; t < n_pack_slots(m); t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        pack_sources(m, t, whole_o, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        size_t q = (size_t)ps.n * ps.k, row = (size_t)ps.src[0]->n_cols;
        *max_q = q > *max_q ? q : *max_q;
        *max_n = ps.n > *max_n ? ps.n : *max_n;
        *max_k = ps.k > *max_k ? ps.k : *max_k;
        *max_row = row > *max_row ? row : *max_row;
    }
}

/* A progress bar on stderr: redrawn in place on a terminal when the percentage moves, else
 * only the final line. */
static void progress(bool show, const char *what, uint64_t done, uint64_t total, int *last)
{
    if (!show)
        return;
    int pct = total ? (int)(100.0 * (double)done / (double)total) : 100;
    bool tty = isatty(2);
    if (pct == *last || (!tty && done < total))
        return;
    *last = pct;
    int width = 40, fill = pct * width / 100;
    fprintf(stderr, "%s%s [", tty ? "\r" : "", what);
    for (int i = 0; i < width; i++)
        fputc(i < fill ? '#' : ' ', stderr);
    fprintf(stderr, "] %3d%%", pct);
    if (done >= total)
        fputc('\n', stderr);
    fflush(stderr);
}

/* Build the pack of model m: each tensor quantised, tiled for the NPU by creating its weights
 * on npu with plans of max_m rows, and the tiled bytes exported into the pack (a tensor the NPU
 * cannot take is stored with 0 tiled bytes and runs on the CPU). */
static int build_pack(const struct ork_model *m, const char *path,
                      const struct ork_orkpack_source *src_id, bool show, struct ork_npu *npu,
                      uint32_t max_m)
{
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    caps.npu_max_m = max_m;
    uint32_t nt = n_pack_tensors(m), ns = n_pack_slots(m);
    uint64_t total = 0, done = 0, tcap = 0;
    int last = -1;
    size_t max_q, max_n, max_k, max_row;
    pack_max_dims(m, false, &max_q, &max_n, &max_k, &max_row);
    for (uint32_t t = 0; t < ns; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        pack_sources(m, t, false, &ps, name, sizeof name);
        total += ps.ns ? (uint64_t)ps.n * ps.k : 0;
    }
    int8_t *q = ork_malloc(max_q);
    float *scales = ork_malloc(max_n * sizeof(float));
    float *row = ork_malloc(max_row * sizeof(float));
    void *tiled = NULL;
    struct ork_orkpack_writer *w = NULL;
    int ret = ORK_ENOMEM;
    if (!q || !scales || !row)
        goto out;
    if ((ret = ork_orkpack_writer_open(path, src_id, &caps, nt, &w)) < 0)
        goto out;
    for (uint32_t t = 0; t < ns; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        pack_sources(m, t, false, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        uint32_t n = ps.n, k = ps.k;
        if ((ret = quantize_sources(&ps, row, q, scales)) < 0)
            goto fail;
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = k, .n = n, .w = q, .scales = scales,
                                           .max_m = max_m };
        struct ork_npu_weights *nw = NULL;
        uint64_t bytes = 0;
        if (ork_npu_weights_create(npu, &wd, &nw) == 0) {
            bytes = ork_npu_weights_bytes(nw);
            if (bytes > tcap) {
                ork_free(tiled);
                tiled = ork_malloc(bytes);
                tcap = tiled ? bytes : 0;
            }
            ret = tiled ? ork_npu_weights_export(nw, tiled, tcap) : ORK_ENOMEM;
            ork_npu_weights_destroy(nw);
            if (ret < 0)
                goto fail;
        }
        if ((ret = ork_orkpack_writer_add_bytes(w, name, n, k, tiled, bytes, scales)) < 0)
            goto fail;
        done += (uint64_t)n * k;
        progress(show, "packing NPU weights", done, total, &last);
    }
    ret = ork_orkpack_writer_commit(w);
    goto out;
fail:
    ork_orkpack_writer_abort(w);
out:
    ork_free(q);
    ork_free(scales);
    ork_free(row);
    ork_free(tiled);
    return ret;
}

/* ORK_ESTALE with a message when pack lacks a tensor the model's executor wants or holds it in
 * another shape (e.g. the O projection split at other heads): such a pack is rebuilt. */
static int check_pack_tensors(const struct ork_model *m, const struct ork_orkpack *pack,
                              const char *path)
{
    for (uint32_t t = 0; t < n_pack_slots(m); t++) {
        struct pack_src ps;
        struct ork_orkpack_tensor pt;
        char name[ORK_ORKPACK_NAME_MAX];
        pack_sources(m, t, false, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        if (ork_orkpack_tensor_find(pack, name, &pt) < 0)
            return ork_errorf(ORK_ESTALE, "orkpack '%s' does not fit the model: no tensor '%s'",
                              path, name);
        if (pt.n != ps.n || pt.k != ps.k)
            return ork_errorf(ORK_ESTALE, "orkpack '%s' does not fit the model: tensor '%s' is "
                              "%ux%u, the model wants %ux%u", path, name, pt.n, pt.k, ps.n,
                              ps.k);
    }
    return 0;
}

/* Open the pack of model m (at pack_path, or beside path), building it when it is missing,
 * stale, foreign, of another version or corrupt (the reason is logged and put in *found). */
static int ensure_pack(const struct ork_model *m, const char *path, const char *pack_path,
                       uint32_t flags, struct ork_npu *npu, uint32_t max_m,
                       struct ork_orkpack **out, enum ork_orkpack_problem *found)
{
    char pbuf[4096];
    const char *pp = pack_path;
    int ret;
    *out = NULL;
    if (!pp) {
        if ((ret = ork_orkpack_path_for(path, pbuf, sizeof pbuf)) < 0)
            return ret;
        pp = pbuf;
    }
    bool show = !(flags & ORK_NPU_EXEC_QUIET);
    struct ork_orkpack_source sid;
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    caps.npu_max_m = max_m;
    if ((ret = ork_orkpack_source_of(path, ork_gguf_data_offset(m->gguf), &sid)) < 0)
        return ret;
    enum ork_orkpack_problem why = ORK_ORKPACK_MISSING;
    ret = ork_orkpack_open(pp, &sid, &caps, out, &why);
    if (ret == 0 && (ret = check_pack_tensors(m, *out, pp)) < 0)
        why = ORK_ORKPACK_STALE;
    if (ret == 0 && !(flags & ORK_NPU_EXEC_REBUILD_PACK)) {
        if (found)
            *found = ORK_ORKPACK_OK;
        return 0;
    }
    ork_orkpack_close(*out);
    *out = NULL;
    if (ret < 0 && why != ORK_ORKPACK_MISSING && show)
        fprintf(stderr, "%s; rebuilding it\n", ork_error_message());
    if (found)
        *found = why;
    if (show)
        fprintf(stderr, "building %s\n", pp);
    if ((ret = build_pack(m, pp, &sid, show, npu, max_m)) < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        return ork_errorf(ret, "cannot build the NPU pack '%s': %s", pp, msg);
    }
    return ork_orkpack_open(pp, &sid, &caps, out, &why);
}

int ork_orkpack_check_for_model(const char *model_path, const char *pack_path)
{
    struct ork_gguf *g;
    int ret = ork_gguf_open(model_path, &g);
    if (ret < 0)
        return ret;
    struct ork_orkpack_source sid;
    ret = ork_orkpack_source_of(model_path, ork_gguf_data_offset(g), &sid);
    ork_gguf_close(g);
    if (ret < 0)
        return ret;
    char pbuf[4096];
    if (!pack_path) {
        if ((ret = ork_orkpack_path_for(model_path, pbuf, sizeof pbuf)) < 0)
            return ret;
        pack_path = pbuf;
    }
    struct ork_orkpack_caps caps;
    ork_orkpack_caps_default(&caps);
    caps.npu_max_m = NPU_DEFAULT_MAX_M;
    struct ork_orkpack *pk;
    if ((ret = ork_orkpack_open(pack_path, &sid, &caps, &pk, NULL)) < 0)
        return ret;
    /* the tensors the executor wants, in their shapes (the model is mapped, not read) */
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    struct ork_model *m;
    if ((ret = ork_model_load(model_path, &mp, &m)) == 0) {
        ret = check_pack_tensors(m, pk, pack_path);
        ork_model_free(m);
    }
    ork_orkpack_close(pk);
    return ret;
}

int ork_orkpack_build_for_model(const char *model_path, const char *pack_path, bool force,
                                bool quiet, enum ork_orkpack_problem *found)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    struct ork_model *m;
    int ret = ork_model_load(model_path, &mp, &m);
    if (ret < 0)
        return ret;
    /* the tiling comes from the NPU when there is one, else from the simulator (same layout) */
    struct ork_npu *npu = NULL;
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "auto" };
    if (ork_npu_open(&o, &npu) < 0) {
        o.device = "sim";
        if ((ret = ork_npu_open(&o, &npu)) < 0) {
            ork_model_free(m);
            return ret;
        }
    }
    struct ork_orkpack *pk = NULL;
    uint32_t flags = (force ? ORK_NPU_EXEC_REBUILD_PACK : 0) | (quiet ? ORK_NPU_EXEC_QUIET : 0);
    ret = ensure_pack(m, model_path, pack_path, flags, npu, NPU_DEFAULT_MAX_M, &pk, found);
    ork_orkpack_close(pk);
    ork_npu_close(npu);
    ork_model_free(m);
    return ret;
}

/* ---- device and placement ----------------------------------------------------------------- */

static int open_device(struct ork__npu_exec *ex, const char *device, int32_t sim_timing,
                       uint64_t domain_bytes)
{
    if (ex->n_dev >= NPU_MAX_DOMAINS)
        return ork_errorf(ORK_ENOMEM, "NPU: the resident weights need more than %d IOMMU "
                          "domains", NPU_MAX_DOMAINS);
    struct ork_sim_opts so = { .struct_size = sizeof so,
                               .timing = (enum ork_sim_timing)sim_timing,
                               .domain_limit = domain_bytes };
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = device, .sim = &so,
                              .domain = (uint32_t)ex->n_dev };
    int ret = ork_npu_open(&o, &ex->dev[ex->n_dev]);
    if (ret < 0)
        return ret;
    ex->n_dev++;
    return 0;
}

/* Device bytes of an int8 [n][k] matrix with its two plans (docs/npu.md tiling rules): the
 * weights padded (K to 512 for prefill plans, else 32; N to 32), and per plan of m rows the A
 * buffer, one int32 C block per K-slice (slices <= 4096 when max_m > 1) and the programs
 * (896 bytes each, one per K-slice x N-slice x M-tile), all rounded up to pages. */
#define EST_PROGRAM_BYTES 896u
#define EST_PAGE 4096u
static uint64_t est_bytes(uint32_t n, uint32_t k, uint32_t max_m)
{
    uint64_t ka = max_m > 1 ? 512 : 32;
    uint64_t kp = ((uint64_t)k + ka - 1) / ka * ka, np = ((uint64_t)n + 31) / 32 * 32;
    uint64_t kslices = max_m > 1 ? (kp + 4095) / 4096 : (kp + 8191) / 8192;
    uint64_t nslices = (np + 8191) / 8192;
    uint64_t total = np * kp;
    uint32_t ms[2] = { 1, max_m };
    for (int i = 0; i < (max_m > 1 ? 2 : 1); i++) {
        uint64_t m = ms[i], mtiles = (m + 63) / 64;
        total += m * kp + m * np * 4 * kslices +
                 kslices * nslices * mtiles * 3 * EST_PROGRAM_BYTES + 4 * EST_PAGE;
    }
    return total;
}

/* Weights from int8 rows q (tiled here), or, when tiled is not NULL, from the pack's tiled
 * bytes as they are. */
static int make_mat(struct ork__npu_exec *ex, struct npu_mat *mt, int dev, const int8_t *q,
                    const void *tiled, uint64_t tiled_bytes, const float *scales, uint32_t n,
                    uint32_t k, uint32_t cores)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = k,
                                       .n = n, .w = q, .scales = scales, .max_m = ex->max_m };
    int ret = tiled ? ork_npu_weights_create_packed(ex->dev[dev], &wd, tiled, tiled_bytes, &mt->w)
                    : ork_npu_weights_create(ex->dev[dev], &wd, &mt->w);
    if (ret < 0)
        return ret;
    mt->n = n;
    mt->k = k;
    mt->dev = dev;
    mt->scales = ork_npu_weights_scales(mt->w);
    ex->dev_bytes[dev] += ork_npu_weights_bytes(mt->w);
    ex->st.resident_bytes += ork_npu_weights_bytes(mt->w);
    struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = 1, .cores = cores,
                                      .flags = ORK_NPU_MATMUL_ONE_JOB };
    if ((ret = ork_npu_matmul_create(mt->w, &md, &mt->dec)) < 0)
        return ret;
    ork_npu_matmul_get_info(mt->dec, &mt->dinfo);
    if (ex->max_m > 1) {
        md.m = ex->max_m;
        if ((ret = ork_npu_matmul_create(mt->w, &md, &mt->pre)) < 0)
            return ret;
        ork_npu_matmul_get_info(mt->pre, &mt->pinfo);
    }
    return 0;
}

static void free_mat(struct npu_mat *mt)
{
    ork_npu_matmul_destroy(mt->pre);
    ork_npu_matmul_destroy(mt->dec);
    ork_npu_weights_destroy(mt->w);
    memset(mt, 0, sizeof(*mt));
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
 * the fused executor makes it o->mat[ps->half] (the two O halves are two K-split matrices of
 * one op); the baseline cuts it into one matrix per source. */
static int place_op(struct ork__npu_exec *ex, const struct pack_src *ps, struct npu_opmat *o,
                    int dev, const int8_t *q, const void *tiled, uint64_t tiled_bytes,
                    const float *scales)
{
    uint32_t k = ps->k;
    o->n_parts = ps->ns;
    for (int i = 0; i < ps->ns; i++)
        o->part_n[i] = (uint32_t)ps->src[i]->n_rows;
    bool per_matmul = (ex->flags & ORK_NPU_EXEC_PER_MATMUL) != 0;
    /* cores: 0 lets libork's core budget pick per shape (sched.h); the baseline stays on one
     * core. Split plans run as one job with a task range per core (ORK_NPU_MATMUL_ONE_JOB):
     * one submit per matmul, not one per core. */
    uint32_t cores = per_matmul ? 1 : 0;
    int ret;
    if (per_matmul) {
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
        if (ps->op == ORK__NPU_O && ps->k < (uint32_t)ps->src[0]->n_cols)
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
    bool whole_o = (ex->flags & ORK_NPU_EXEC_PER_MATMUL) != 0;
    int ret = 0;
    for (uint32_t t = t0; t < t0 + nt; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        pack_sources(m, t, whole_o, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        struct npu_opmat *o = op_at(ex, ps.op, (int32_t)(t / PK_PER_LAYER));
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
        } else {
            if ((ret = quantize_sources(&ps, row, qbuf, sbuf)) < 0)
                return ret;
            q = qbuf;
            sc = sbuf;
        }
        if ((ret = place_op(ex, &ps, o, dev, q, tiled, tiled_bytes, sc)) < 0)
            return ret;
    }
    return 0;
}

/* ---- create / destroy -------------------------------------------------------------------- */

static int resolve_device(const char *want, const char **dev)
{
    if (!want || !strcmp(want, "cpu")) {
        *dev = NULL;
        return 0;
    }
    if (!strcmp(want, "sim")) {
        *dev = "sim";
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
    return ork_errorf(ORK_EINVAL, "unknown device '%s' (cpu, npu, sim or auto)", want);
}

/* Take the devices' modelled clocks as the zero of the statistics. */
static void model_base_reset(struct ork__npu_exec *ex)
{
    if (!ex->is_sim)
        return;
    for (int d = 0; d < ex->n_dev; d++)
        if (ork_npu_model_time(ex->dev[d], &ex->model_base[d]) < 0)
            memset(&ex->model_base[d], 0, sizeof ex->model_base[d]);
    ex->switches_base = ex->n_domain_switches;
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
    ex->max_m = p->npu_max_m > 0 ? (uint32_t)p->npu_max_m : NPU_DEFAULT_MAX_M;
    ex->n_layers = m->cfg.n_layers;
    bool show = !(ex->flags & ORK_NPU_EXEC_QUIET);
    struct ork_orkpack *pack = NULL;
    int8_t *qbuf = NULL;
    float *sbuf = NULL, *row = NULL;
    uint64_t dom_bytes = p->npu_domain_bytes ? p->npu_domain_bytes : NPU_DOMAIN_BUDGET;
    int ret = open_device(ex, dev_name, p->sim_timing, p->npu_domain_bytes);
    if (ret < 0) {
        if (soft && ret == ORK_ENOENT) {
            if (show)
                fprintf(stderr, "device auto: no NPU found, running on the CPU\n");
            ork__npu_exec_destroy(ex);
            return 0;
        }
        goto err;
    }
    ex->ops = ork_calloc((size_t)m->cfg.n_layers * OPS_PER_LAYER + 1, sizeof(*ex->ops));
    if (!ex->ops) {
        ret = ORK_ENOMEM;
        goto err;
    }

    /* weights: tiled from the pack (built or rebuilt when needed), or quantised and tiled here.
     * The per-matmul baseline cuts fused tensors into row ranges, which needs plain rows: it
     * always quantises in memory. */
    if (!(ex->flags & (ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_PER_MATMUL)) &&
        ensure_pack(m, path, p->npu_pack_path, ex->flags, ex->dev[0], ex->max_m, &pack,
                    NULL) < 0) {
        ORK_LOGW("%s; quantising for the NPU in memory", ork_error_message());
        pack = NULL;
    }

    size_t max_q, max_n, max_k, max_row;
    pack_max_dims(m, (ex->flags & ORK_NPU_EXEC_PER_MATMUL) != 0, &max_q, &max_n, &max_k, &max_row);
    if (!pack) {
        qbuf = ork_malloc(max_q);
        sbuf = ork_malloc(max_n * sizeof(float));
        row = ork_malloc(max_row * sizeof(float));
        if (!qbuf || !sbuf || !row) {
            ret = ORK_ENOMEM;
            goto err;
        }
    }
    ex->a8 = ork_malloc((size_t)ex->max_m * max_k);
    ex->a_scales = ork_malloc(2 * (size_t)ex->max_m * sizeof(float));
    ex->c32_half = (size_t)ex->max_m * max_n;
    ex->c32 = ork_malloc(2 * ex->c32_half * sizeof(int32_t));
    if (!ex->a8 || !ex->a_scales || !ex->c32) {
        ret = ORK_ENOMEM;
        goto err;
    }

    /* placement: layer by layer, a new domain when the next layer does not fit */
    /* the margin covers what est_bytes does not see; small test domains keep 1/8 */
    uint64_t margin = dom_bytes / 8 < NPU_DOMAIN_MARGIN ? dom_bytes / 8 : NPU_DOMAIN_MARGIN;
    uint64_t cap = dom_bytes - margin;
    int cur = 0;
    uint64_t used = 0;
    int n_fallback = 0, last = -1;
    char fb_names[256] = "";
    bool whole_o = (ex->flags & ORK_NPU_EXEC_PER_MATMUL) != 0;
    /* pack slots of each op of a layer (QKV, O_A + O_B, GATE_UP, DOWN), from the layer's first */
    static const uint32_t op_slot[OPS_PER_LAYER] = { PK_QKV, PK_O_A, PK_GATE_UP, PK_DOWN };
    static const uint32_t op_nslots[OPS_PER_LAYER] = { 1, 2, 1, 1 };
    for (int32_t l = 0; l <= m->cfg.n_layers; l++) {
        uint32_t t0 = (uint32_t)l * PK_PER_LAYER;
        bool head = l == m->cfg.n_layers;
        uint32_t t1 = head ? t0 + 1 : t0 + PK_PER_LAYER;
        uint64_t need = 0;
        for (uint32_t t = t0; t < t1; t++) {
            struct pack_src ps;
            char name[ORK_ORKPACK_NAME_MAX];
            pack_sources(m, t, whole_o, &ps, name, sizeof name);
            need += ps.ns ? est_bytes(ps.n, ps.k, ex->max_m) : 0;
        }
        if (used > 0 && used + need > cap) {
            if ((ret = open_device(ex, dev_name, p->sim_timing, p->npu_domain_bytes)) < 0)
                goto err;
            cur = ex->n_dev - 1;
            used = 0;
        }
        used += need;
        for (int opi = 0; opi < (head ? 1 : OPS_PER_LAYER); opi++) {
            uint32_t ts = head ? t0 : t0 + op_slot[opi], tn = head ? 1 : op_nslots[opi];
            struct npu_opmat *o = head ? op_at(ex, ORK__NPU_LM_HEAD, 0)
                                       : op_at(ex, (enum ork__npu_op)opi, l);
            struct pack_src ps;
            char name[ORK_ORKPACK_NAME_MAX];
            pack_sources(m, ts, whole_o, &ps, name, sizeof name);
            ret = place_tensors(ex, m, ts, tn, pack, cur, qbuf, sbuf, row);
            if (ret == ORK_ENOMEM && ex->dev_bytes[cur] > 0) {
                /* the estimate was short and the domain is full: this op (and the rest of
                 * the layer) starts a new domain */
                drop_op(ex, o);
                if ((ret = open_device(ex, dev_name, p->sim_timing, p->npu_domain_bytes)) < 0)
                    goto err;
                cur = ex->n_dev - 1;
                used = need;
                ret = place_tensors(ex, m, ts, tn, pack, cur, qbuf, sbuf, row);
            }
            if (ret == ORK_EFORMAT || (pack && ret == ORK_ENOENT))
                goto err;       /* a pack that does not fit the model */
            if (ret < 0) {
                /* shapes or memory the NPU cannot take: this op stays on the CPU */
                drop_op(ex, o);
                if (n_fallback++ < 4)
                    snprintf(fb_names + strlen(fb_names), sizeof fb_names - strlen(fb_names),
                             "%s%s (%s)", n_fallback > 1 ? ", " : "", name, ork_error_message());
                ex->st.n_cpu_mats += ps.ns;
            } else {
                ex->st.n_npu_mats += ps.ns;
            }
        }
        progress(show, "loading NPU weights", (uint64_t)l + 1, (uint64_t)m->cfg.n_layers + 1,
                 &last);
    }
    if (n_fallback)
        ORK_LOGW("NPU: %d op(s) run on the CPU: %s%s", n_fallback, fb_names,
                 n_fallback > 4 ? ", ..." : "");
    snprintf(ex->st.backend, sizeof ex->st.backend, "%s", ork_npu_backend(ex->dev[0]));
    ex->is_sim = !strcmp(ex->st.backend, "sim");
    model_base_reset(ex);
    ex->st.n_domains = ex->n_dev;
    if (show)
        fprintf(stderr, "NPU (%s): %d matrices resident (%.1f MiB in %d IOMMU domain%s), %d on "
                "the CPU; executor: %s\n", ex->st.backend, ex->st.n_npu_mats,
                (double)ex->st.resident_bytes / (1 << 20), ex->n_dev, ex->n_dev > 1 ? "s" : "",
                ex->st.n_cpu_mats, (ex->flags & ORK_NPU_EXEC_PER_MATMUL)
                ? "one submit per matmul"
                : "fused [Q|K|V] and [gate|up], O split by heads, multi-core");
    ork_orkpack_close(pack);
    ork_free(qbuf);
    ork_free(sbuf);
    ork_free(row);
    *out = ex;
    return 0;
err:
    ork_orkpack_close(pack);
    ork_free(qbuf);
    ork_free(sbuf);
    ork_free(row);
    ork__npu_exec_destroy(ex);
    return ret;
}

void ork__npu_exec_destroy(struct ork__npu_exec *ex)
{
    if (!ex)
        return;
    if (ex->ops) {
        uint32_t nt = (uint32_t)ex->n_layers * OPS_PER_LAYER + 1;
        for (uint32_t t = 0; t < nt; t++)
            for (int i = 0; i < 3; i++)
                if (ex->ops[t].mat[i].w)
                    free_mat(&ex->ops[t].mat[i]);
        ork_free(ex->ops);
    }
    for (int d = 0; d < ex->n_dev; d++)
        ork_npu_close(ex->dev[d]);
    ork_free(ex->a8);
    ork_free(ex->a_scales);
    ork_free(ex->c32);
    pthread_mutex_destroy(&ex->lock);
    ork_free(ex);
}

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

static void count_run(struct ork__npu_exec *ex, const struct ork_npu_matmul_info *in, uint32_t m,
                      int dev)
{
    (void)m;
    if (dev != ex->last_dev) {
        ex->last_dev = dev;
        ex->n_domain_switches++;
    }
    ex->st.n_submits += in->n_submits ? in->n_submits : 1;
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
    struct ork_npu_matmul *plan = mt->pre ? mt->pre : mt->dec;
    const struct ork_npu_matmul_info *in = mt->pre ? &mt->pinfo : &mt->dinfo;
    uint32_t k = mt->k, mm = ex->max_m;
    int32_t nc = (int32_t)((m + (int32_t)mm - 1) / (int32_t)mm);
    struct ork_npu_job *job = NULL;
    int ret;
    uint32_t mr0 = (uint32_t)(m < (int32_t)mm ? m : (int32_t)mm);
    if ((ret = ork_npu_quantize_rows_i8(x, mr0, k, ex->a8, ex->a_scales)) < 0 ||
        (ret = ork_npu_matmul_submit_async(plan, ex->a8, mr0, ex->c32, &job)) < 0)
        return ret;
    for (int32_t i = 0; i < nc; i++) {
        int32_t r0 = i * (int32_t)mm;
        uint32_t mr = (uint32_t)(m - r0 < (int32_t)mm ? m - r0 : (int32_t)mm);
        int32_t r1 = r0 + (int32_t)mm;
        uint32_t mr1 = i + 1 < nc ? (uint32_t)(m - r1 < (int32_t)mm ? m - r1 : (int32_t)mm) : 0;
        float *as_next = ex->a_scales + (size_t)((i + 1) & 1) * mm;
        int qret = 0;
        if (mr1)        /* overlaps chunk i on the NPU */
            qret = ork_npu_quantize_rows_i8(x + (size_t)r1 * k, mr1, k, ex->a8, as_next);
        if ((ret = ork_npu_job_wait(job)) < 0)
            return ret;
        if (qret < 0)
            return qret;
        count_run(ex, in, mr, mt->dev);
        if (mr1 && (ret = ork_npu_matmul_submit_async(plan, ex->a8, mr1,
                                                      ex->c32 + (size_t)((i + 1) & 1) * ex->c32_half,
                                                      &job)) < 0)
            return ret;
        /* overlaps chunk i+1 on the NPU */
        scatter_parts(o, ex->c32 + (size_t)(i & 1) * ex->c32_half,
                      ex->a_scales + (size_t)(i & 1) * mm, mr, r0, outs);
    }
    return 0;
}

static int run_mat(struct ork__npu_exec *ex, struct npu_mat *mt, uint32_t m)
{
    bool dec = m == 1 || !mt->pre;
    struct ork_npu_matmul *plan = dec ? mt->dec : mt->pre;
    const struct ork_npu_matmul_info *in = dec ? &mt->dinfo : &mt->pinfo;
    int ret = ork_npu_matmul_run_i8(plan, ex->a8, m, ex->c32);
    if (ret < 0)
        return ret;
    count_run(ex, in, m, mt->dev);
    return 0;
}

/* ---- the K-split O projection ------------------------------------------------------------
 * The O projection's input (the attention output, head-major) is split by heads into columns
 * [0, ka) and [ka, K). Each half is its own int8 matrix with per-output-channel scales ws_h,
 * and each row of each half of the input is quantised with its own scale as_h, so
 *   y[i][j] = sum_h as_h[i] * ws_h[j] * C_h[i][j],  C_h = A_h . W_h^T (int32, exact),
 * which is the same w8a8 formula applied to two shorter dot products and then summed in f32:
 * each half is quantised over its own range (at least as fine as one scale over the row). */

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
    for (int32_t r0 = 0; r0 < m; r0 += (int32_t)ex->max_m) {
        uint32_t mr = (uint32_t)(m - r0 < (int32_t)ex->max_m ? m - r0 : (int32_t)ex->max_m);
        for (int h = 0; h < 2; h++) {
            struct npu_mat *mt = &o->mat[h];
            int ret = quantize_cols(x + (size_t)r0 * kx, kx, mt->c0, mt->k, mr, ex->a8,
                                    ex->a_scales);
            if (ret < 0 || (ret = run_mat(ex, mt, mr)) < 0)
                return ret;
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
    if (!ex || m < 1 || m > (int32_t)ex->max_m)
        return 0;
    const struct npu_opmat *o = op_at(ex, ORK__NPU_O, layer);
    if (!o->on_npu || !o->k_split)
        return 0;
    uint32_t kx = o->mat[0].k + o->mat[1].k;
    return (int32_t)((uint64_t)o->mat[0].k * (uint64_t)n_heads / kx);
}

int ork__npu_exec_o_submit(struct ork__npu_exec *ex, int32_t layer, const float *att, int32_t m)
{
    struct npu_opmat *o = op_at(ex, ORK__NPU_O, layer);
    struct npu_mat *mt = &o->mat[0];
    uint32_t kx = mt->k + o->mat[1].k;
    int64_t t0 = ork__now_ns();
    ork_npu_exec_traced("npu o_a (async)");
    bool dec = m == 1 || !mt->pre;
    int ret = quantize_cols(att, kx, mt->c0, mt->k, (uint32_t)m, ex->a8, ex->a_scales);
    ex->o_model0_ns = model_now(ex, mt->dev);
    if (ret == 0)
        ret = ork_npu_matmul_submit_async(dec ? mt->dec : mt->pre, ex->a8, (uint32_t)m, ex->c32,
                                          &ex->o_job);
    ork_npu_exec_untraced();
    if (ret < 0) {
        ex->o_job = NULL;
        return ret;
    }
    count_run(ex, dec ? &mt->dinfo : &mt->pinfo, (uint32_t)m, mt->dev);
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
    struct npu_opmat *o = op_at(ex, ORK__NPU_O, layer);
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
    bool dec = m == 1 || !mb->pre;
    if (ret == 0)
        ret = quantize_cols(att, kx, mb->c0, mb->k, mr, ex->a8, as_b);
    if (ret == 0)
        ret = ork_npu_matmul_run_i8(dec ? mb->dec : mb->pre, ex->a8, mr, c_b);
    if (ret == 0) {
        count_run(ex, dec ? &mb->dinfo : &mb->pinfo, mr, mb->dev);
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
    struct npu_opmat *o = op_at(ex, op, layer);
    if (!o->on_npu)
        return 0;
    static const char *const trace_names[ORK__NPU_N_OPS] = {
        "npu qkv", "npu o", "npu gate_up", "npu down", "npu lm_head",
    };
    int64_t t0 = ork__now_ns();
    uint32_t k = o->mat[0].k;
    int ret = ork_npu_exec_traced(trace_names[op]);
    if (o->k_split) {
        ret = run_ksplit(ex, o, x, m, outs[0]);
        m = 0;      /* done */
    }
    if (o->n_mats == 1 && m > (int32_t)ex->max_m) {
        ret = run_pipelined(ex, o, x, m, outs);
        m = 0;      /* done */
    }
    for (int32_t r0 = 0; r0 < m; r0 += (int32_t)ex->max_m) {
        uint32_t mr = (uint32_t)(m - r0 < (int32_t)ex->max_m ? m - r0 : (int32_t)ex->max_m);
        if ((ret = ork_npu_quantize_rows_i8(x + (size_t)r0 * k, mr, k, ex->a8, ex->a_scales)) < 0)
            break;
        if (o->n_mats == 1) {
            if ((ret = run_mat(ex, &o->mat[0], mr)) < 0)
                break;
            scatter_parts(o, ex->c32, ex->a_scales, mr, r0, outs);
        } else {
            for (int pi = 0; pi < o->n_mats; pi++) {
                struct npu_mat *mt = &o->mat[pi];
                if ((ret = run_mat(ex, mt, mr)) < 0)
                    break;
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
    ex->st.sect_ms[5] += wall - ex->batch_npu_ms;
    ex->st.n_forward++;
    ex->st.n_rows += (uint64_t)m;
    ork_npu_exec_untraced();
    pthread_mutex_unlock(&ex->lock);
}

/* ---- public ------------------------------------------------------------------------------ */

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
    s->cpu_inflight_ms = s->cpu_overlap_ms = 0;
    memset(s->model_core_busy_ms, 0, sizeof s->model_core_busy_ms);
    memset(s->sect_ms, 0, sizeof s->sect_ms);
    model_base_reset(m->npu);
}

const char *ork_model_device(const struct ork_model *m)
{
    return m && m->npu ? m->npu->st.backend : "cpu";
}
