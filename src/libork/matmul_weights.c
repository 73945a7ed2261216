/* matmul_weights.c -- resident weights: choose the K- and N-slicing once (plan.c), pack every
 * K-slice of W into the tiled layout (pack.c, spec §4.3/§4.4) in one device buffer, keep the
 * per-column scales. DCOMP weights (encoding = ORK_NPU_WEIGHTS_DCOMP) hold instead one
 * decompressor stream per K-slice x N-partition block (dcomp_weights.c,
 * npu-weight-decompression.md §1.6), their export a self-describing blob (dcomp_blob.c). W4A8
 * weights (ORK_NPU_WEIGHTS_W4A8) hold int4 codes in the layout of spec §4.6, K-sliced by the
 * int16 accumulator bound, with per-column sums for the correction (w4a8_weights.c); their
 * export is a blob too (w4a8_blob.c). Plans
 * (matmul.c) borrow these and take their N-split and each task's weight operand from here;
 * nothing here submits work. */
#include "dcomp_blob.h"
#include "ork_priv.h"
#include "pack.h"
#include "w4a8.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

/* Largest plan M accepted (memory sanity: A and C buffers scale with it). */
#define MAX_M (1u << 20)

/* The encoding fields of a descriptor (npu.h): DCOMP is int8 only, needs the decompressor
 * confirmed on this device (ORK_NPU_FORM_DCOMP) and a grid bound in 7..127. */
static int check_encoding(const struct ork_npu *npu, const struct ork_npu_weights_desc *wd)
{
    if (wd->encoding == ORK_NPU_WEIGHTS_RAW)
        return 0;
    if (wd->encoding == ORK_NPU_WEIGHTS_W4A8) {
        if (wd->dtype != ORK_NPU_I8)
            return ork_errorf(ORK_EINVAL, "npu weights: W4A8 weights are int4 codes given as "
                              "int8 (dtype ORK_NPU_I8), not fp16");
        if (!(npu->confirmed_forms & ORK_NPU_FORM_W4A8))
            return ork_errorf(ORK_EUNSUPPORTED, "npu weights: W4A8 weights need the 'w4a8' "
                              "capability (int4 x int4 -> int16 programs confirmed bit-exact on "
                              "this device, npu-weight-decompression.md §2); confirm it with "
                              "`ork selftest --confirm-forms FILE` and load FILE with --npu-caps");
        return 0;
    }
    if (wd->encoding != ORK_NPU_WEIGHTS_DCOMP)
        return ork_errorf(ORK_EINVAL, "npu weights: unknown encoding %u (0 raw, 1 dcomp, 2 w4a8)",
                          wd->encoding);
    if (wd->dtype != ORK_NPU_I8)
        return ork_errorf(ORK_EINVAL, "npu weights: DCOMP weights are int8 only (the "
                          "decompressor is shown for int8 weights, npu-weight-decompression.md "
                          "§1.3)");
    if (!(npu->confirmed_forms & ORK_NPU_FORM_DCOMP))
        return ork_errorf(ORK_EUNSUPPORTED, "npu weights: DCOMP weights need the 'dcomp' "
                          "capability (the CNA weight decompressor confirmed bit-exact on this "
                          "device); confirm it with `ork selftest --confirm-forms FILE` and load "
                          "FILE with --npu-caps");
    if (wd->grid_max_abs && (wd->grid_max_abs < ORK_DCOMP_GRID_MIN ||
                             wd->grid_max_abs > ORK_DCOMP_GRID_MAX))
        return ork_errorf(ORK_EINVAL, "npu weights: grid_max_abs %u outside %u..%u",
                          wd->grid_max_abs, ORK_DCOMP_GRID_MIN, ORK_DCOMP_GRID_MAX);
    return 0;
}

/* Validate the descriptor, plan the slicing and allocate the device buffer; the caller fills
 * it. need_w: the descriptor must carry W (plain create). */
static int weights_setup(struct ork_npu *npu, const struct ork_npu_weights_desc *d, bool need_w,
                         struct ork_npu_weights_desc *wd, struct ork_npu_weights **out)
{
    memset(wd, 0, sizeof *wd);
    if (!out)
        return ork_errorf(ORK_EINVAL, "npu weights: NULL output");
    *out = NULL;
    if (!npu || !d || !d->struct_size)
        return ork_errorf(ORK_EINVAL, "npu weights: NULL device or descriptor");
    memcpy(wd, d, d->struct_size < sizeof *wd ? d->struct_size : sizeof *wd);
    if (wd->dtype != ORK_NPU_I8 && wd->dtype != ORK_NPU_F16)
        return ork_errorf(ORK_EINVAL, "npu weights: unknown dtype %d", (int)wd->dtype);
    if ((need_w && !wd->w) || wd->k < 1 || wd->n < 1)
        return ork_errorf(ORK_EINVAL, "npu weights: need W and k, n >= 1 (k=%u n=%u)", wd->k,
                          wd->n);
    if (wd->scales && wd->dtype != ORK_NPU_I8)
        return ork_errorf(ORK_EINVAL, "npu weights: scales are for int8 weights only");
    uint32_t max_m = wd->max_m ? wd->max_m : 1;
    if (max_m > MAX_M)
        return ork_errorf(ORK_ERANGE, "npu weights: max_m %u above %u", max_m, MAX_M);
    int r = check_encoding(npu, wd);
    if (r < 0)
        return r;

    struct ork_npu_weights *w = ork_calloc(1, sizeof *w);
    if (!w)
        return ork_errorf(ORK_ENOMEM, "npu weights: out of memory");
    w->npu = npu;
    w->dtype = wd->dtype;
    w->k = wd->k;
    w->n = wd->n;
    w->encoding = wd->encoding;
    const bool w4 = ork__weights_w4a8(w);
    /* W4A8: the K-slicing comes from the codes (or the blob) and sizes the buffer later */
    int ret = w4 ? 0 : ork__plan_kslices(wd->dtype, wd->k, max_m, &w->kplan);
    if (ret < 0)
        goto err_free;
    w->kplan.max_m = max_m;
    ret = w4 ? ork__plan_nslices_i4(wd->n, &w->nplan) : ork__plan_nslices(wd->dtype, wd->n, &w->nplan);
    if (ret < 0)
        goto err_free;
    if (wd->scales) {
        w->scales = ork_malloc((size_t)wd->n * sizeof *w->scales);
        if (!w->scales) {
            ret = ork_errorf(ORK_ENOMEM, "npu weights: scales for %u columns", wd->n);
            goto err_nplan;
        }
        memcpy(w->scales, wd->scales, (size_t)wd->n * sizeof *w->scales);
    }

    const uint32_t esz = wd->dtype == ORK_NPU_I8 ? 1 : 2;
    const uint32_t np = w->nplan.n_padded;
    uint64_t total = 0;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        w->slice_off[j] = total;
        total += (uint64_t)w->kplan.s[j].pad * np * esz;    /* a slice: K_j x Np (spec §4.5) */
    }
    w->grid_max_abs = wd->grid_max_abs ? wd->grid_max_abs : ORK_DCOMP_GRID_MAX;
    if (wd->encoding == ORK_NPU_WEIGHTS_RAW)   /* DCOMP: sized by the streams (dcomp_alloc) */
        ret = ork__npu_bo_create(npu, total, ORK_KBO_CACHEABLE, &w->bo, "npu weights");
    if (ret < 0)
        goto err_scales;
    *out = w;
    return 0;
err_scales:
    ork_free(w->scales);
err_nplan:
    ork__plan_nslices_fini(&w->nplan);
err_free:
    ork_free(w);
    return ret;
}

/* Hand the filled buffer to the device, or undo weights_setup. */
static int weights_finish(struct ork_npu_weights *w, struct ork_npu_weights **out)
{
    int ret = ork__npu_bo_sync(w->npu, &w->bo, 0, w->bo.size, ORK_KBO_SYNC_TO_DEVICE);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    *out = w;
    return 0;
}

/* ---- W4A8 weights ------------------------------------------------------------------------- */

/* The buffer of the int4 slices (w->kplan set), filled from `data` (NULL: packed from W) and
 * checked, with the column sums. */
static int w4a8_fill(struct ork_npu_weights *w, const int8_t *codes, const uint8_t *data,
                     struct ork_npu_weights **out)
{
    const uint32_t np = w->nplan.n_padded;
    const uint64_t total = ork__w4a8_layout(&w->kplan, np, w->slice_off);
    w->colsum = ork_malloc((size_t)w->n * sizeof *w->colsum);
    int ret = w->colsum ? 0 : ork_errorf(ORK_ENOMEM, "npu weights: W4A8 sums of %u columns", w->n);
    if (ret == 0)
        ret = ork__npu_bo_create(w->npu, total, ORK_KBO_CACHEABLE, &w->bo, "npu weights (w4a8)");
    if (ret == 0 && data) {
        memcpy(w->bo.map, data, (size_t)total);
    } else if (ret == 0) {
        for (uint32_t j = 0; j < w->kplan.n_slices; j++)
            ork__w4a8_pack_slice((uint8_t *)w->bo.map + w->slice_off[j], codes, w->k, w->n,
                                 &w->kplan.s[j], np);
    }
    /* the bytes as the NPU gets them: padding zero, the bound kept, and the sums from them */
    if (ret == 0)
        ret = ork__w4a8_check_packed(w->bo.map, &w->kplan, w->n, np, w->slice_off, w->colsum);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    return weights_finish(w, out);
}

static int w4a8_create(struct ork_npu_weights *w, const struct ork_npu_weights_desc *wd,
                       struct ork_npu_weights **out)
{
    int ret = ork__w4a8_check_codes(wd->w, wd->n, wd->k);
    if (ret == 0)
        ret = ork__w4a8_kslices(wd->w, wd->n, wd->k, w->kplan.max_m, &w->kplan);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    return w4a8_fill(w, wd->w, NULL, out);
}

static int w4a8_create_packed(struct ork_npu_weights *w, const void *blob, uint64_t bytes,
                              struct ork_npu_weights **out)
{
    const uint8_t *data;
    int ret = ork__w4a8_blob_parse(blob, bytes, w->k, w->n, w->kplan.max_m, &w->kplan, &data);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    return w4a8_fill(w, NULL, data, out);
}

/* ---- DCOMP weights ------------------------------------------------------------------------ */

/* The cores DCOMP streams are cut for: what a decode (M = 1) plan on these weights takes under
 * the device's core budget (budget.c), so such plans run one block per core (spec §9). */
static uint32_t dcomp_cores(const struct ork_npu_weights *w)
{
    uint32_t want = ork_npu_budget_pick(ORK_NPU_I8, 1, w->k, w->n, ork_npu_core_budget(w->npu));
    return ork__plan_split_cores(ORK_NPU_I8, w->n, want);
}

/* Every code inside the grid [-L, L] (npu.h grid_max_abs): ORK_EINVAL naming the first outside. */
static int dcomp_check_grid(const int8_t *q, uint32_t n, uint32_t k, uint32_t L)
{
    for (uint32_t r = 0; r < n; r++)
        for (uint32_t c = 0; c < k; c++) {
            int v = q[(size_t)r * k + c];
            if (v > (int)L || v < -(int)L)
                return ork_errorf(ORK_EINVAL, "npu weights: code %d at row %u column %u is "
                                  "outside the grid [-%u, %u] (grid_max_abs)", v, r, c, L, L);
        }
    return 0;
}

/* The device buffer of the blocks: `bytes` of them from `data` (64-byte aligned inside bo). */
static int dcomp_fill(struct ork_npu_weights *w, const uint8_t *data, uint64_t bytes,
                      struct ork_npu_weights **out)
{
    int ret = ork__npu_bo_create(w->npu, bytes ? bytes : ORK_DCOMP_ALIGN, ORK_KBO_CACHEABLE, &w->bo,
                                 "npu weights (dcomp)");
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    if (w->bo.iova % ORK_DCOMP_ALIGN) {
        ork_npu_weights_destroy(w);
        return ork_errorf(ORK_EFAULT, "npu weights: buffer at 0x%llx is not 64-byte aligned (DCOMP "
                          "streams need it, spec §1.4)", (unsigned long long)w->bo.iova);
    }
    memcpy(w->bo.map, data, (size_t)bytes);
    return weights_finish(w, out);
}

static int dcomp_create(struct ork_npu_weights *w, const struct ork_npu_weights_desc *wd,
                        struct ork_npu_weights **out)
{
    int ret = dcomp_check_grid(wd->w, wd->n, wd->k, w->grid_max_abs);
    struct ork_dcomp_weights_desc dd = { .struct_size = sizeof dd, .k = wd->k, .n = wd->n,
                                         .w = wd->w, .max_m = w->kplan.max_m,
                                         .cores = dcomp_cores(w) };
    if (ret == 0)
        ret = ork_dcomp_weights_encode(&dd, &w->dw);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    uint8_t *data = w->dw.data;
    w->dw.data = NULL;
    ret = dcomp_fill(w, data, w->dw.bytes, out);
    ork_free(data);
    return ret;
}

static int dcomp_create_packed(struct ork_npu_weights *w, const struct ork_npu_weights_desc *wd,
                               const void *blob, uint64_t bytes, struct ork_npu_weights **out)
{
    const uint8_t *data;
    uint32_t grid;
    int ret = ork__dcomp_blob_parse(blob, bytes, wd->k, wd->n, w->kplan.max_m, &w->dw, &data,
                                    &grid);
    if (ret == 0 && wd->grid_max_abs && grid != w->grid_max_abs)
        ret = ork_errorf(ORK_EFORMAT, "npu weights: the blob's grid bound is %u, the descriptor "
                         "says %u", grid, w->grid_max_abs);
    if (ret < 0) {
        ork_npu_weights_destroy(w);
        return ret;
    }
    w->grid_max_abs = grid;
    return dcomp_fill(w, data, w->dw.bytes, out);
}

int ork__weights_nsplit(const struct ork_npu_weights *w, uint32_t want, uint32_t *n_cores,
                        struct ork_slice **ns, uint32_t *n_ns, uint32_t *core_ns0)
{
    const bool w4 = ork__weights_w4a8(w);
    uint32_t nc = w4 ? ork__plan_split_cores_i4(w->n, want)
                     : ork__plan_split_cores(w->dtype, w->n, want);
    const bool dc = w->encoding == ORK_NPU_WEIGHTS_DCOMP;
    uint32_t total = dc ? w->dw.n_nslices
                        : w4 ? ork__plan_nsplit_i4(w->n, nc, NULL, NULL)
                             : ork__plan_nsplit(w->dtype, w->n, nc, NULL, NULL);
    if (dc && nc > total)
        nc = total;
    *ns = ork_calloc(total, sizeof **ns);
    if (!*ns)
        return ork_errorf(ORK_ENOMEM, "npu matmul: %u N-slices", total);
    *n_cores = nc;
    *n_ns = total;
    if (w4) {
        ork__plan_nsplit_i4(w->n, nc, *ns, core_ns0);
        return 0;
    }
    if (!dc) {
        ork__plan_nsplit(w->dtype, w->n, nc, *ns, core_ns0);
        return 0;
    }
    for (uint32_t i = 0; i < total; i++) {     /* K-slice 0's row: every row has the same N */
        const struct ork_dcomp_part *pt = &w->dw.parts[i];
        (*ns)[i] = (struct ork_slice){ .off = pt->n0, .len = pt->nlen, .pad = pt->npad };
    }
    for (uint32_t c = 0; c <= nc; c++)          /* the streams' own cores, else even runs */
        core_ns0[c] = (uint32_t)((uint64_t)c * total / nc);
    if (nc == w->dw.n_cores)
        for (uint32_t i = total; i-- > 0;)
            core_ns0[w->dw.parts[i].core] = i;
    return 0;
}

void ork__weights_block(const struct ork_npu_weights *w, uint32_t kslice, uint32_t nslice,
                        const struct ork_slice *ns, struct ork_mm_task *task)
{
    const uint32_t esz = w->dtype == ORK_NPU_I8 ? 1 : 2;
    if (ork__weights_w4a8(w)) {
        /* column block ns->off of the int4 slice: pad / 2 bytes a column (spec §4.6) */
        task->b = (uint32_t)(w->bo.iova + w->slice_off[kslice] +
                             (uint64_t)ns->off * w->kplan.s[kslice].pad / 2u);
        return;
    }
    if (w->encoding != ORK_NPU_WEIGHTS_DCOMP) {
        /* column block ns->off of K-slice kslice (spec §4.5) */
        task->b = (uint32_t)(w->bo.iova + w->slice_off[kslice] +
                             (uint64_t)ns->off * w->kplan.s[kslice].pad * esz);
        return;
    }
    const struct ork_dcomp_part *pt = &w->dw.parts[(size_t)kslice * w->dw.n_nslices + nslice];
    task->b = (uint32_t)(w->bo.iova + pt->off);
    if (!pt->info.raw) {                        /* raw blocks keep the raw form (§1.4) */
        task->dcomp = &pt->regs;
        task->b_bytes = pt->info.bytes;
    }
}

void ork__weights_pass_bytes(const struct ork_npu_weights *w, uint64_t *stored, uint64_t *dcomp)
{
    *stored = 0;
    *dcomp = 0;
    if (ork__weights_w4a8(w)) {             /* the int4 slices: K_j x N_padded / 2 each */
        uint64_t off[ORK_PLAN_MAX_KSLICES];
        *stored = ork__w4a8_layout(&w->kplan, w->nplan.n_padded, off);
        return;
    }
    if (w->encoding != ORK_NPU_WEIGHTS_DCOMP) {
        *stored = w->bo.size;
        return;
    }
    for (uint32_t p = 0; p < w->dw.n_parts; p++) {
        const struct ork_dcomp_part *pt = &w->dw.parts[p];
        *stored += pt->info.bytes;
        if (!pt->info.raw)
            *dcomp += (uint64_t)pt->kpad * pt->npad;
    }
}

int ork_npu_weights_create(struct ork_npu *npu, const struct ork_npu_weights_desc *d,
                           struct ork_npu_weights **out)
{
    struct ork_npu_weights_desc wd;
    struct ork_npu_weights *w;
    int ret = weights_setup(npu, d, true, &wd, &w);
    if (ret < 0)
        return ret;
    *out = NULL;
    if (w->encoding == ORK_NPU_WEIGHTS_DCOMP)
        return dcomp_create(w, &wd, out);
    if (ork__weights_w4a8(w))
        return w4a8_create(w, &wd, out);
    const uint32_t np = w->nplan.n_padded;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        const struct ork_slice *s = &w->kplan.s[j];
        uint8_t *dst = (uint8_t *)w->bo.map + w->slice_off[j];
        if (wd.dtype == ORK_NPU_I8)
            ork__pack_slice_i8(dst, wd.w, wd.k, wd.n, s->off, s->len, s->pad, np);
        else
            ork__pack_slice_f16(dst, wd.w, wd.k, wd.n, s->off, s->len, s->pad, np);
    }
    return weights_finish(w, out);
}

int ork_npu_weights_create_packed(struct ork_npu *npu, const struct ork_npu_weights_desc *d,
                                  const void *tiled, uint64_t bytes,
                                  struct ork_npu_weights **out)
{
    struct ork_npu_weights_desc wd;
    struct ork_npu_weights *w;
    if (!tiled)
        return ork_errorf(ORK_EINVAL, "npu weights: NULL tiled bytes");
    int ret = weights_setup(npu, d, false, &wd, &w);
    if (ret < 0)
        return ret;
    *out = NULL;
    if (w->encoding == ORK_NPU_WEIGHTS_DCOMP)
        return dcomp_create_packed(w, &wd, tiled, bytes, out);
    if (ork__weights_w4a8(w))
        return w4a8_create_packed(w, tiled, bytes, out);
    if (bytes != w->bo.size) {
        uint64_t want = w->bo.size;
        ork_npu_weights_destroy(w);
        return ork_errorf(ORK_EFORMAT, "npu weights: %llu tiled bytes given, the layout of "
                          "%ux%u (max_m %u) takes %llu", (unsigned long long)bytes, wd.n, wd.k,
                          wd.max_m ? wd.max_m : 1, (unsigned long long)want);
    }
    memcpy(w->bo.map, tiled, (size_t)bytes);
    return weights_finish(w, out);
}

int ork_npu_weights_export(const struct ork_npu_weights *w, void *buf, uint64_t cap)
{
    if (!w || (!buf && cap))
        return ork_errorf(ORK_EINVAL, "npu weights export: NULL argument");
    const uint64_t need = ork_npu_weights_bytes(w);
    if (cap < need)
        return ork_errorf(ORK_ENOSPC, "npu weights export: %llu bytes of room for %llu",
                          (unsigned long long)cap, (unsigned long long)need);
    if (ork__weights_w4a8(w)) {
        const uint64_t table = ork__w4a8_blob_table_bytes(w->kplan.n_slices);
        ork__w4a8_blob_write_table(&w->kplan, w->n, w->nplan.n_padded, need - table, buf);
        memcpy((uint8_t *)buf + table, w->bo.map, (size_t)(need - table));
        return 0;
    }
    if (w->encoding != ORK_NPU_WEIGHTS_DCOMP) {
        memcpy(buf, w->bo.map, (size_t)w->bo.size);
        return 0;
    }
    const uint64_t table = ork__dcomp_blob_table_bytes(w->dw.n_parts);
    ork__dcomp_blob_write_table(&w->dw, w->kplan.max_m, w->grid_max_abs, buf);
    memcpy((uint8_t *)buf + table, w->bo.map, (size_t)w->dw.bytes);
    return 0;
}

void ork_npu_weights_destroy(struct ork_npu_weights *w)
{
    if (!w)
        return;
    ork__npu_bo_destroy(w->npu, &w->bo);
    ork_dcomp_weights_fini(&w->dw);
    ork_free(w->colsum);
    ork_free(w->scales);
    ork__plan_nslices_fini(&w->nplan);
    ork_free(w);
}

const float *ork_npu_weights_scales(const struct ork_npu_weights *w)
{
    return w ? w->scales : NULL;
}

uint64_t ork_npu_weights_bytes(const struct ork_npu_weights *w)
{
    if (w && w->encoding == ORK_NPU_WEIGHTS_DCOMP)
        return ork__dcomp_blob_table_bytes(w->dw.n_parts) + w->dw.bytes;
    if (w && ork__weights_w4a8(w)) {      /* the blob: table + the int4 slices (not page-rounded) */
        uint64_t off[ORK_PLAN_MAX_KSLICES];
        return ork__w4a8_blob_table_bytes(w->kplan.n_slices) +
               ork__w4a8_layout(&w->kplan, w->nplan.n_padded, off);
    }
    return w ? w->bo.size : 0;
}

void ork_npu_weights_get_dcomp_info(const struct ork_npu_weights *w,
                                    struct ork_npu_weights_dcomp_info *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!w)
        return;
    uint64_t raw = 0;                           /* the raw layout's bytes (weights_setup) */
    for (uint32_t j = 0; j < w->kplan.n_slices; j++)
        raw += (uint64_t)w->kplan.s[j].pad * w->nplan.n_padded * (w->dtype == ORK_NPU_I8 ? 1 : 2);
    out->compressed = w->encoding == ORK_NPU_WEIGHTS_DCOMP;
    out->raw_bytes = raw;
    out->stored_bytes = out->compressed ? w->dw.bytes : w->bo.size;
    out->bpw = 8.0 * (double)out->stored_bytes / ((double)w->k * w->n);
    out->n_blocks = out->compressed ? w->dw.n_parts : 0;
    out->n_raw_blocks = out->compressed ? w->dw.n_raw : 0;
}
