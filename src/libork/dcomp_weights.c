/* dcomp_weights.c -- a whole W[n][k] as the task weight blocks of a matmul plan, each encoded
 * as its own decompressor stream (spec npu-weight-decompression.md §1.6: one stream per
 * K-wave x N-partition; each core's partition of a multi-core N-split gets its own). The
 * K-slicing is plan.c's for the weights' max_m; the N split is plan.c's ork__plan_nsplit, the
 * one a matmul plan of the same number of cores uses. Host-side only. */
#include "pack.h"
#include "plan.h"

#include <ork/alloc.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <string.h>

static uint64_t align64(uint64_t v)
{
    return (v + ORK_DCOMP_ALIGN - 1) / ORK_DCOMP_ALIGN * ORK_DCOMP_ALIGN;
}

/* The N-slices of a plan of nc cores (ork__plan_nsplit, the rule matmul.c's plans use, spec
 * §9) into parts[i].core/n0/nlen/npad. */
static int core_nslices(uint32_t n, uint32_t nc, struct ork_dcomp_part *parts, uint32_t count)
{
    struct ork_slice *ns = ork_calloc(count, sizeof *ns);
    uint32_t ns0[ORK_PLAN_MAX_CORES + 1];
    if (!ns)
        return ork_errorf(ORK_ENOMEM, "dcomp weights: %u N-slices", count);
    ork__plan_nsplit(ORK_NPU_I8, n, nc, ns, ns0);
    for (uint32_t c = 0; c < nc; c++)
        for (uint32_t i = ns0[c]; i < ns0[c + 1]; i++) {
            parts[i].core = c;
            parts[i].n0 = ns[i].off;
            parts[i].npad = ns[i].pad;
            parts[i].nlen = ns[i].len;
        }
    ork_free(ns);
    return 0;
}

/* Plan the parts of dw (shapes only). */
static int plan_parts(const struct ork_dcomp_weights_desc *d, struct ork_dcomp_weights *dw,
                      struct ork_kplan *kp)
{
    int ret = ork__plan_kslices(ORK_NPU_I8, d->k, d->max_m ? d->max_m : 1, kp);
    if (ret < 0)
        return ret;
    dw->k = d->k;
    dw->n = d->n;
    dw->n_kslices = kp->n_slices;
    dw->n_cores = ork__plan_split_cores(ORK_NPU_I8, d->n, d->cores);
    dw->n_nslices = ork__plan_nsplit(ORK_NPU_I8, d->n, dw->n_cores, NULL, NULL);
    dw->n_parts = dw->n_kslices * dw->n_nslices;
    dw->parts = ork_calloc(dw->n_parts, sizeof *dw->parts);
    if (!dw->parts)
        return ork_errorf(ORK_ENOMEM, "dcomp weights: %u blocks", dw->n_parts);
    for (uint32_t j = 0; j < kp->n_slices; j++) {
        struct ork_dcomp_part *row = dw->parts + (size_t)j * dw->n_nslices;
        if ((ret = core_nslices(d->n, dw->n_cores, row, dw->n_nslices)) < 0)
            return ret;
        for (uint32_t i = 0; i < dw->n_nslices; i++) {
            row[i].kslice = j;
            row[i].nslice = i;
            row[i].k0 = kp->s[j].off;
            row[i].klen = kp->s[j].len;
            row[i].kpad = kp->s[j].pad;
        }
    }
    return 0;
}

int ork_dcomp_weights_encode(const struct ork_dcomp_weights_desc *d, struct ork_dcomp_weights *out)
{
    if (!out)
        return ork_errorf(ORK_EINVAL, "dcomp weights: NULL output");
    memset(out, 0, sizeof *out);
    struct ork_dcomp_weights_desc dd;
    memset(&dd, 0, sizeof dd);
    if (!d || !d->struct_size)
        return ork_errorf(ORK_EINVAL, "dcomp weights: NULL descriptor");
    memcpy(&dd, d, d->struct_size < sizeof dd ? d->struct_size : sizeof dd);
    if (!dd.w || dd.k < 1 || dd.n < 1)
        return ork_errorf(ORK_EINVAL, "dcomp weights: need W and k, n >= 1 (k=%u n=%u)", dd.k,
                          dd.n);
    struct ork_kplan kp;
    int ret = plan_parts(&dd, out, &kp);
    if (ret < 0)
        goto err;
    const uint32_t np = (dd.n + ORK_PLAN_N_TILE_I8 - 1) / ORK_PLAN_N_TILE_I8 * ORK_PLAN_N_TILE_I8;
    uint64_t cap = 0, slice_max = 0;
    for (uint32_t p = 0; p < out->n_parts; p++) {
        const struct ork_dcomp_part *pt = &out->parts[p];
        cap += align64(ork_dcomp_block_bound(pt->kpad, pt->npad));
        if ((uint64_t)pt->kpad * np > slice_max)
            slice_max = (uint64_t)pt->kpad * np;
    }
    uint8_t *slice = ork_malloc(slice_max);
    out->data = ork_malloc(cap);
    if (!slice || !out->data) {
        ork_free(slice);
        ret = ork_errorf(ORK_ENOMEM, "dcomp weights: %llu bytes of streams",
                         (unsigned long long)cap);
        goto err;
    }
    uint64_t off = 0;
    for (uint32_t j = 0; j < kp.n_slices && ret == 0; j++) {
        /* pack the K-slice as the weights buffer holds it (§4.3); a core's N-slice is then a
         * contiguous run of it (ork__plan_nsplit) */
        ork__pack_slice_i8(slice, dd.w, dd.k, dd.n, kp.s[j].off, kp.s[j].len, kp.s[j].pad, np);
        for (uint32_t i = 0; i < out->n_nslices && ret == 0; i++) {
            struct ork_dcomp_part *pt = &out->parts[(size_t)j * out->n_nslices + i];
            const uint8_t *blk = slice + ork__pack_offset_i8(0, pt->n0, pt->kpad);
            pt->off = off;
            ret = ork_dcomp_block_encode(blk, pt->kpad, pt->npad, dd.flags, out->data + off,
                                         cap - off, &pt->regs, &pt->info);
            off += align64(pt->info.bytes);
            out->raw_bytes += (uint64_t)pt->kpad * pt->npad;
            out->n_raw += pt->info.raw;
        }
    }
    ork_free(slice);
    if (ret < 0)
        goto err;
    out->bytes = off;
    return 0;
err:
    ork_dcomp_weights_fini(out);
    return ret;
}

void ork_dcomp_weights_fini(struct ork_dcomp_weights *dw)
{
    if (!dw)
        return;
    ork_free(dw->parts);
    ork_free(dw->data);
    memset(dw, 0, sizeof *dw);
}

int ork_dcomp_weights_decode(const struct ork_dcomp_weights *dw, const struct ork_dcomp_check *chk,
                             int8_t *w)
{
    if (!dw || !w || !dw->parts)
        return ork_errorf(ORK_EINVAL, "dcomp weights decode: NULL weights or output");
    uint64_t most = 0;
    for (uint32_t p = 0; p < dw->n_parts; p++)
        if ((uint64_t)dw->parts[p].kpad * dw->parts[p].npad > most)
            most = (uint64_t)dw->parts[p].kpad * dw->parts[p].npad;
    uint8_t *blk = ork_malloc(most);
    if (!blk)
        return ork_errorf(ORK_ENOMEM, "dcomp weights decode: %llu-byte block",
                          (unsigned long long)most);
    int ret = 0;
    for (uint32_t p = 0; p < dw->n_parts && ret == 0; p++) {
        const struct ork_dcomp_part *pt = &dw->parts[p];
        struct ork_dcomp_check c = chk ? *chk : (struct ork_dcomp_check){ .addr = 0 };
        c.addr += pt->off;
        if (pt->off > dw->bytes) {
            ret = ork_errorf(ORK_EFORMAT, "dcomp weights: block %u at %llu past the %llu bytes",
                             p, (unsigned long long)pt->off, (unsigned long long)dw->bytes);
            break;
        }
        ret = ork_dcomp_block_decode(dw->data + pt->off, dw->bytes - pt->off, pt->kpad, pt->npad,
                                     &pt->regs, &c, blk);
        if (ret < 0) {
            ret = ork_errorf(ret, "dcomp weights: block %u (K-slice %u, core %u, columns %u..%u): "
                             "%s", p, pt->kslice, pt->core, pt->n0, pt->n0 + pt->npad,
                             ork_error_message());
            break;
        }
        for (uint32_t j = 0; j < pt->nlen; j++)
            for (uint32_t kk = 0; kk < pt->klen; kk++)
                w[(size_t)(pt->n0 + j) * dw->k + pt->k0 + kk] =
                    (int8_t)blk[ork__pack_offset_i8(kk, j, pt->kpad)];
    }
    ork_free(blk);
    return ret;
}

double ork_dcomp_weights_bpw(const struct ork_dcomp_weights *dw)
{
    if (!dw || !dw->k || !dw->n)
        return 0.0;
    return 8.0 * (double)dw->bytes / ((double)dw->k * dw->n);
}

uint64_t ork_dcomp_weights_core_bytes(const struct ork_dcomp_weights *dw, uint32_t core)
{
    uint64_t b = 0;
    for (uint32_t p = 0; dw && dw->parts && p < dw->n_parts; p++)
        if (dw->parts[p].core == core)
            b += dw->parts[p].info.bytes;
    return b;
}
