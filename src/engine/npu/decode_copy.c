/* decode_copy.c -- decode copies (docs/npu-inference.md "Decode copies"): a matrix whose
 * prefill weights are K-sliced more finely than one row needs (M = 1 takes any K <= 8192 in one
 * program, spec §5.1; the weights are sliced for npu_max_m rows, whose programs must stay inside
 * the full-K envelope of §5.3) gets a second copy of the same int8 rows and scales, sliced for
 * M = 1, and plans of the row sizes that copy takes in one M-tile: M = 1 always; more rows where
 * the copy's K-slice has a schedule for them (K <= 4096 inside the envelope, or K in (4096,
 * 8192] under ORK_NPU_FORM_WIDE_K, npu-weight-decompression.md §4.3 [SRC]). Runs of those sizes
 * then take one program per N-slice instead of one per K-slice, and no partial sums.
 *
 * Made after every other plan (ork__npu_exec_create), so that the prefill weights and their
 * plans sit where an executor without copies puts them (tests/cli/test_program_hash.sh). The
 * rows are quantised again from the model (exactly the pack's int8 quantisation, unit/
 * test_orkpack, rotated as the shared weights are under ORK_NPU_WENC_ROTATE), so a copy's
 * results are the shared weights' bit for bit. */
#include "npu_priv.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/log.h>
#include <ork/npu.h>

#include <string.h>

/* Whether matrix mt of op o (fused step `st`) takes a copy: one NPU matrix of plain int8 codes
 * (the int8 setting's, or a tensor --npu-weights-int8 keeps int8; the quantisation
 * ork__npu_quantize_slot repeats) whose K-slicing has more slices than
 * M = 1 needs. */
static bool wants_copy(const struct ork__npu_exec *ex, const struct npu_step *st,
                       const struct npu_opmat *o, const struct npu_mat *mt)
{
    if (!o->on_npu || !st->fused || st->n_slots != 1 || o->k_split || o->n_mats != 1 || !mt->w ||
        (ex->wopts.encoding != ORK_NPU_WENC_INT8 && !mt->kept_int8))
        return false;
    struct ork_npu_weights_dcomp_info di;
    ork_npu_weights_get_dcomp_info(mt->w, &di);
    if (di.compressed)
        return false;
    uint32_t one = ork_npu_weights_kslices(ORK_NPU_I8, mt->k, 1);
    return one && one < mt->info[0].n_kslices;
}

static void free_copy(struct ork__npu_exec *ex, struct npu_mat *mt)
{
    for (int i = NPU_MAX_PROGS - 1; i >= 0; i--) {
        ork_npu_matmul_destroy(mt->dprog[i]);
        mt->dprog[i] = NULL;
    }
    if (mt->dw)
        ex->dev_bytes[mt->dev] -= ork_npu_weights_bytes(mt->dw);
    ork_npu_weights_destroy(mt->dw);
    mt->dw = NULL;
    mt->n_dprog = 0;
}

/* The copy of mt from int8 rows q and scales sc: the weights, the M = 1 plan, then each larger
 * size libork plans in one M-tile. ORK_ENOMEM: the domain is full (the copy is left out). */
static int make_copy(struct ork__npu_exec *ex, struct npu_mat *mt, const int8_t *q,
                     const float *sc)
{
    struct ork_npu_weights_desc wd = { .struct_size = sizeof wd, .dtype = ORK_NPU_I8, .k = mt->k,
                                       .n = mt->n, .w = q, .scales = sc, .max_m = 1 };
    int ret = ork_npu_weights_create(ex->dev[mt->dev], &wd, &mt->dw);
    if (ret < 0)
        return ret;
    uint64_t bytes = ork_npu_weights_bytes(mt->dw);
    ex->dev_bytes[mt->dev] += bytes;
    for (uint32_t i = 0; i < ex->n_prog; i++) {
        struct ork_npu_matmul_desc md = { .struct_size = sizeof md, .m = ex->prog_rows[i],
                                          .cores = mt->cores, .flags = ORK_NPU_MATMUL_ONE_JOB };
        ret = ork_npu_matmul_create(mt->dw, &md, &mt->dprog[i]);
        if (ret < 0) {
            mt->dprog[i] = NULL;
            if (i == 0)
                break;
            ret = 0;        /* no schedule for these rows at this K: the shared plans serve */
            break;
        }
        ork_npu_matmul_get_info(mt->dprog[i], &mt->dinfo[i]);
        if (mt->dinfo[i].m_tile < ex->prog_rows[i]) {
            /* more than one M-tile: each would re-stream the copy; the shared plan is better */
            ork_npu_matmul_destroy(mt->dprog[i]);
            mt->dprog[i] = NULL;
            break;
        }
        bytes += ork__npu_plan_bytes(&mt->dinfo[i], NULL);
        mt->n_dprog = i + 1;
    }
    if (ret < 0) {
        free_copy(ex, mt);
        return ret;
    }
    ex->st.n_decode_copies++;
    ex->st.decode_copy_bytes += bytes;
    return 0;
}

/* Wide-K matrices (K in (4096, 8192]) whose copy took only M = 1: the capability gate. */
static void log_gate(const struct ork__npu_exec *ex, uint32_t n_wide, uint32_t k)
{
    if (!n_wide || (ork_npu_confirmed_forms(ex->dev[0]) & ORK_NPU_FORM_WIDE_K))
        return;
    ORK_LOGN("NPU: %u matri%s of K = %u keep%s K-sliced plans for batches of 2 or more rows: "
             "the M-tile rules for K above 4096 (npu-weight-decompression.md §4.3 [SRC]) are "
             "not confirmed on this device (`ork selftest --confirm-forms`, --npu-caps)",
             n_wide, n_wide == 1 ? "x" : "ces", k, n_wide == 1 ? "s its" : " their");
}

int ork__npu_make_decode_copies(struct ork__npu_exec *ex, const struct ork_model *m)
{
    if (!ex->decode_single)
        return 0;
    int64_t t0 = ork__now_ns();
    size_t max_q, max_n, max_k, max_row;
    ork__npu_pack_max_dims(ex->plan, m, &max_q, &max_n, &max_k, &max_row);
    int8_t *q = ork_malloc(max_q);
    float *sc = ork_malloc(max_n * sizeof(float)), *row = ork_malloc(max_row * sizeof(float));
    int ret = q && sc && row ? 0 : ORK_ENOMEM;
    uint32_t spl = ork__npu_plan_slots_per_layer(ex->plan), n_left = 0, n_wide = 0, wide_k = 0;
    const uint32_t wide_min = 4096, wide_max = 8192;    /* npu-weight-decompression.md §4.3 */
    for (int32_t l = 0; l <= m->cfg.n_layers && ret == 0; l++) {
        bool head = l == m->cfg.n_layers;
        for (int op = head ? ORK__NPU_LM_HEAD : 0;
             op < (head ? ORK__NPU_N_OPS : ORK__OPS_PER_LAYER) && ret == 0; op++) {
            struct npu_opmat *o = npu_op_at(ex, (enum ork__npu_op)op, l);
            struct npu_mat *mt = &o->mat[0];
            if (!wants_copy(ex, &ex->plan->step[op], o, mt))
                continue;
            struct pack_src ps;
            char name[ORK_ORKPACK_NAME_MAX];
            uint32_t ts = (uint32_t)l * spl + ork__npu_plan_op_slot(ex->plan, (enum ork__npu_op)op);
            ork__npu_pack_source(ex->plan, m, ts, &ps, name, sizeof name);
            if (!ps.ns || ps.n != mt->n || ps.k != mt->k)
                continue;
            struct ork_orkpack_coding cd;
            if ((ret = ork__npu_quantize_slot(&ex->wopts, &ps, name, row, q, sc, &cd)) < 0)
                break;
            ret = make_copy(ex, mt, q, sc);
            if (ret == ORK_ENOMEM) {
                n_left++;
                ret = 0;
                continue;
            }
            if (ret == 0 && mt->n_dprog == 1 && mt->k > wide_min && mt->k <= wide_max) {
                n_wide++;
                wide_k = mt->k;
            }
        }
    }
    ork_free(q);
    ork_free(sc);
    ork_free(row);
    if (n_left)
        ORK_LOGW("NPU: %u decode copies did not fit their IOMMU domain; those matrices decode "
                 "on their K-sliced plans", n_left);
    if (ret == 0)
        log_gate(ex, n_wide, wide_k);
    ex->st.decode_copy_load_ms = (double)(ork__now_ns() - t0) / 1e6;
    return ret;
}
