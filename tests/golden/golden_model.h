/* golden_model.h -- what the golden tests share: loading a fixture model (the file under
 * fixtures/models/; the test skips when it is absent) without its tokenizer (the goldens are
 * token ids), on the CPU or the simulator; a session; argmax and log-softmax of a logits row;
 * every logit of a sequence evaluated one token at a time (the decode path); and perplexity
 * the way `ork perplexity` scores it. */
#ifndef ORK_GOLDEN_MODEL_H
#define ORK_GOLDEN_MODEL_H

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <ork/error.h>
#include <ork-engine/engine.h>

#include "ork_test.h"

/* Load fixtures/models/<file> into *m (no_repack: keep the GGUF row layout, else the default
 * interleaving for the CPU kernels); on failure print the reason and return the error. */
static inline int golden_load_model_layout(const char *file, bool no_repack, struct ork_model **m)
{
    char rel[256];
    snprintf(rel, sizeof rel, "models/%s", file);
    const char *path = ork_test_fixture(rel);
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.no_tokenizer = true;
    mp.no_repack = no_repack;
    int ret = ork_model_load(path, &mp, m);
    if (ret < 0)
        fprintf(stderr, "load %s: %s\n", file, ork_error_describe(ret));
    return ret;
}

static inline int golden_load_model(const char *file, struct ork_model **m)
{
    return golden_load_model_layout(file, false, m);
}

/* Load the model at path on device ("cpu", "sim"), NPU executor flags | NO_PACK | QUIET (never
 * a pack beside the fixture), max_m rows per NPU matmul and domain_bytes per IOMMU domain (0:
 * defaults); NULL with the reason printed on failure. */
static inline struct ork_model *golden_load_device(const char *path, const char *device,
                                                   uint32_t flags, int max_m,
                                                   uint64_t domain_bytes)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.npu_max_m = max_m;
    mp.npu_domain_bytes = domain_bytes;
    mp.device = device;
    mp.npu_flags = flags | ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_QUIET;
    struct ork_model *m = NULL;
    if (ork_model_load(path, &mp, &m) < 0)
        fprintf(stderr, "load %s on %s: %s\n", path, device, ork_error_message());
    return m;
}

/* A session of ctx positions on one thread; NULL with the reason printed on failure. */
static inline struct ork_session *golden_session(struct ork_model *m, int ctx)
{
    struct ork_session_params sp;
    ork_session_params_default(&sp);
    sp.ctx_size = ctx;
    sp.n_threads = 1;
    struct ork_session *s = NULL;
    if (ork_session_create(m, &sp, &s) < 0)
        fprintf(stderr, "session: %s\n", ork_error_message());
    return s;
}

static inline int golden_argmax(const float *x, int n)
{
    int b = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[b])
            b = i;
    return b;
}

static inline void golden_log_softmax(const float *x, int n, double *out)
{
    double mx = x[0], z = 0;
    for (int i = 1; i < n; i++)
        mx = x[i] > mx ? x[i] : mx;
    for (int i = 0; i < n; i++)
        z += exp((double)x[i] - mx);
    double lz = mx + log(z);
    for (int i = 0; i < n; i++)
        out[i] = (double)x[i] - lz;
}

/* All logits (n, nv) of ids[0..n) evaluated one token at a time (decode path, M = 1) in a fresh
 * session; *expert_bytes (may be NULL) receives the MoE expert bytes read. */
static inline int golden_eval_all(struct ork_model *m, const int32_t *ids, int n, float *logits,
                                  int nv, uint64_t *expert_bytes)
{
    struct ork_session *s = golden_session(m, 128);
    if (!s)
        return -1;
    int ret = 0;
    for (int i = 0; i < n && ret == 0; i++)
        ret = ork_model_eval(s, &ids[i], 1, i, logits + (size_t)i * nv, 0);
    if (expert_bytes)
        *expert_bytes = ork_session_expert_bytes(s);
    ork_session_free(s);
    return ret;
}

/* Perplexity of toks as `ork perplexity` scores it: chunks of ctx tokens (at most n_chunks),
 * each evaluated from position 0, its second half scored. -1 when nothing was scored. */
static inline double golden_perplexity(struct ork_model *m, const int32_t *toks, int n_tok,
                                       int ctx, int n_chunks)
{
    int nv = ork_model_config(m)->n_vocab;
    float *lg = malloc((size_t)ctx * nv * sizeof(float));
    struct ork_session *s = golden_session(m, ctx);
    double nll = 0;
    long cnt = 0;
    for (int c = 0; c < n_chunks && (c + 1) * ctx <= n_tok && s && lg; c++) {
        const int32_t *t = toks + (size_t)c * ctx;
        if (ork_model_eval(s, t, ctx, 0, lg, ORK_EVAL_ALL_LOGITS) < 0)
            break;
        for (int i = ctx / 2; i < ctx - 1; i++) {
            const float *x = lg + (size_t)i * nv;
            double mx = x[0], z = 0;
            for (int j = 1; j < nv; j++)
                mx = x[j] > mx ? x[j] : mx;
            for (int j = 0; j < nv; j++)
                z += exp((double)x[j] - mx);
            nll -= (double)x[t[i + 1]] - mx - log(z);
            cnt++;
        }
    }
    ork_session_free(s);
    free(lg);
    return cnt ? exp(nll / (double)cnt) : -1;
}

#endif
