/* twin_model.c -- a CPU-only Llama/Qwen forward batch as twin ops: the phases the engine's CPU
 * path runs, in its order, each split over n_threads A76 cores and ending in their barrier
 * (docs/twin.md "CPU-only forward"). Shapes in, ops out; the costs are twin_cpu.c's. Not here:
 * NPU offload (the executor will add its own ops), batching across sequences. */
#include <ork/error.h>

#include "twin_priv.h"

struct fwd {
    struct ork_twin *tw;
    uint32_t k;     /* cores per phase */
    int last;       /* previous op: every phase waits for the one before */
};

static int add(struct fwd *f, enum ork_twin_phase p, struct ork_twin_work w, const char *label)
{
    struct ork_twin_op_desc d = { .res = ORK_TWIN_CPU, .n_cores = f->k, .phase = p, .work = w,
                                  .label = label };
    int id = ork_twin_op_add(f->tw, &d, f->last >= 0 ? &f->last : NULL, f->last >= 0 ? 1 : 0);
    if (id >= 0)
        f->last = id;
    return id;
}

static bool quantised(enum ork_twin_wtype t)
{
    return t != ORK_TWIN_W_F32 && t != ORK_TWIN_W_F16;
}

#define ADD(phase, work, label)                                 \
    do {                                                        \
        int id_ = add(&f, ORK_TWIN_PHASE_##phase, work, label); \
        if (id_ < 0)                                            \
            return id_;                                         \
    } while (0)

/* The attention block of one layer: norm, Q/K/V, RoPE, KV append, attention, output proj. */
static int layer_attn(struct fwd *fp, const struct ork_twin_llm *m, uint64_t M, uint64_t n_past)
{
    struct fwd f = *fp;
    const struct ork_twin_consts *c = ork_twin_consts_of(f.tw);
    uint64_t D = m->dim, QD = (uint64_t)m->n_heads * m->head_dim;
    uint64_t KVD = (uint64_t)m->n_kv_heads * m->head_dim;
    bool q = quantised(m->wtype);
    ADD(RMSNORM, ork_twin_cpu_rmsnorm(c, M, D), "attn_norm");
    if (q)
        ADD(QUANT, ork_twin_cpu_quantize(c, M, D), "quant attn_in");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, D, QD), "wq");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, D, KVD), "wk");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, D, KVD), "wv");
    if (m->bias_qkv)
        ADD(BIAS, ork_twin_cpu_bias(c, M * (QD + 2 * KVD)), "qkv bias");
    if (m->qk_norm)
        ADD(RMSNORM, ork_twin_cpu_rmsnorm(c, M * (m->n_heads + m->n_kv_heads), m->head_dim), "qk_norm");
    ADD(ROPE, ork_twin_cpu_rope(c, M * (QD + KVD)), "rope");
    ADD(KV_APPEND, ork_twin_cpu_kv_append(c, M * 2 * KVD, m->kv_el_bytes), "kv append");
    struct ork_twin_attn a = { .q_rows = M, .pairs = M * n_past + M * (M + 1) / 2, .keys = n_past + M,
                               .n_heads = m->n_heads, .n_kv_heads = m->n_kv_heads,
                               .head_dim = m->head_dim, .kv_el_bytes = m->kv_el_bytes };
    ADD(ATTENTION, ork_twin_cpu_attention(c, &a), "attention");
    if (q)
        ADD(QUANT, ork_twin_cpu_quantize(c, M, QD), "quant attn_out");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, QD, D), "wo");
    ADD(RESIDUAL, ork_twin_cpu_residual(c, M * D), "residual");
    *fp = f;
    return 0;
}

static int layer_ffn(struct fwd *fp, const struct ork_twin_llm *m, uint64_t M)
{
    struct fwd f = *fp;
    const struct ork_twin_consts *c = ork_twin_consts_of(f.tw);
    uint64_t D = m->dim, F = m->ffn;
    bool q = quantised(m->wtype);
    ADD(RMSNORM, ork_twin_cpu_rmsnorm(c, M, D), "ffn_norm");
    if (q)
        ADD(QUANT, ork_twin_cpu_quantize(c, M, D), "quant ffn_in");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, D, F), "w_gate");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, D, F), "w_up");
    ADD(SILU_MUL, ork_twin_cpu_silu_mul(c, M * F), "silu x up");
    if (q)
        ADD(QUANT, ork_twin_cpu_quantize(c, M, F), "quant ffn_mid");
    ADD(CPU_MATMUL, ork_twin_cpu_matmul(c, m->wtype, M, F, D), "w_down");
    ADD(RESIDUAL, ork_twin_cpu_residual(c, M * D), "residual");
    *fp = f;
    return 0;
}

int ork_twin_cpu_forward(struct ork_twin *tw, const struct ork_twin_llm *m, uint32_t n_tokens,
                         uint32_t n_past, uint32_t n_logits, uint32_t n_threads, int sample_top_k)
{
    const struct ork_twin_consts *c = ork_twin_consts_of(tw);
    if (!m || !m->dim || !m->n_layers || !m->n_heads || !m->n_kv_heads || !m->head_dim ||
        !m->ffn || !m->vocab || m->n_heads % m->n_kv_heads || !m->kv_el_bytes)
        return ork_errorf(ORK_EINVAL, "twin forward: incomplete model shape");
    if (!n_tokens || n_logits > n_tokens || !n_threads || n_threads > c->cpu_cores)
        return ork_errorf(ORK_EINVAL, "twin forward: %u tokens, %u logits, %u threads (cores %g)",
                          n_tokens, n_logits, n_threads, c->cpu_cores);
    struct fwd f = { .tw = tw, .k = n_threads, .last = -1 };
    uint64_t M = n_tokens, D = m->dim;
    ADD(EMBED, ork_twin_cpu_embed(c, m->embd_wtype, M, D), "embed");
    for (uint32_t l = 0; l < m->n_layers; l++) {
        int ret;
        if ((ret = layer_attn(&f, m, M, n_past)) < 0 || (ret = layer_ffn(&f, m, M)) < 0)
            return ret;
    }
    if (n_logits) {
        ADD(RMSNORM, ork_twin_cpu_rmsnorm(c, n_logits, D), "output_norm");
        if (quantised(m->out_wtype))
            ADD(QUANT, ork_twin_cpu_quantize(c, n_logits, D), "quant output");
        ADD(LM_HEAD, ork_twin_cpu_matmul(c, m->out_wtype, n_logits, D, m->vocab), "lm_head");
    }
    f.k = 1;    /* the sampler runs on the calling thread */
    for (uint32_t r = 0; sample_top_k >= 0 && r < n_logits; r++)
        ADD(SAMPLE, ork_twin_cpu_sample(c, m->vocab, (uint32_t)sample_top_k), "sample");
    return f.last;
}
