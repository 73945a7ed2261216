/* plan.c -- the layer plan: the one table of a layer's ops (which model matrices each takes,
 * its input and outputs, its pack tensor), the executor plans that say how each op runs
 * (fused: [Q|K|V] and [gate|up] stacked, multi-core; fused-split-o: the same with the O
 * projection split by heads and its first half overlapped with the rest of attention;
 * per-matmul: the baseline, one single-core submit per model matrix; per-matmul-mc: the same
 * with each matrix's columns split over 3 cores), and the pack slots derived from a plan
 * (which tensor of which op each slot of the .orkpack holds).
 *
 * Fused model tensors (phi3's attn_qkv, ffn_up holding gate|up) are split into row views at
 * bind time (model.c), so the table below sees wq/wk/wv and w_gate/w_up as for any model. A
 * MoE layer's gate_up and down ops have no matrices (ns 0: not packed, run on the CPU by the
 * forward pass's expert code).
 *
 * Adding an op: an ORK__LAYER_OPS entry (model/model_priv.h), a layer_ops row here, a step in
 * each plan, and its call in forward.c. Not here: building the pack (pack_build.c), placing ops
 * on devices (placement.c), running them (run.c). */
#include "npu_priv.h"

#include <ork/npu.h>

#include <stdio.h>
#include <string.h>

/* K multiple of weights tiled for prefill plans (max_m > 1; libork plan.c: int8 scheduled
 * slices are multiples of 512, spec §5.3): a K-split half whose K is not a multiple of it is
 * padded up to one. */
#define NPU_PREFILL_K_ALIGN 512u

uint32_t ork__npu_mat_rows(uint32_t max_m, uint32_t k)
{
    if (max_m <= NPU_BASE_MAX_M ||
        ork_npu_weights_kslices(ORK_NPU_I8, k, max_m) ==
            ork_npu_weights_kslices(ORK_NPU_I8, k, NPU_BASE_MAX_M))
        return max_m;
    return NPU_BASE_MAX_M;
}

/* One op of the layer. */
struct layer_op {
    const char *trace;                  /* name on the trace timeline */
    const char *tensor;                 /* pack tensor: blk.<l>.<tensor>, or <tensor> (head) */
    const char *in, *outs;              /* what it reads and writes (forward.c) */
    int n_mats;
    enum ork_layer_tensor mats[3];      /* model matrices, stacked by rows in output order */
};

static const struct layer_op layer_ops[ORK__NPU_N_OPS] = {
    [ORK__NPU_QKV] = { "npu qkv", "attn_qkv", "rmsnorm(x, attn_norm)", "q, k, v", 3,
                       { ORK_LT_WQ, ORK_LT_WK, ORK_LT_WV } },
    [ORK__NPU_O] = { "npu o", "attn_output", "attention output (head-major)", "o", 1,
                     { ORK_LT_WO } },
    [ORK__NPU_GATE_UP] = { "npu gate_up", "ffn_gate_up", "rmsnorm(h, ffn_norm)", "gate, up", 2,
                           { ORK_LT_W_GATE, ORK_LT_W_UP } },
    [ORK__NPU_DOWN] = { "npu down", "ffn_down", "act(gate) * up", "down", 1,
                        { ORK_LT_W_DOWN } },
    [ORK__NPU_LM_HEAD] = { "npu lm_head", "output", "rmsnorm(x, output_norm)", "logits", 1,
                           { ORK_LT_COUNT } },   /* the output matrix, not a layer weight */
};

#define STEP_FUSED { .n_slots = 1, .fused = true }
#define STEP_ONE { .n_slots = 1 }

/* The seed's 3-core decode split (ORK_DECODE_MC, anchors §3.6): three cores per matmul. */
#define NPU_MC_CORES 3u

enum { PLAN_FUSED, PLAN_PER_MATMUL, PLAN_PER_MATMUL_MC, PLAN_FUSED_SPLIT_O, PLAN_COUNT };

static const struct npu_plan plans[PLAN_COUNT] = {
    {
        .name = "fused",
        .summary = "fused [Q|K|V] and [gate|up], multi-core",
        .cores = 0,
        .pack = true,
        .step = {
            [ORK__NPU_QKV] = STEP_FUSED,
            [ORK__NPU_O] = STEP_FUSED,
            [ORK__NPU_GATE_UP] = STEP_FUSED,
            [ORK__NPU_DOWN] = STEP_FUSED,
            [ORK__NPU_LM_HEAD] = STEP_FUSED,
        },
    },
    {
        .name = "per-matmul",
        .summary = "one submit per matmul",
        .cores = 1,
        .pack = false,          /* it cuts fused tensors into row ranges: plain rows needed */
        .step = {
            [ORK__NPU_QKV] = STEP_ONE,
            [ORK__NPU_O] = STEP_ONE,
            [ORK__NPU_GATE_UP] = STEP_ONE,
            [ORK__NPU_DOWN] = STEP_ONE,
            [ORK__NPU_LM_HEAD] = STEP_ONE,
        },
    },
    {
        .name = "per-matmul-mc",
        .summary = "one submit per matmul, columns split over 3 cores",
        .cores = NPU_MC_CORES,
        .pack = false,
        .step = {
            [ORK__NPU_QKV] = STEP_ONE,
            [ORK__NPU_O] = STEP_ONE,
            [ORK__NPU_GATE_UP] = STEP_ONE,
            [ORK__NPU_DOWN] = STEP_ONE,
            [ORK__NPU_LM_HEAD] = STEP_ONE,
        },
    },
    {
        /* fused with the O projection split in two by heads, the first half in flight while
         * the CPU runs the other heads' attention: one more submit per layer, which the twin
         * shows paying only past ~850 keys of f32 cache (docs/bench-log/2026-twin.md "The O
         * split"); weights quantised in memory, as the pack is laid out for the whole O */
        .name = "fused-split-o",
        .summary = "fused [Q|K|V] and [gate|up], O split by heads, multi-core",
        .cores = 0,
        .pack = false,
        .step = {
            [ORK__NPU_QKV] = STEP_FUSED,
            [ORK__NPU_O] = { .n_slots = 2, .fused = true, .overlap = true },
            [ORK__NPU_GATE_UP] = STEP_FUSED,
            [ORK__NPU_DOWN] = STEP_FUSED,
            [ORK__NPU_LM_HEAD] = STEP_FUSED,
        },
    },
};

const struct npu_plan *ork__npu_plan_for(uint32_t flags)
{
    if (flags & ORK_NPU_EXEC_PER_MATMUL_MC)
        return &plans[PLAN_PER_MATMUL_MC];
    if (flags & ORK_NPU_EXEC_PER_MATMUL)
        return &plans[PLAN_PER_MATMUL];
    if (flags & ORK_NPU_EXEC_SPLIT_O)
        return &plans[PLAN_FUSED_SPLIT_O];
    return &plans[PLAN_FUSED];
}

const struct npu_plan *ork__npu_plan_pack(void)
{
    return &plans[PLAN_FUSED];
}

const char *ork__npu_op_trace_name(enum ork__npu_op op)
{
    return layer_ops[op].trace;
}

uint32_t ork__npu_plan_op_slot(const struct npu_plan *p, enum ork__npu_op op)
{
    if (op == ORK__NPU_LM_HEAD)
        return 0;
    uint32_t s = 0;
    for (int i = 0; i < (int)op; i++)
        s += p->step[i].n_slots;
    return s;
}

uint32_t ork__npu_plan_slots_per_layer(const struct npu_plan *p)
{
    return ork__npu_plan_op_slot(p, ORK__NPU_DOWN) + p->step[ORK__NPU_DOWN].n_slots;
}

uint32_t ork__npu_plan_n_slots(const struct npu_plan *p, const struct ork_model *m)
{
    return (uint32_t)m->cfg.n_layers * ork__npu_plan_slots_per_layer(p) + 1;
}

int ork__layer_op_mats(const struct ork_model *m, enum ork__npu_op op, int32_t layer,
                       const struct ork_mat **mats)
{
    if (op == ORK__NPU_LM_HEAD) {
        mats[0] = &m->w.output;
        return 1;
    }
    const struct layer_op *lo = &layer_ops[op];
    for (int i = 0; i < lo->n_mats; i++)
        mats[i] = ork__layer_mat(&m->w.layers[layer], lo->mats[i]);
    return lo->n_mats;
}

void ork__layer_op_next(const struct ork_model *m, enum ork__npu_op op, int32_t layer,
                        bool to_head, enum ork__npu_op *next_op, int32_t *next_layer)
{
    *next_op = (enum ork__npu_op)(op + 1);
    *next_layer = layer;
    if (op == ORK__NPU_LM_HEAD || (op == ORK__NPU_DOWN && !to_head)) {
        *next_op = (enum ork__npu_op)0;
        *next_layer = op != ORK__NPU_LM_HEAD && layer + 1 < m->cfg.n_layers ? layer + 1 : 0;
    }
}

/* Columns of the first half of a K-split op (the O projection): the attention output of its
 * first heads (head-major layout, forward.c). The heads nearest n_heads / 2 whose columns are
 * a multiple of NPU_PREFILL_K_ALIGN (no padding added by the split: Qwen2.5-7B's 28 heads of
 * 128 split 12 + 16, not 14 + 14 = 1792 columns padded to 2048 twice), ties to fewer (more
 * attention behind the first half), else n_heads / 2. 0 when there is one head (no split). */
static uint32_t split_cols(const struct ork_model_config *c)
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

void ork__npu_pack_source(const struct npu_plan *p, const struct ork_model *m, uint32_t t,
                          struct pack_src *ps, char *name, size_t cap)
{
    uint32_t spl = ork__npu_plan_slots_per_layer(p), slot = t % spl;
    int32_t l = (int32_t)(t / spl);
    memset(ps, 0, sizeof(*ps));
    ps->layer = l;
    ps->n_layers = m->cfg.n_layers;
    ps->op = ORK__NPU_LM_HEAD;
    if (l < m->cfg.n_layers) {
        ps->op = (enum ork__npu_op)0;
        while (slot >= ork__npu_plan_op_slot(p, ps->op) + p->step[ps->op].n_slots)
            ps->op = (enum ork__npu_op)(ps->op + 1);
        ps->half = (int)(slot - ork__npu_plan_op_slot(p, ps->op));
    }
    const struct layer_op *lo = &layer_ops[ps->op];
    ps->ns = ork__layer_op_mats(m, ps->op, l, ps->src);
    if (ps->ns > 0 && !ps->src[0]->data) {
        /* a MoE layer's FFN: its experts are not plan matrices (they stay on the CPU) */
        ps->ns = 0;
        snprintf(name, cap, "blk.%d.%s", (int)l, lo->tensor);
        return;
    }
    uint32_t cols = (uint32_t)ps->src[0]->n_cols;
    uint32_t ka = p->step[ps->op].n_slots == 2 ? split_cols(&m->cfg) : 0;
    ps->k = cols;
    if (ps->op == ORK__NPU_LM_HEAD)
        snprintf(name, cap, "%s", lo->tensor);
    else if (!ka)
        snprintf(name, cap, "blk.%d.%s", (int)l, lo->tensor);
    else
        snprintf(name, cap, "blk.%d.%s.%c", (int)l, lo->tensor, ps->half ? 'b' : 'a');
    if (ka) {
        ps->c0 = ps->half ? ka : 0;
        ps->k = ps->half ? cols - ka : ka;
    } else if (ps->half) {
        ps->ns = 0;     /* one head: nothing to split, the first slot holds the whole op */
    }
    for (int i = 0; i < ps->ns; i++)
        ps->n += (uint32_t)ps->src[i]->n_rows;
}

uint32_t ork__npu_pack_n_tensors(const struct npu_plan *p, const struct ork_model *m)
{
    uint32_t n = 0;
    for (uint32_t t = 0; t < ork__npu_plan_n_slots(p, m); t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(p, m, t, &ps, name, sizeof name);
        n += ps.ns > 0;
    }
    return n;
}

void ork__npu_pack_max_dims(const struct npu_plan *p, const struct ork_model *m, size_t *max_q,
                            size_t *max_n, size_t *max_k, size_t *max_row)
{
    *max_q = *max_n = *max_k = *max_row = 0;
    for (uint32_t t = 0; t < ork__npu_plan_n_slots(p, m); t++) {
        struct pack_src ps;
        char name[ORK_ORKPACK_NAME_MAX];
        ork__npu_pack_source(p, m, t, &ps, name, sizeof name);
        if (!ps.ns)
            continue;
        size_t q = (size_t)ps.n * ps.k, row = (size_t)ps.src[0]->n_cols;
        *max_q = q > *max_q ? q : *max_q;
        *max_n = ps.n > *max_n ? ps.n : *max_n;
        *max_k = ps.k > *max_k ? ps.k : *max_k;
        *max_row = row > *max_row ? row : *max_row;
    }
}
