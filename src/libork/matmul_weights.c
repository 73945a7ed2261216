/* matmul_weights.c -- resident weights: choose the K- and N-slicing once (plan.c), pack every
 * K-slice of W into the tiled layout (pack.c, spec §4.3/§4.4) in one device buffer, keep the
 * per-column scales. Plans (matmul.c) borrow these; nothing here submits work. */
#include "ork_priv.h"
#include "pack.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <string.h>

/* Largest plan M accepted (memory sanity: A and C buffers scale with it). */
#define MAX_M (1u << 20)

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

    struct ork_npu_weights *w = ork_calloc(1, sizeof *w);
    if (!w)
        return ork_errorf(ORK_ENOMEM, "npu weights: out of memory");
    w->npu = npu;
    w->dtype = wd->dtype;
    w->k = wd->k;
    w->n = wd->n;
    int ret = ork__plan_kslices(wd->dtype, wd->k, max_m, &w->kplan);
    if (ret < 0)
        goto err_free;
    ret = ork__plan_nslices(wd->dtype, wd->n, &w->nplan);
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

int ork_npu_weights_create(struct ork_npu *npu, const struct ork_npu_weights_desc *d,
                           struct ork_npu_weights **out)
{
    struct ork_npu_weights_desc wd;
    struct ork_npu_weights *w;
    int ret = weights_setup(npu, d, true, &wd, &w);
    if (ret < 0)
        return ret;
    *out = NULL;
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
    if (cap < w->bo.size)
        return ork_errorf(ORK_ENOSPC, "npu weights export: %llu bytes of room for %llu",
                          (unsigned long long)cap, (unsigned long long)w->bo.size);
    memcpy(buf, w->bo.map, (size_t)w->bo.size);
    return 0;
}

void ork_npu_weights_destroy(struct ork_npu_weights *w)
{
    if (!w)
        return;
    ork__npu_bo_destroy(w->npu, &w->bo);
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
    out->raw_bytes = w->bo.size;
    out->stored_bytes = w->bo.size;
    out->bpw = 8.0 * (double)w->bo.size / ((double)w->k * w->n);
}
