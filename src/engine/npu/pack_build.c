/* pack_build.c -- the .orkpack of a model: which tensors the executor wants (the pack slots of
 * npu_plan_pack(), plan.c), building it (each tensor quantised here, tiled by creating its
 * weights on an NPU or the simulator and exporting the tiled bytes), checking that a pack fits
 * the model, and the progress bar. The file format is orkpack.c; `ork pack` calls
 * ork_orkpack_check_for_model / ork_orkpack_build_for_model (ork-engine/orkpack.h). */
#include "npu_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Redrawn in place on a terminal when the percentage moves, else only the final line. */
void ork__npu_progress(bool show, const char *what, uint64_t done, uint64_t total, int *last)
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

void ork__npu_status(bool show, const char *fmt, ...)
{
    if (!show)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    ORK_LOGN("%s", line);
}

/* Build the pack of model m: each tensor quantised, tiled for the NPU by creating its weights
 * on npu with plans of max_m rows, and the tiled bytes exported into the pack (a tensor the NPU
 * cannot take is stored with 0 tiled bytes and runs on the CPU). */
static int build_pack(const struct ork_model *m, const char *path,
                      const struct ork_orkpack_source *src_id, bool show, struct ork_npu *npu,
                      uint32_t max_m, const struct ork_npu_weights_opts *wo)
{
    struct ork_orkpack_caps caps;
    if (wo) {
        int kret = ork__npu_keep_check_layers(wo, m->cfg.n_layers);
        if (kret < 0)
            return kret;
    }
    ork_orkpack_caps_default(&caps);
    caps.npu_max_m = max_m;
    ork__npu_wenc_caps(wo, &caps);
    struct npu_wstats wst = { 0 };
    const struct npu_plan *pl = ork__npu_plan_pack();
    uint32_t nt = ork__npu_pack_n_tensors(pl, m), ns = ork__npu_plan_n_slots(pl, m);
    uint64_t total = 0, done = 0, tcap = 0;
    int last = -1;
    size_t max_q, max_n, max_k, max_row;
    ork__npu_pack_max_dims(pl, m, &max_q, &max_n, &max_k, &max_row);
    for (uint32_t t = 0; t < ns; t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(pl, m, t, &ps, name, sizeof name);
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
        ork__npu_pack_source(pl, m, t, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        uint32_t n = ps.n, k = ps.k;
        struct ork_orkpack_coding cd;
        if ((ret = ork__npu_quantize_slot(wo, &ps, name, row, q, scales, &cd)) < 0) {
            char msg[384];
            snprintf(msg, sizeof msg, "%s", ork_error_message());
            ret = ork_errorf(ret, "tensor '%s' (%ux%u): %s", name, n, k, msg);
            goto fail;
        }
        struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8,
                                           .k = k, .n = n, .w = q, .scales = scales,
                                           .max_m = ork__npu_mat_rows(max_m, k),
                                           .encoding = cd.encoding,
                                           .grid_max_abs = cd.grid };
        struct ork_npu_weights *nw = NULL;
        uint64_t bytes = 0;
        if (ork_npu_weights_create(npu, &wd, &nw) == 0) {
            bytes = ork_npu_weights_bytes(nw);
            ork__npu_wstats_add(&wst, ps.op, cd.grid, nw, n, k);
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
        if ((ret = ork_orkpack_writer_add_coded(w, name, n, k, tiled, bytes, scales, &cd)) < 0)
            goto fail;
        done += (uint64_t)n * k;
        ork__npu_progress(show, "packing NPU weights", done, total, &last);
    }
    ret = ork_orkpack_writer_commit(w);
    ork__npu_wstats_log(&wst, wo, show && ret == 0);
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
    const struct npu_plan *pl = ork__npu_plan_pack();
    for (uint32_t t = 0; t < ork__npu_plan_n_slots(pl, m); t++) {
        struct pack_src ps;
        struct ork_orkpack_tensor pt;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(pl, m, t, &ps, name, sizeof name);
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

int ork__npu_pack_ensure(const struct ork_model *m, const char *path, const char *pack_path,
                         uint32_t flags, struct ork_npu *npu, uint32_t max_m,
                         const struct ork_npu_weights_opts *wo,
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
    if (wo) {
        int kret = ork__npu_keep_check_layers(wo, m->cfg.n_layers);
        if (kret < 0)
            return kret;
    }
    ork_orkpack_caps_default(&caps);
    caps.npu_max_m = max_m;
    ork__npu_wenc_caps(wo, &caps);
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
        ORK_LOGW("%s; rebuilding it", ork_error_message());
    if (found)
        *found = why;
    ork__npu_status(show, "building %s", pp);
    if ((ret = build_pack(m, pp, &sid, show, npu, max_m, wo)) < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        return ork_errorf(ret, "cannot build the NPU pack '%s': %s", pp, msg);
    }
    return ork_orkpack_open(pp, &sid, &caps, out, &why);
}

int ork_orkpack_check_for_model(const char *model_path, const char *pack_path,
                                const struct ork_npu_weights_opts *wo)
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
    ork__npu_wenc_caps(wo, &caps);
    struct ork_orkpack *pk;
    if ((ret = ork_orkpack_open(pack_path, &sid, &caps, &pk, NULL)) < 0)
        return ret;
    /* the tensors the executor wants, in their shapes (the model is mapped, not read) */
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    mp.no_repack = true;
    mp.load = ORK_LOAD_MMAP;
    struct ork_model *m;
    if ((ret = ork_model_load(model_path, &mp, &m)) == 0) {
        ret = check_pack_tensors(m, pk, pack_path);
        ork_model_free(m);
    }
    ork_orkpack_close(pk);
    return ret;
}

int ork_orkpack_build_for_model(const char *model_path, const char *pack_path,
                                const struct ork_npu_weights_opts *wo, const char *capabilities,
                                bool force, bool quiet, enum ork_orkpack_problem *found)
{
    int ret;
    if (wo && (ret = ork__npu_wenc_check(wo)) < 0)
        return ret;
    /* The packer reads each matrix in the GGUF row layout: the CPU's 16-row interleaving
     * (model.c interleave(), only for a model read into memory) must not reach it, so the
     * model is mapped, never repacked. */
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    mp.no_repack = true;
    mp.load = ORK_LOAD_MMAP;
    struct ork_model *m;
    if ((ret = ork_model_load(model_path, &mp, &m)) < 0)
        return ret;
    /* the tiling comes from the NPU when there is one, else from the simulator (same layout) */
    struct ork_npu *npu = NULL;
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = "auto",
                              .capabilities = capabilities };
    if (ork_npu_open(&o, &npu) < 0) {
        o.device = "sim";
        if ((ret = ork_npu_open(&o, &npu)) < 0) {
            ork_model_free(m);
            return ret;
        }
    }
    struct ork_orkpack *pk = NULL;
    if ((ret = ork__npu_wenc_device_check(wo, npu)) < 0) {
        ork_npu_close(npu);
        ork_model_free(m);
        return ret;
    }
    uint32_t flags = (force ? ORK_NPU_EXEC_REBUILD_PACK : 0) | (quiet ? ORK_NPU_EXEC_QUIET : 0);
    ret = ork__npu_pack_ensure(m, model_path, pack_path, flags, npu, NPU_DEFAULT_MAX_M, wo, &pk,
                               found);
    ork_orkpack_close(pk);
    ork_npu_close(npu);
    ork_model_free(m);
    return ret;
}
