/* weights_grid.c -- the NPU weights' encoding (ork_model_params.npu_weights, CLI --npu-weights
 * int8|dcomp|dcomp:L; docs/dcomp.md "The executor"): checking the setting against the device,
 * quantising each NPU tensor per output channel onto its grid (int8's +-127, or for dcomp the
 * grid L fixed or picked per tensor as the coarsest whose rel-RMSE against the source weights
 * is within the bound, ork/dcomp.h), and the per-model report of the bits per weight achieved
 * and the grids chosen per tensor class (ORK_DEBUG=model: every tensor's errors per grid).
 *
 * The codes of a grid are plain int8: libork stores them as decompressor streams
 * (ORK_NPU_WEIGHTS_DCOMP, lossless over the codes), or raw with ORK_NPU_WENC_RAW_CODES, which
 * gives the same results bit for bit (tests/e2e/test_npu_dcomp.c). */
#include "npu_priv.h"
#include "calib.h"

#include <ork-kernels/kernels.h>
#include <ork/dcomp.h>
#include <ork/alloc.h>
#include <ork/debug.h>
#include <ork/error.h>
#include <ork/log.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The tensor classes of the report: the layer ops, then the LM head. */
#define CLASS_NAME(id, name) name,
static const char *const class_names[ORK__NPU_N_OPS] = { ORK__LAYER_OPS(CLASS_NAME) "output" };
#undef CLASS_NAME


static int grid_index(uint32_t levels)
{
    for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++)
        if (ork_dcomp_grids[g] == levels)
            return (int)g;
    return -1;
}

/* The flags each encoding takes (the rest is ORK_EINVAL naming them). */
#define FLAGS_ALL (ORK_NPU_WENC_RAW_CODES | ORK_NPU_WENC_CLIP | ORK_NPU_WENC_ROTATE | \
                   ORK_NPU_WENC_CALIBRATED)
#define FLAGS_INT8 (ORK_NPU_WENC_ROTATE | ORK_NPU_WENC_CALIBRATED)
#define FLAGS_W4A8 FLAGS_ALL

int ork__npu_wenc_check(const struct ork_npu_weights_opts *o)
{
    if (o->encoding != ORK_NPU_WENC_INT8 && o->encoding != ORK_NPU_WENC_DCOMP &&
        o->encoding != ORK_NPU_WENC_W4A8)
        return ork_errorf(ORK_EINVAL, "NPU weights: unknown encoding %u (int8, dcomp or w4a8)",
                          o->encoding);
    if (o->flags & ~(uint32_t)FLAGS_ALL)
        return ork_errorf(ORK_EINVAL, "NPU weights: unknown flags 0x%x",
                          o->flags & ~(uint32_t)FLAGS_ALL);
    if (o->encoding == ORK_NPU_WENC_INT8 &&
        (o->levels || (o->flags & ~(uint32_t)FLAGS_INT8) || o->max_rel_rmse != 0.0))
        return ork_errorf(ORK_EINVAL, "NPU weights: a grid, bound, --npu-weights-raw or "
                          "--npu-weights-clip need dcomp (int8 is the +-127 grid; it takes "
                          "--npu-weights-rotate only)");
    if (o->encoding == ORK_NPU_WENC_W4A8 && (o->levels || o->max_rel_rmse != 0.0))
        return ork_errorf(ORK_EINVAL, "NPU weights: w4a8 has one grid, int4 [-8, 7] per output "
                          "channel: a grid L or --npu-weights-max-err needs dcomp");
    if (o->levels && grid_index(o->levels) < 0)
        return ork_errorf(ORK_EINVAL, "NPU weights: grid %u is not one of 7, 15, 31, 63, 127",
                          o->levels);
    if (!(o->max_rel_rmse >= 0.0 && o->max_rel_rmse < 1.0))
        return ork_errorf(ORK_EINVAL, "NPU weights: max rel-RMSE %g outside [0, 1)",
                          o->max_rel_rmse);
    return ork__npu_keep_check(o);
}

static bool rotated(const struct ork_npu_weights_opts *o)
{
    return o && (o->flags & ORK_NPU_WENC_ROTATE);
}

void ork__npu_wenc_caps(const struct ork_npu_weights_opts *o, struct ork_orkpack_caps *caps)
{
    caps->w_encoding = o ? o->encoding : 0;
    caps->w_levels = o ? o->levels : 0;
    caps->w_flags = o ? o->flags : 0;
    caps->w_max_rel_rmse = 0.0f;
    caps->w_rotation = rotated(o) ? ORK__NPU_ROT_ID : 0;
    caps->w_int8 = ork__npu_keep_id(o);
    if (o && o->encoding == ORK_NPU_WENC_DCOMP && !o->levels)
        caps->w_max_rel_rmse = (float)(o->max_rel_rmse > 0.0 ? o->max_rel_rmse
                                                             : ORK_NPU_WENC_DEFAULT_MAX_ERR);
}

void ork__npu_wenc_name(const struct ork_npu_weights_opts *o, char *buf, size_t cap)
{
    char rot[160];
    snprintf(rot, sizeof rot, "%s%s%s", rotated(o) ? ", rotated" : "",
             ork__npu_keep_id(o) ? ", int8 for " : "", ork__npu_keep_id(o) ? o->int8_tensors : "");
    if (!o || o->encoding == ORK_NPU_WENC_INT8) {
        snprintf(buf, cap, "int8%s", rot);
        return;
    }
    const char *raw = o->flags & ORK_NPU_WENC_RAW_CODES ? ", codes stored raw" : "";
    const char *clip = o->flags & ORK_NPU_WENC_CLIP ? ", clipped scales" : "";
    if (o->encoding == ORK_NPU_WENC_W4A8)
        snprintf(buf, cap, "w4a8%s%s%s", raw, clip, rot);
    else if (o->levels)
        snprintf(buf, cap, "dcomp:%u%s%s%s", o->levels, raw, clip, rot);
    else
        snprintf(buf, cap, "dcomp (per tensor, rel-RMSE <= %g%s%s%s)",
                 o->max_rel_rmse > 0.0 ? o->max_rel_rmse : ORK_NPU_WENC_DEFAULT_MAX_ERR, raw,
                 clip, rot);
}

uint32_t ork__npu_wenc_libork(const struct ork_npu_weights_opts *o)
{
    if (!o || (o->flags & ORK_NPU_WENC_RAW_CODES))
        return ORK_NPU_WEIGHTS_RAW;
    return o->encoding == ORK_NPU_WENC_W4A8    ? ORK_NPU_WEIGHTS_W4A8
           : o->encoding == ORK_NPU_WENC_DCOMP ? ORK_NPU_WEIGHTS_DCOMP
                                               : ORK_NPU_WEIGHTS_RAW;
}

int ork__npu_wenc_device_check(const struct ork_npu_weights_opts *o, struct ork_npu *npu)
{
    uint32_t enc = ork__npu_wenc_libork(o), forms = ork_npu_confirmed_forms(npu);
    if (enc == ORK_NPU_WEIGHTS_DCOMP && !(forms & ORK_NPU_FORM_DCOMP))
        return ork_errorf(ORK_EUNSUPPORTED, "--npu-weights dcomp: the %s device has not "
                          "confirmed ORK_NPU_FORM_DCOMP (the CNA weight decompressor, "
                          "bit-exact): confirm it on the board with `ork selftest "
                          "--confirm-forms` and pass the record it writes with --npu-caps FILE "
                          "(or use --npu-weights int8)", ork_npu_backend(npu));
    if (enc == ORK_NPU_WEIGHTS_W4A8 && !(forms & ORK_NPU_FORM_W4A8))
        return ork_errorf(ORK_EUNSUPPORTED, "--npu-weights w4a8: the %s device has not "
                          "confirmed ORK_NPU_FORM_W4A8 (int4 x int4 programs with split int8 "
                          "activations, bit-exact): confirm it on the board with `ork selftest "
                          "--confirm-forms` and pass the record it writes with --npu-caps FILE "
                          "(or use --npu-weights int8)", ork_npu_backend(npu));
    return 0;
}

/* Where a slot's rows come from: the stacked sources of ps dequantised one at a time into
 * row (one whole source row), and, with a rotation, columns [c0, c0 + k) rotated into rrow. */
struct row_src {
    const struct pack_src *ps;
    float *row;
    struct ork__npu_rot rot;            /* k = 0: none */
    float *rrow;                        /* (k) */
};

static int row_src_init(struct row_src *s, const struct ork_npu_weights_opts *o,
                        const struct pack_src *ps, float *row)
{
    memset(s, 0, sizeof(*s));
    s->ps = ps;
    s->row = row;
    if (!rotated(o))
        return 0;
    int ret = ork__npu_rot_init(&s->rot, ps->k);
    if (ret < 0)
        return ret;
    if (!(s->rrow = ork_malloc((size_t)ps->k * sizeof(float)))) {
        ork__npu_rot_fini(&s->rot);
        return ORK_ENOMEM;
    }
    return 0;
}

static void row_src_fini(struct row_src *s)
{
    if (s->rot.k)
        ork__npu_rot_fini(&s->rot);
    ork_free(s->rrow);
}

/* Row r of the slot (k values, rotated when the setting says so) in *x. */
static int source_row(const struct row_src *s, size_t r, const float **x)
{
    const struct pack_src *ps = s->ps;
    for (int i = 0; i < ps->ns; i++) {
        const struct ork_mat *w = ps->src[i];
        if (r < (size_t)w->n_rows) {
            const uint8_t *p = (const uint8_t *)w->data + r * w->row_bytes;
            int ret = ork_dequant_row(w->type, p, s->row, w->n_cols);
            *x = s->row + ps->c0;
            if (ret == 0 && s->rot.k) {
                ork__npu_rot_apply(&s->rot, *x, s->rrow);
                *x = s->rrow;
            }
            return ret;
        }
        r -= (size_t)w->n_rows;
    }
    return ork_errorf(ORK_ERANGE, "NPU weights: row past the tensor");
}

/* Add the squared error of codes q at scale s against row x (k values) and its norm. */
static void add_err(const float *x, uint32_t k, const int8_t *q, float s, double *err2,
                    double *ref2)
{
    double e = 0.0, n = 0.0;
    for (uint32_t j = 0; j < k; j++) {
        double d = (double)x[j] - (double)s * q[j];
        e += d * d;
        n += (double)x[j] * x[j];
    }
    *err2 += e;
    *ref2 += n;
}

/* Quantise row x (k values) onto grid L into q, *scale; add its squared error and norm. */
static int quant_row(const float *x, uint32_t k, uint32_t levels, uint32_t qflags, int8_t *q,
                     float *scale, double *err2, double *ref2)
{
    int ret = ork_dcomp_quantize(x, 1, k, levels, qflags, q, scale);
    if (ret < 0)
        return ret;
    add_err(x, k, q, *scale, err2, ref2);
    return 0;
}

static double rel_of(double err2, double ref2)
{
    return ref2 > 0.0 ? sqrt(err2 / ref2) : 0.0;
}

/* int8: every row per channel onto +-127 (ork_npu_quantize_weights_i8), its rel-RMSE
 * measured. */
static int quantize_int8(const struct row_src *s, const char *name, int8_t *q, float *scales,
                         struct ork_orkpack_coding *c)
{
    const struct pack_src *ps = s->ps;
    double err2 = 0.0, ref2 = 0.0;
    for (size_t r = 0; r < ps->n; r++) {
        const float *x = NULL;
        int ret = source_row(s, r, &x);
        if (ret == 0)
            ret = ork_npu_quantize_weights_i8(x, 1, ps->k, q + r * ps->k, scales + r);
        if (ret < 0)
            return ret;
        add_err(x, ps->k, q + r * ps->k, scales[r], &err2, &ref2);
    }
    c->encoding = ORK_NPU_WEIGHTS_RAW;
    c->grid = ORK__NPU_INT8_GRID;
    c->rel_rmse = (float)rel_of(err2, ref2);
    if (ork_debug(ORK_DBG_MODEL))
        ORK_LOGI("NPU weights: %s (%ux%u)%s: rel-RMSE L127 %.4f", name, ps->n, ps->k,
                 s->rot.k ? " rotated" : "", c->rel_rmse);
    return 0;
}

/* dcomp: every grid measured in one pass over the rows (the codes of the last, L = 127, left
 * in q), the pick, and the rows quantised again on it unless it is the last. */
static int quantize_grid(const struct ork_npu_weights_opts *o, const struct row_src *s,
                         const char *name, int8_t *q, float *scales,
                         struct ork_orkpack_coding *c)
{
    const struct pack_src *ps = s->ps;
    uint32_t qflags = o->flags & ORK_NPU_WENC_CLIP ? ORK_DCOMP_QUANT_CLIP : 0;
    uint32_t levels = o->levels;
    uint32_t g0 = 0, g1 = ORK_DCOMP_N_GRIDS;
    if (levels) {
        g0 = (uint32_t)grid_index(levels);
        g1 = g0 + 1;
    }
    double err2[ORK_DCOMP_N_GRIDS] = { 0 }, ref2[ORK_DCOMP_N_GRIDS] = { 0 };
    const size_t k = ps->k;
    int ret;
    for (size_t r = 0; r < ps->n; r++) {
        const float *x = NULL;
        if ((ret = source_row(s, r, &x)) < 0)
            return ret;
        for (uint32_t g = g0; g < g1; g++)
            if ((ret = quant_row(x, ps->k, ork_dcomp_grids[g], qflags, q + r * k, scales + r,
                                 &err2[g], &ref2[g])) < 0)
                return ork_errorf(ret, "row %zu: %s", r, ork_error_message());
    }
    double bound = o->max_rel_rmse > 0.0 ? o->max_rel_rmse : ORK_NPU_WENC_DEFAULT_MAX_ERR;
    uint32_t pick = g1 - 1;
    if (!levels)
        for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++)
            if (rel_of(err2[g], ref2[g]) <= bound) {
                pick = g;
                break;
            }
    if (ork_debug(ORK_DBG_MODEL)) {
        char line[256];
        int at = 0;
        for (uint32_t g = g0; g < g1 && at < (int)sizeof line; g++)
            at += snprintf(line + at, sizeof line - (size_t)at, " L%u %.4f", ork_dcomp_grids[g],
                           rel_of(err2[g], ref2[g]));
        ORK_LOGI("NPU weights: %s (%ux%u)%s: rel-RMSE%s -> L%u", name, ps->n, ps->k,
                 s->rot.k ? " rotated" : "", line, ork_dcomp_grids[pick]);
    }
    if (pick != g1 - 1)
        for (size_t r = 0; r < ps->n; r++) {
            const float *x = NULL;
            double e = 0.0, n = 0.0;
            if ((ret = source_row(s, r, &x)) < 0 ||
                (ret = quant_row(x, ps->k, ork_dcomp_grids[pick], qflags, q + r * k,
                                 scales + r, &e, &n)) < 0)
                return ret;
        }
    c->encoding = ork__npu_wenc_libork(o);
    c->grid = ork_dcomp_grids[pick];
    c->rel_rmse = (float)rel_of(err2[pick], ref2[pick]);
    return 0;
}

/* w4a8: every row onto int4 [-8, 7] (w4a8_codes.c), its rel-RMSE measured. */
static int quantize_w4a8(const struct ork_npu_weights_opts *o, const struct row_src *s,
                         const char *name, int8_t *q, float *scales,
                         struct ork_orkpack_coding *c)
{
    const struct pack_src *ps = s->ps;
    bool clip = o->flags & ORK_NPU_WENC_CLIP;
    double err2 = 0.0, ref2 = 0.0;
    for (size_t r = 0; r < ps->n; r++) {
        const float *x = NULL;
        int ret = source_row(s, r, &x);
        if (ret == 0)
            ret = ork__npu_w4a8_quantize_row(x, ps->k, clip, q + r * ps->k, scales + r);
        if (ret < 0)
            return ork_errorf(ret, "row %zu: %s", r, ork_error_message());
        add_err(x, ps->k, q + r * ps->k, scales[r], &err2, &ref2);
    }
    c->encoding = ork__npu_wenc_libork(o);
    c->grid = ORK__NPU_W4A8_GRID;
    c->rel_rmse = (float)rel_of(err2, ref2);
    if (ork_debug(ORK_DBG_MODEL))
        ORK_LOGI("NPU weights: %s (%ux%u)%s: rel-RMSE int4 %.4f", name, ps->n, ps->k,
                 s->rot.k ? " rotated" : "", c->rel_rmse);
    return 0;
}

int ork__npu_quantize_slot(const struct ork_npu_weights_opts *o, const struct pack_src *ps,
                           const char *name, float *row, int8_t *q, float *scales,
                           struct ork_orkpack_coding *c)
{
    struct row_src s;
    int ret = row_src_init(&s, o, ps, row);
    if (ret < 0)
        return ret;
    bool int8 = !o || o->encoding == ORK_NPU_WENC_INT8 || ork__npu_keep_int8(o, ps);
    ret = int8                                 ? quantize_int8(&s, name, q, scales, c)
          : o->encoding == ORK_NPU_WENC_W4A8   ? quantize_w4a8(o, &s, name, q, scales, c)
                                               : quantize_grid(o, &s, name, q, scales, c);
    if (ret == 0)   /* --npu-weights-calib: the codes again at these scales (calib.c) */
        ret = ork__npu_calib_requant(o, ps, name, row, q, scales, c);
    row_src_fini(&s);
    return ret;
}

/* ---- the report ------------------------------------------------------------------------ */

void ork__npu_wstats_add(struct npu_wstats *s, enum ork__npu_op op, uint32_t grid,
                         const struct ork_npu_weights *w, uint32_t n, uint32_t k)
{
    struct ork_npu_weights_dcomp_info di;
    ork_npu_weights_get_dcomp_info(w, &di);
    s->weights += (uint64_t)n * k;
    s->n_scales += n;
    /* DCOMP: the streams and raw blocks; else the device bytes held (W4A8: the int4 slices
     * and libork's table of them) */
    s->stored_bytes += di.compressed ? di.stored_bytes : ork_npu_weights_bytes(w);
    s->raw_bytes += di.raw_bytes;
    s->n_tensors++;
    s->n_compressed += di.compressed;
    if (grid == ORK__NPU_INT8_GRID && (unsigned)op < ORK__NPU_N_OPS)
        s->int8_count[op]++;
    int g = grid_index(grid);
    if (g >= 0 && (unsigned)op < ORK__NPU_N_OPS)
        s->grid_count[op][g]++;
}

void ork__npu_wstats_log(const struct npu_wstats *s, const struct ork_npu_weights_opts *o,
                         bool show)
{
    if (!show || !s->n_tensors || !o || (o->encoding == ORK_NPU_WENC_INT8 && !rotated(o)))
        return;                 /* int8: 8 bits a weight plus padding, as before */
    char name[128], grids[512];
    ork__npu_wenc_name(o, name, sizeof name);
    int at = 0;
    for (int op = 0; op < ORK__NPU_N_OPS; op++) {
        bool any = false;
        for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++) {
            if (!s->grid_count[op][g] || at >= (int)sizeof grids)
                continue;
            at += snprintf(grids + at, sizeof grids - (size_t)at, "%s%s L%u x%u",
                           any ? "," : at ? "; " : "", any ? "" : class_names[op],
                           ork_dcomp_grids[g], s->grid_count[op][g]);
            any = true;
        }
    }
    double bpw = s->weights ? 8.0 * (double)s->stored_bytes / (double)s->weights : 0.0;
    double sbpw = s->weights ? 32.0 * (double)s->n_scales / (double)s->weights : 0.0;
    if (o->encoding == ORK_NPU_WENC_DCOMP)
        ork__npu_status(show, "NPU weights %s: %.3f bits per weight stored (%.1f of %.1f MiB "
                        "raw, %u of %u tensors compressed; +%.3f for the fp32 scales); grids: "
                        "%s", name, bpw, (double)s->stored_bytes / (1 << 20),
                        (double)s->raw_bytes / (1 << 20), s->n_compressed, s->n_tensors, sbpw,
                        at ? grids : "-");
    else if (o->encoding == ORK_NPU_WENC_W4A8) {
        char kept[256] = "";    /* the tensors --npu-weights-int8 kept, per class */
        int k = 0;
        for (int op = 0; op < ORK__NPU_N_OPS && k < (int)sizeof kept; op++)
            if (s->int8_count[op])
                k += snprintf(kept + k, sizeof kept - (size_t)k, "%s%s x%u", k ? ", " : "",
                              class_names[op], s->int8_count[op]);
        ork__npu_status(show, "NPU weights %s: %.3f bits per weight stored (%.1f MiB, %u "
                        "tensors; +%.3f for the fp32 scales); codes: int4 [-8, 7] per output "
                        "channel%s%s", name, bpw, (double)s->stored_bytes / (1 << 20),
                        s->n_tensors, sbpw, k ? "; int8 [-127, 127] kept for " : "", kept);
    } else
        ork__npu_status(show, "NPU weights %s: %.3f bits per weight stored (%.1f MiB, %u "
                        "tensors; +%.3f for the fp32 scales); codes: int8 [-127, 127] per "
                        "output channel", name, bpw, (double)s->stored_bytes / (1 << 20),
                        s->n_tensors, sbpw);
}

void ork__npu_wstats_exec(const struct ork__npu_exec *ex, bool show)
{
    struct npu_wstats s = { 0 };
    uint32_t nt = (uint32_t)ex->n_layers * ORK__OPS_PER_LAYER + 1;
    for (uint32_t t = 0; t < nt; t++) {
        enum ork__npu_op op = t + 1 == nt ? ORK__NPU_LM_HEAD
                                          : (enum ork__npu_op)(t % ORK__OPS_PER_LAYER);
        for (int i = 0; i < 3; i++) {
            const struct npu_mat *mt = &ex->ops[t].mat[i];
            if (mt->w)
                ork__npu_wstats_add(&s, op, mt->grid, mt->w, mt->n, mt->k);
        }
    }
    ork__npu_wstats_log(&s, &ex->wopts, show);
}
