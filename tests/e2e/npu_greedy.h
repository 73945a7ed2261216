/* npu_greedy.h -- the NPU weights tests' common parts (header-only): the params of a model on
 * the simulator with a weights setting, a prompt's last logits followed by greedy decode steps,
 * and the checks of a refused setting (CLI values, a load). Included by
 * tests/e2e/test_npu_{dcomp,dcomp_policy,int8_keep,rotate,w4a8}.c. */
#ifndef ORK_TEST_NPU_GREEDY_H
#define ORK_TEST_NPU_GREEDY_H

#include "ork_test.h"

#include <ork-engine/engine.h>
#include <ork/error.h>

#include <stddef.h>
#include <stdint.h>

/* Params for `device` without a tokenizer, quiet, with executor flags `flags` (e.g.
 * ORK_NPU_EXEC_NO_PACK) and the weights setting wo (NULL: the default). */
static inline void npu_greedy_params(struct ork_model_params *mp, const char *device,
                                     uint32_t flags, const struct ork_npu_weights_opts *wo)
{
    ork_model_params_default(mp);
    mp->device = device;
    mp->no_tokenizer = true;
    mp->npu_flags = flags | ORK_NPU_EXEC_QUIET;
    if (wo)
        mp->npu_weights = *wo;
}

/* Load `path` with mp, evaluate prompt[0..n_prompt), then n_decode greedy steps: out gets the
 * prompt's last logits and each step's, (n_decode + 1) x n_vocab. The token fed at step t is
 * feed[t] when feed is given, else the greedy pick; toks (may be NULL) gets the picks and
 * resident (may be NULL) the executor's resident bytes. 0 or an error. */
static inline int npu_greedy_run(const char *path, const struct ork_model_params *mp,
                                 const int32_t *prompt, int n_prompt, int n_decode,
                                 int32_t n_vocab, const int32_t *feed, float *out,
                                 int32_t *toks, uint64_t *resident)
{
    struct ork_model *m;
    int ret = ork_model_load(path, mp, &m);
    if (ret < 0)
        return ret;
    struct ork_session *s;
    if ((ret = ork_session_create(m, NULL, &s)) == 0) {
        ret = ork_model_eval(s, prompt, n_prompt, 0, out, 0);
        for (int t = 0; ret == 0 && t < n_decode; t++) {
            const float *l = out + (size_t)t * (size_t)n_vocab;
            int32_t best = 0;
            for (int32_t i = 1; i < n_vocab; i++)
                best = l[i] > l[best] ? i : best;
            if (toks)
                toks[t] = best;
            int32_t next = feed ? feed[t] : best;
            ret = ork_model_eval(s, &next, 1, n_prompt + t,
                                 out + (size_t)(t + 1) * (size_t)n_vocab, 0);
        }
        ork_session_free(s);
    }
    struct ork_npu_exec_stats st;
    if (ret == 0 && resident && ork_model_npu_stats(m, &st) == 0)
        *resident = st.resident_bytes;
    ork_model_free(m);
    return ret;
}

/* A model path `dir`/m.gguf linked to the fixture at rel (skipped when absent) and its pack path
 * `dir`/m.orkpack with no pack there yet (model, pack: cap bytes each). 0, or -1. */
static inline int npu_pack_paths(const char *dir, const char *rel, char *model, char *pack,
                                 size_t cap)
{
    const char *fx = ork_test_fixture(rel);
    snprintf(model, cap, "%s/m.gguf", dir);
    snprintf(pack, cap, "%s/m.orkpack", dir);
    if (symlink(fx, model) != 0 && access(model, R_OK) != 0)
        return -1;
    unlink(pack);
    return 0;
}

/* The CLI refuses each --npu-weights value of vals[0..n) with exit status 2, naming the value
 * and the choices (the message holds `choices`). */
static inline void npu_check_bad_weights_values(const char *const *vals, size_t n,
                                                const char *choices)
{
    for (size_t i = 0; i < n; i++) {
        char cmd[1024], out[1024], want[128];
        snprintf(cmd, sizeof cmd, "%s %s/ork run -m x.gguf --npu-weights '%s' 2>&1",
                 ORK_TEST_RUNNER, ORK_BINARY_DIR, vals[i]);
        int st = ork_test_shell(cmd, out, sizeof out);
        snprintf(want, sizeof want, "invalid value '%s' for --npu-weights", vals[i]);
        CHECK(strstr(out, want) != NULL);
        CHECK(strstr(out, choices) != NULL);
        CHECK_EQ_INT(st, 2);
    }
}

/* A load of the fixture at rel on the simulator with setting wo fails with ORK_EINVAL and
 * leaves no model (no silent int8). */
static inline void npu_check_load_refused(const char *rel, const struct ork_npu_weights_opts *wo)
{
    struct ork_model_params mp;
    npu_greedy_params(&mp, "sim", ORK_NPU_EXEC_NO_PACK, wo);
    struct ork_model *m = NULL;
    CHECK(ork_model_load(ork_test_fixture(rel), &mp, &m) == ORK_EINVAL);
    CHECK(m == NULL);
}

#endif
