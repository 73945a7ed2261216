/* ork-engine/sampler.h -- token sampling: greedy, temperature, top-k, top-p, min-p, and
 * repetition / presence / frequency penalties, seeded and reproducible.
 *
 * Order of operations (same as llama.cpp's default chain): penalties over the last
 * `penalty_last_n` accepted tokens -> top-k -> top-p -> min-p -> temperature -> draw.
 * temp <= 0 means greedy (argmax after penalties; ties -> lowest id). The RNG is a
 * self-contained 64-bit generator seeded from `seed`, so results do not depend on libc.
 *
 * With a grammar (ork-engine/grammar.h), tokens the grammar does not allow next are masked to
 * -inf before every other step, end-of-generation tokens are allowed only when the grammar can
 * end, and the grammar advances with each token the sampler chose (the next accept of the id
 * the last sample returned; prompt tokens passed to accept do not advance it). */
#ifndef ORK_ENGINE_SAMPLER_H
#define ORK_ENGINE_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_sampler_params {
    float temp;               /* 0.8; <= 0: greedy */
    int32_t top_k;            /* 40; <= 0: disabled */
    float top_p;              /* 0.95; >= 1: disabled */
    float min_p;              /* 0.05; <= 0: disabled */
    float repeat_penalty;     /* 1.0 = disabled */
    float presence_penalty;   /* 0.0 = disabled */
    float frequency_penalty;  /* 0.0 = disabled */
    int32_t penalty_last_n;   /* 64; 0 disables penalties, -1 = whole history */
    uint64_t seed;            /* ORK_SEED_RANDOM: seed from the clock */
    /* Constrained output: NULL = none. Both are borrowed and must outlive the sampler; the
     * vocabulary must be the model's (ork_grammar_vocab_create on its tokenizer). */
    const struct ork_grammar *grammar;
    const struct ork_grammar_vocab *grammar_vocab;
};
#define ORK_SEED_RANDOM UINT64_MAX

struct ork_sampler;
struct ork_grammar;
struct ork_grammar_vocab;

void ork_sampler_params_default(struct ork_sampler_params *p);
/* Validates ranges (ORK_EINVAL naming the field). */
int ork_sampler_create(const struct ork_sampler_params *p, int32_t n_vocab, struct ork_sampler **out);
void ork_sampler_free(struct ork_sampler *s);
/* Pick a token from logits[n_vocab] (not modified). Does not record it: call accept. Under a
 * grammar, a negative error when no token the grammar allows has a finite logit. */
int32_t ork_sampler_sample(struct ork_sampler *s, const float *logits);
/* The final distribution ork_sampler_sample would draw from for these logits: the grammar
 * mask, penalties, top-k, top-p, min-p and temperature applied, written to probs[n_vocab]
 * (summing to 1, 0 outside the kept candidates; greedy: one-hot at the argmax). Draws nothing
 * and changes no state. Returns the number of non-zero entries, or a negative error (as
 * ork_sampler_sample's under a grammar). Speculative decoding (speculative.h) compares the
 * target's and the draft's distributions through it. */
int ork_sampler_probs(struct ork_sampler *s, const float *logits, float *probs);
/* Draw a token from probs[n_vocab] (non-negative weights, any positive sum) with the sampler's
 * RNG; like ork_sampler_sample, the next accept of it advances the grammar. ORK_ERANGE when no
 * weight is positive. */
int32_t ork_sampler_sample_probs(struct ork_sampler *s, const float *probs);
/* A uniform draw in [0, 1) from the sampler's RNG (speculative sampling's acceptance test). */
double ork_sampler_uniform(struct ork_sampler *s);
/* Mark id as the sampler's own choice, as if ork_sampler_sample had returned it (the next
 * accept of id advances the grammar): how an accepted drafted token is recorded. */
void ork_sampler_choose(struct ork_sampler *s, int32_t id);
/* The parameters the sampler was created with. */
const struct ork_sampler_params *ork_sampler_get_params(const struct ork_sampler *s);
/* True when the sampler is greedy (temp <= 0). */
bool ork_sampler_greedy(const struct ork_sampler *s);
/* Record a token in the penalty history (prompt tokens too, if desired). */
void ork_sampler_accept(struct ork_sampler *s, int32_t id);
/* Clear history and re-seed (and restart the grammar). */
void ork_sampler_reset(struct ork_sampler *s);
/* Restart the grammar at its root, keeping the history (a new reply in a chat); an
 * end-of-generation token chosen under the grammar restarts it too. No-op without grammar. */
void ork_sampler_grammar_restart(struct ork_sampler *s);
uint64_t ork_sampler_seed(const struct ork_sampler *s);   /* the effective seed */
/* Candidates a draw keeps, as the board twin charges it (ork_twin_cpu_sample): 1 greedy, k with
 * top-k, 0 the whole vocabulary. */
uint32_t ork_sampler_kept(const struct ork_sampler *s);
/* Apply the repeat/presence/frequency penalties of the current history to logits[n_vocab] in
 * place (the first step of ork_sampler_sample, exposed for tests and diagnostics). */
void ork_sampler_apply_penalties(const struct ork_sampler *s, float *logits);

/* Stop strings: scans generated text incrementally. push() returns how many bytes of the
 * text accumulated so far are safe to emit (not a prefix of any stop string), and sets
 * *stopped when a stop string completed (the emitted text excludes it). */
struct ork_stop;
int ork_stop_create(const char *const *stops, size_t n, struct ork_stop **out);
void ork_stop_free(struct ork_stop *st);
void ork_stop_reset(struct ork_stop *st);
/* Feed `len` bytes; writes emit-safe bytes to out (cap >= len + longest stop) and returns
 * their count; *stopped is set when a stop string matched. */
int ork_stop_push(struct ork_stop *st, const char *text, size_t len, char *out, size_t cap,
                  bool *stopped);
/* At end of generation: the held-back bytes (no stop matched). */
int ork_stop_flush(struct ork_stop *st, char *out, size_t cap);
/* Length of the longest stop string (0 when there are none): push needs cap >= len + this. */
size_t ork_stop_max_len(const struct ork_stop *st);
/* Index (into the array given to create) of the stop string that matched, or -1. */
int ork_stop_matched(const struct ork_stop *st);

#ifdef __cplusplus
}
#endif
#endif
