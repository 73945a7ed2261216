/* ork-engine/speculative.h -- speculative decoding: cheap drafts of the next tokens, verified by
 * the target model in one forward of k+1 rows (ORK_EVAL_ALL_LOGITS), the rejected positions
 * rolled back out of the KV cache (docs/sampling.md "Speculative decoding").
 *
 * Drafts come from prompt lookup (the most recent earlier occurrence in the context of its last
 * n-gram: the tokens that followed it) and/or a small draft model with the same vocabulary,
 * running its own session (on the CPU when loaded so). With both, lookup drafts first and the
 * model drafts when lookup finds nothing.
 *
 * Verification is standard speculative sampling over the sampler's final distributions p
 * (target, ork_sampler_probs: grammar, penalties, top-k/top-p/min-p, temperature) and q (draft;
 * one-hot for lookup and for a greedy draft): drafted token x is accepted with probability
 * min(1, p(x)/q(x)); at the first rejection the next token is drawn from normalize(max(0, p-q)),
 * and when all k are accepted a bonus token is drawn from the (k+1)-th row. Greedy decoding
 * (temp <= 0) thus reproduces plain greedy decoding token for token, and sampling keeps the
 * target distribution. Positions are verified in order, each accepted token joining the
 * sampler's history (and advancing its grammar) before the next position is judged.
 *
 * One struct ork_spec per generating sequence (it holds the draft session); the draft model
 * may be shared by several. */
#ifndef ORK_ENGINE_SPECULATIVE_H
#define ORK_ENGINE_SPECULATIVE_H

#include <ork-engine/engine.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Verify forwards are counted by rows M = k+1 up to this; larger ones go to the last bucket. */
#define ORK_SPEC_M_HIST 33

struct ork_spec_params {
    struct ork_model *draft;    /* draft model (same vocabulary as the target), or NULL */
    int32_t lookup;             /* prompt lookup: the longest n-gram matched (sizes lookup .. 1
                                 * are tried, the most recent match wins); 0: off */
    int32_t draft_max;          /* most tokens drafted per step (default 16) */
    int32_t draft_min;          /* fewer drafted than this: a plain step (default 0) */
    float draft_p_min;          /* the draft model stops drafting at a token whose draft
                                 * probability is below this (default 0: never) */
    int32_t n_threads;          /* the draft session's threads (<= 0: online CPUs) */
    int32_t ctx_size;           /* the draft session's KV length (0: the target's) */
};
void ork_spec_params_default(struct ork_spec_params *p);

struct ork_spec_stats {
    uint64_t n_steps;           /* target decode forwards (verify ones and plain M = 1 ones) */
    uint64_t n_verify;          /* forwards that verified at least one drafted token */
    uint64_t n_drafted;         /* drafted tokens verified */
    uint64_t n_accepted;        /* ... accepted */
    uint64_t n_tokens;          /* tokens the steps produced (accepted + 1 per step) */
    uint64_t m_hist[ORK_SPEC_M_HIST];   /* [M-1]: forwards of M rows */
    double draft_ms, verify_ms; /* wall time drafting (model and lookup) and verifying */
};
/* tau: tokens per target decode forward (n_tokens / n_steps); acceptance: accepted / drafted. */
double ork_spec_tau(const struct ork_spec_stats *st);
double ork_spec_acceptance(const struct ork_spec_stats *st);
/* Add b's counters to a's. */
void ork_spec_stats_add(struct ork_spec_stats *a, const struct ork_spec_stats *b);

struct ork_spec;

/* For sequences of target (the sampler's vocabulary). Errors: ORK_EINVAL (no draft source, bad
 * bounds, a draft model whose vocabulary differs: the message names the first difference),
 * ORK_ENOMEM. */
int ork_spec_create(struct ork_model *target, const struct ork_spec_params *p,
                    struct ork_spec **out);
void ork_spec_free(struct ork_spec *sp);
const struct ork_spec_params *ork_spec_params(const struct ork_spec *sp);
/* Counters since create or the last reset (a generation: ork_gen_stats has its own). */
const struct ork_spec_stats *ork_spec_stats(const struct ork_spec *sp);
void ork_spec_stats_reset(struct ork_spec *sp);
/* Check that draft can draft for target (same vocabulary): 0, or ORK_EINVAL naming the first
 * difference (size, special ids, a token's text). */
int ork_spec_vocab_check(const struct ork_model *target, const struct ork_model *draft);

/* One decode step of target session s: id is the token chosen last, not yet evaluated (it goes
 * at position n_past). Drafts up to min(draft_max, max_new - 1, room in the cache) tokens,
 * evaluates id and the drafts in one forward, and verifies them with smp. out (max_new >= 1
 * entries) receives the produced tokens: the accepted drafts and the token chosen after them,
 * *n_out of them; the last one is not evaluated (the next step's id), every earlier one is in
 * the cache after id. Every produced token has been accepted into smp. Verification stops after
 * an end-of-generation token (it is then the last one), unless ignore_eos masks those (no
 * grammar) -- the same rule as ork_gen_params.ignore_eos. Errors: the evaluation's
 * (ORK_ECONTEXT when id has no room) and the sampler's. */
int ork_spec_step(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp, int32_t id,
                  int32_t max_new, bool ignore_eos, int32_t *out, int32_t *n_out);
/* ork_spec_step in two halves around the caller's forward, so that several sequences' verify
 * rows share one forward (ork_model_eval_multi_rows: the server's slots). ork_spec_draft drafts
 * as ork_spec_step does and gives the rows to evaluate at s's n_past: *rows (id then the
 * drafts, valid until the next draft), *n_rows = k + 1. The caller evaluates them into s (all
 * rows' logits) and writes the logits to ork_spec_rows_logits(sp) ((draft_max + 1, n_vocab)
 * floats), then ork_spec_verify judges them as ork_spec_step does (out, *n_out, the rollback,
 * the counters). Errors: ork_spec_step's; verify without the rows in the cache: ORK_EINVAL. */
int ork_spec_draft(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp, int32_t id,
                   int32_t max_new, const int32_t **rows, int32_t *n_rows);
float *ork_spec_rows_logits(struct ork_spec *sp);
int ork_spec_verify(struct ork_spec *sp, struct ork_session *s, struct ork_sampler *smp,
                    bool ignore_eos, int32_t *out, int32_t *n_out);
/* A new generation: the draft's sampler restarts its random stream, so that a generation is
 * reproducible from its seed whatever sp drafted before (ork_generate_tokens calls it). */
void ork_spec_restart(struct ork_spec *sp);
/* Change draft_max and draft_min (a server request's speculative.n_max / n_min): draft_max is
 * clamped to the one sp was created with; 0 turns speculation off (plain steps). */
void ork_spec_set_bounds(struct ork_spec *sp, int32_t draft_max, int32_t draft_min);
/* Speculative sampling of one position: drafted token x (drawn from q[n_vocab], or NULL for a
 * deterministic draft: q one-hot at x) against the target's sampler smp at logits. Accepted with
 * probability min(1, p(x)/q(x)) (p = ork_sampler_probs); else *y is drawn from
 * normalize(max(0, p - q)). A greedy smp accepts x iff it is its argmax. Returns 1 (accepted,
 * *y = x) or 0 (rejected, *y the replacement), both accepted into smp, or a negative error.
 * p: n_vocab floats of scratch. */
int ork_spec_verify_token(struct ork_sampler *smp, int32_t n_vocab, const float *logits,
                          int32_t x, const float *q, float *p, int32_t *y);
/* The logits (n_vocab, unmasked) the j-th token of the last step's out was chosen from; valid
 * until the next step. */
const float *ork_spec_logits(const struct ork_spec *sp, int32_t j);

#ifdef __cplusplus
}
#endif
#endif
