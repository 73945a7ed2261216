/* model_priv.h -- engine-internal layout of a model and a session, shared by model.c (load and
 * weight binding), kv.c (KV cache), forward.c (the transformer) and generate.c (generation).
 * Not a public header: the CLI and server use include/ork-engine/engine.h only. */
#ifndef ORK_ENGINE_MODEL_PRIV_H
#define ORK_ENGINE_MODEL_PRIV_H

#include <ork-engine/arena.h>
#include <ork-engine/engine.h>
#include <ork-engine/gguf.h>
#include <ork-engine/tokenizer.h>
#include <ork-kernels/kernels.h>
#include <ork-kernels/pool.h>

#include <stdint.h>

/* Per-layer weights, borrowed from the GGUF mapping (own nothing). Matrices follow the kernel
 * convention: n_rows = outputs (GGUF ne[1]), n_cols = inputs (GGUF ne[0]). q_dim is
 * n_heads * head_dim, kv_dim is n_kv_heads * head_dim. */
struct ork_layer_weights {
    const float *attn_norm;     /* (dim) */
    struct ork_mat wq;          /* (q_dim, dim) */
    struct ork_mat wk;          /* (kv_dim, dim) */
    struct ork_mat wv;          /* (kv_dim, dim) */
    const float *bq;            /* (q_dim) qwen2, else NULL */
    const float *bk;            /* (kv_dim) qwen2, else NULL */
    const float *bv;            /* (kv_dim) qwen2, else NULL */
    const float *q_norm;        /* (head_dim) qwen3, else NULL */
    const float *k_norm;        /* (head_dim) qwen3, else NULL */
    struct ork_mat wo;          /* (dim, q_dim) */
    const float *ffn_norm;      /* (dim) */
    struct ork_mat w_gate;      /* (ffn_dim, dim) */
    struct ork_mat w_up;        /* (ffn_dim, dim) */
    struct ork_mat w_down;      /* (dim, ffn_dim) */
    const float *post_attn_norm;/* (dim) Gemma, else NULL */
    const float *post_ffn_norm; /* (dim) Gemma, else NULL */
    /* phi3's fused sources; wq/wk/wv and w_gate/w_up are row views into them */
    struct ork_mat wqkv;        /* (q_dim + 2 kv_dim, dim) */
    struct ork_mat w_gate_up;   /* (2 ffn_dim, dim) */
    /* MoE (qwen3moe): router and n_expert experts stacked by rows (expert e: rows
     * e * rows_per_expert ..); views per expert come from ork__expert_mat */
    struct ork_mat gate_inp;    /* (n_expert, dim) */
    struct ork_mat gate_exps;   /* (n_expert * expert_ffn_dim, dim) */
    struct ork_mat up_exps;     /* (n_expert * expert_ffn_dim, dim) */
    struct ork_mat down_exps;   /* (n_expert * dim, expert_ffn_dim) */
};

/* Expert e of a stacked expert matrix (rows_per_expert rows each): a view. */
static inline struct ork_mat ork__expert_mat(const struct ork_mat *all, int32_t e,
                                             int64_t rows_per_expert)
{
    struct ork_mat m = *all;
    m.data = (const uint8_t *)all->data + (size_t)e * (size_t)rows_per_expert * all->row_bytes;
    m.n_rows = rows_per_expert;
    return m;
}

struct ork_weights {
    struct ork_mat tok_embd;            /* (n_vocab, dim) */
    const float *output_norm;           /* (dim) */
    struct ork_mat output;              /* (n_vocab, dim); == tok_embd when tied */
    const float *rope_freqs;            /* (n_rot / 2) theta divisors, or NULL */
    const float *rope_long, *rope_short;/* LongRoPE (n_rot / 2) divisors (phi3), or NULL */
    struct ork_layer_weights *layers;   /* (n_layers), ork_calloc'd */
};

struct ork_model {
    struct ork_gguf *gguf;              /* owned; the weights point into its mapping */
    struct ork_model_config cfg;
    const struct ork_arch_desc *arch;   /* what the forward pass varies on (arch.c) */
    struct ork_weights w;
    struct ork_tokenizer *tok;          /* owned; NULL with no_tokenizer */
    struct ork__npu_exec *npu;          /* owned; NULL: every matmul on the CPU (npu/) */
    struct ork__twin_rec *twin;         /* owned; NULL: no board twin (twin_rec.c) */
    bool read_in;                       /* file read into memory (else mapped) */
    int32_t n_interleaved;              /* matrices in ORK_LAYOUT_X16 (interleave, model.c) */
};

/* ---- the layer plan (npu/plan.c) ---------------------------------------------------------
 * The matmul groups (ops) of a layer, in forward order: X(id, name). npu/plan.c's table says
 * per op which model matrices it takes (stacked by rows, in output order), its input and
 * outputs and its pack tensors; the executor plans (fused, per-matmul) say how each op runs.
 * forward.c runs every op through one call (exec_proj: the NPU when the executor holds it,
 * else the CPU). */
#define ORK__LAYER_OPS(X)                                                                     \
    X(QKV, "qkv")               /* outs q, k, v from the attention input */                   \
    X(O, "o")                   /* out: attention output projection */                        \
    X(GATE_UP, "gate_up")       /* outs gate, up from the FFN input */                        \
    X(DOWN, "down")             /* out: FFN down projection */

enum ork__npu_op {
#define ORK__OP_ENUM(id, name) ORK__NPU_##id,
    ORK__LAYER_OPS(ORK__OP_ENUM)
#undef ORK__OP_ENUM
    ORK__NPU_LM_HEAD,           /* out: logits (layer ignored) */
    ORK__NPU_N_OPS,
};
#define ORK__OPS_PER_LAYER ((int)ORK__NPU_LM_HEAD)

/* The model matrices of op at layer (the LM head: the output matrix), in output order, into
 * mats[0..3); returns how many (1..3). */
int ork__layer_op_mats(const struct ork_model *m, enum ork__npu_op op, int32_t layer,
                       const struct ork_mat **mats);
/* The op that follows (op, layer) in a forward batch: the next op of the layer, the next
 * layer's first, after the last layer the LM head when to_head (else layer 0's first), after
 * the LM head layer 0's first (the next batch). */
void ork__layer_op_next(const struct ork_model *m, enum ork__npu_op op, int32_t layer,
                        bool to_head, enum ork__npu_op *next_op, int32_t *next_layer);
/* Layer weight t (ork-engine/arch.h ORK_LT_*) of L when it is a matrix, else NULL (model.c). */
const struct ork_mat *ork__layer_mat(const struct ork_layer_weights *L, enum ork_layer_tensor t);

/* ---- NPU executor (npu/) ------------------------------------------------------------------ */

/* Build the executor for m (device per p->device; NULL *out for the CPU). */
int ork__npu_exec_create(struct ork_model *m, const char *path, const struct ork_model_params *p,
                         struct ork__npu_exec **out);
void ork__npu_exec_destroy(struct ork__npu_exec *ex);
/* Run one op for m rows of x; outs per op as above. Returns 1 when done on the NPU, 0 when the
 * caller must run it on the CPU, or a negative error. */
int ork__npu_exec_run(struct ork__npu_exec *ex, enum ork__npu_op op, int32_t layer,
                      const float *x, int32_t m, float *const *outs);
/* Decode overlap of the O projection, split along its input by attention heads (npu/run.c):
 * _o_split gives the heads of the first half (0: the op is not split, not on the NPU or m is
 * more rows than one plan run takes; run ORK__NPU_O as usual then). _o_submit quantises that
 * half of att (m rows of n_heads * head_dim) and submits it asynchronously; the caller computes
 * the other heads' attention meanwhile; _o_finish runs the second half and writes y (m, dim),
 * the sum of both. Nothing may run on the executor between the two calls. */
int32_t ork__npu_exec_o_split(struct ork__npu_exec *ex, int32_t layer, int32_t m,
                              int32_t n_heads);
int ork__npu_exec_o_submit(struct ork__npu_exec *ex, int32_t layer, const float *att, int32_t m);
int ork__npu_exec_o_finish(struct ork__npu_exec *ex, int32_t layer, const float *att, int32_t m,
                           float *y);
/* Bracket one forward batch of m rows (wall time and counters). */
void ork__npu_exec_batch_begin(struct ork__npu_exec *ex);
void ork__npu_exec_batch_end(struct ork__npu_exec *ex, int32_t m);

/* ---- the board twin (twin_rec.c; docs/twin.md "In the engine") ---------------------------
 * One twin step per forward batch: _begin (takes the recorder's lock) .. _end (runs the step,
 * adds it to the totals, unlocks; returns the first recording error). Every function is a
 * no-op on a NULL recorder. CPU phases go on the caller's chain, on all the twin's A76 cores
 * when the engine spreads them over its pool, else on one. */
struct ork__twin_rec;
struct ork_npu_matmul_info;
int ork__twin_rec_create(const struct ork_model_params *p, struct ork__twin_rec **out);
void ork__twin_rec_destroy(struct ork__twin_rec *r);
const struct ork_twin_consts *ork__twin_consts(const struct ork__twin_rec *r);
uint32_t ork__twin_cores(const struct ork__twin_rec *r, bool pool);
enum ork_twin_wtype ork__twin_wtype(uint32_t type);    /* from enum ork_type */
void ork__twin_begin(struct ork__twin_rec *r);
int ork__twin_end(struct ork__twin_rec *r, int32_t rows);
void ork__twin_cpu(struct ork__twin_rec *r, enum ork_twin_phase ph, bool pool,
                   struct ork_twin_work w, const char *label);
/* An NPU run of plan `in` over m rows on device dev: the host ops of the submit and one NPU op
 * per core; async = on libork's worker (the caller goes on). slot (0, 1) names it until
 * ork__twin_npu_wait, where the caller's chain waits for it. */
int ork__twin_npu_submit(struct ork__twin_rec *r, const struct ork_npu_matmul_info *in,
                         uint32_t m, int dev, bool async, int slot, const char *label);
int ork__twin_npu_wait(struct ork__twin_rec *r, int slot);

/* KV cache: per layer and KV head, ctx rows of head_dim values (rotated keys; values), F32 or
 * F16 (kv.c: positions in blocks, a head's rows contiguous within a block). */
struct ork_kv_cache {
    enum ork_kv_type type;
    int32_t n_layers;
    int32_t ctx;                /* rows per layer and head */
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t n_blocks;           /* position blocks of a full layer (kv.c KV_BLOCK) */
    int32_t *blk0;              /* (n_layers + 1) first block of each layer */
    int32_t *cap;               /* (n_layers) positions a layer keeps: n_blocks * KV_BLOCK, or
                                 * a sliding-window layer's ring (position p in slot p % cap) */
    int32_t min_cap;            /* the smallest cap */
    int32_t hi;                 /* highest position stored since init (-1: none) */
    size_t bytes;               /* K and V buffers together */
    void *k;                    /* per layer (its blocks, n_kv_heads, KV_BLOCK, head_dim) float
                                 * or uint16_t (fp16) */
    void *v;                    /* same */
};

int ork__kv_init(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers, int32_t ctx,
                 int32_t n_kv_heads, int32_t head_dim);
/* The same with the layers marked local keeping a ring of at least local_rows positions (rounded
 * up to whole blocks; local NULL or local_rows 0: every layer keeps ctx). */
int ork__kv_init_layers(struct ork_kv_cache *kv, enum ork_kv_type type, int32_t n_layers,
                        int32_t ctx, int32_t n_kv_heads, int32_t head_dim, const bool *local,
                        int32_t local_rows);
void ork__kv_fini(struct ork_kv_cache *kv);
/* Whether a batch starting at pos still finds, in every ring, the keys of the window (window
 * positions up to pos) it reads: false after a rewind past what the rings kept (the caller
 * then evaluates the prefix again from position 0). */
bool ork__kv_window_valid(const struct ork_kv_cache *kv, int32_t pos, int32_t window);
/* Zeroes the rows of positions [from, to) of every layer and head (their pages mapped). */
void ork__kv_prefault(struct ork_kv_cache *kv, int32_t from, int32_t to);
/* Store the K and V rows (kv_dim floats each: the KV heads in order) of one position. */
void ork__kv_store(struct ork_kv_cache *kv, int32_t layer, int32_t pos, const float *k,
                   const float *v);
/* The same for one KV head (head_dim floats each). */
void ork__kv_store_head(struct ork_kv_cache *kv, int32_t layer, int32_t pos, int32_t head,
                        const float *k, const float *v);
/* Prefetches the first rows of the K and V runs of (layer, head) for n_pos keys (a hint). */
void ork__kv_prefetch_head(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                           int32_t n_pos);
/* scores[h][t] = scale * dot(q[h], K[layer][head][t]) (head_dim values) for t in
 * [t_begin, n_pos) (a sliding window starts past 0), for nq (1 or 2) queries of the KV head;
 * the keys are read once for both. */
void ork__kv_scores(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                    const float *const *q, int nq, float scale, int32_t t_begin, int32_t n_pos,
                    float *const *scores);
/* out[h][0..head_dim) = sum_t w[h][t] * V[layer][head][t] for t in [t_begin, n_pos), nq (1 or
 * 2) weight vectors; the values are read once for both. */
void ork__kv_weighted_sum(const struct ork_kv_cache *kv, int32_t layer, int32_t head,
                          const float *const *w, int nq, int32_t t_begin, int32_t n_pos,
                          float *const *out);

/* Wall time of forward batches by phase (ORK_DEBUG=phases), [0] decode (1 row), [1] larger. */
struct ork__phases {
    int64_t batches, rows;
    int64_t total_ns, matmul_ns, attn_ns;
};

/* ---- architecture ops (ops_arch.c) ------------------------------------------------------- */

/* Builds the FP16 GELU table once (thread-safe); call before ork__gelu_mul. */
void ork__gelu_init(void);
/* gate = gelu(gate) * up, gelu through llama.cpp's FP16 table (ops_arch.c). */
void ork__gelu_mul(float *gate, const float *up, int64_t n);
/* x = cap * tanh(x / cap). */
void ork__softcap(float *x, int64_t n, float cap);
/* The floor of the selected experts' probability sum (llama-graph.cpp, 2^-14). */
#define ORK__MOE_WSUM_MIN 6.103515625e-5f
/* probs (n_expert router logits) -> softmax in place; ids, w (k each): the top-k experts by
 * probability, descending, and their probabilities renormalised to sum 1. */
int ork__moe_route(float *probs, int32_t n_expert, int32_t k, int32_t *ids, float *w);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t ork__now_ns(void);

struct ork_session {
    struct ork_model *m;
    struct ork_session_params p;        /* resolved (no zeros) */
    struct ork_kv_cache kv;
    struct ork_pool *pool;
    struct ork_arena *arena;            /* per-batch activations, reset every batch */
    int32_t *tokens;                    /* (ctx) tokens held by the cache */
    int32_t n_past;
    float *logits;                      /* (n_vocab) last-token logits for generation */
    bool phases_on;                     /* ORK_DEBUG=phases: fill phases */
    const float *rope_freqs;            /* the divisors this session's RoPE uses: rope_freqs,
                                         * else LongRoPE long when ctx_size > n_ctx_orig, else
                                         * short (llama-model.cpp:2039-2052), else NULL */
    uint64_t expert_bytes;              /* MoE: bytes of expert weights the matmuls read */
    struct ork__phases phases[2];
};

/* Bytes of arena scratch one forward batch of n_batch tokens needs. */
size_t ork__forward_scratch_bytes(const struct ork_model_config *c, int32_t n_batch, int32_t ctx,
                                  int32_t n_threads);
/* One batch (n <= n_batch) at positions pos .. pos+n-1; the cache holds 0 .. pos-1. Writes the
 * logits of all rows (all = true) or of the last row to logits (NULL: none). */
int ork__forward_batch(struct ork_session *s, const int32_t *tokens, int32_t n, int32_t pos,
                       float *logits, bool all);

/* The rows of one forward batch: M tokens, each with the KV cache it attends to and writes,
 * and its position. A prefill batch is M consecutive positions of one session; a multi-session
 * batch is, for each of several sessions, one or more consecutive positions (a session's rows
 * adjacent, in position order). */
struct fwd_rows {
    int32_t n;
    const int32_t *tokens;                  /* (n) */
    struct ork_kv_cache *kv0;               /* every row's cache when kv == NULL */
    struct ork_kv_cache *const *kv;         /* (n) per-row caches, or NULL */
    int32_t pos0;                           /* row i is at pos0 + i when pos == NULL */
    const int32_t *pos;                     /* (n) per-row positions, or NULL */
    bool shared;                            /* kv: some cache has several rows (they read
                                             * each other's keys) */
};

static inline struct ork_kv_cache *row_kv(const struct fwd_rows *r, int32_t i)
{
    return r->kv ? r->kv[i] : r->kv0;
}

static inline int32_t row_pos(const struct fwd_rows *r, int32_t i)
{
    return r->pos ? r->pos[i] : r->pos0 + i;
}

/* One forward batch of rows r (r->n <= s->p.n_batch) with session s's pool, arena and
 * options: every row's K/V appended to its cache, logits of all rows (all) or of the last one
 * (NULL: none). The caller updates the caches' highest positions and token lists. */
int ork__forward_rows(struct ork_session *s, const struct fwd_rows *r, float *logits, bool all);
/* Before a batch of s at pos < its cache's highest position: re-evaluates s's first pos tokens
 * when a sliding-window ring no longer holds the window's keys. */
int ork__rewind_rings(struct ork_session *s, int32_t pos);

/* ork_model_eval_multi (engine.h) through the same layer code as ork_model_eval: one token for
 * each of n distinct sessions of one model, each row at its session's n_past, attending to its
 * own cache; logits (n, n_vocab). Handles RoPE scaling and act_quant like every other batch,
 * and any n (passes of up to n_batch rows). Same errors as ork_model_eval_multi. The one-row
 * case of ork_model_eval_multi_rows (batch_eval.c). */
int ork__forward_multi(struct ork_session *const *sessions, const int32_t *tokens, int32_t n,
                       float *logits);

#endif
