/* tools/npu_weights_kl.c -- research probe, not libork API: how far the NPU weights' settings
 * (--npu-weights, docs/dcomp.md, docs/w4a8.md) move a model's next-token distribution from the
 * CPU's F32 one, with paired statistics over the same positions.
 *
 *   npu_weights_kl MODEL.gguf TEXT [--ctx N] [--chunks N] SETTING...
 *   SETTING = int8 | dcomp | dcomp:L | w4a8, with "+rotate", "+clip", "+raw", "+calib=FILE"
 *             (--npu-weights-calib FILE) and "+int8=SPEC" (--npu-weights-int8 SPEC) appended
 *             as wanted (e.g. w4a8+clip+rotate, w4a8+rotate+calib=gen.txt+int8=output,qkv)
 *
 * The positions are ork perplexity's (src/cli/cmd_perplexity.c): chunks of N tokens (BOS first
 * when the model wants it), the first half filling the cache, rows N/2 .. N-2 scored. The CPU
 * F32 path (device cpu) is the reference; every setting runs on the simulator without a pack.
 * Per setting:
 *   PPL         exp(mean NLL);
 *   dlogPPL     mean over the positions of NLL(setting) - NLL(first setting), with its paired
 *               standard error (sd of the differences / sqrt(n)): the perplexity ratio to the
 *               first setting is exp(dlogPPL), and a difference within ~2 se is noise;
 *   KL          mean KL(F32 || setting) in nats, with its standard error;
 *   top-1       share of positions whose argmax is the F32 path's.
 * Output: one markdown table row per setting. */
#include <ork-engine/engine.h>
#include <ork-engine/tokenizer.h>
#include <ork/error.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parse setting buf (modified in place: the calibration path and SPEC point into it). */
static int parse_setting(char *buf, struct ork_npu_weights_opts *wo)
{
    memset(wo, 0, sizeof(*wo));
    char *save = NULL;
    char *tok = strtok_r(buf, "+", &save);
    if (!tok)
        return -1;
    if (!strcmp(tok, "int8"))
        wo->encoding = ORK_NPU_WENC_INT8;
    else if (!strcmp(tok, "w4a8"))
        wo->encoding = ORK_NPU_WENC_W4A8;
    else if (!strcmp(tok, "dcomp"))
        wo->encoding = ORK_NPU_WENC_DCOMP;
    else if (!strncmp(tok, "dcomp:", 6)) {
        wo->encoding = ORK_NPU_WENC_DCOMP;
        wo->levels = (uint32_t)atoi(tok + 6);
    } else
        return -1;
    while ((tok = strtok_r(NULL, "+", &save))) {
        if (!strcmp(tok, "rotate"))
            wo->flags |= ORK_NPU_WENC_ROTATE;
        else if (!strcmp(tok, "clip"))
            wo->flags |= ORK_NPU_WENC_CLIP;
        else if (!strcmp(tok, "raw"))
            wo->flags |= ORK_NPU_WENC_RAW_CODES;
        else if (!strncmp(tok, "calib=", 6) && tok[6])
            wo->calib_path = tok + 6;
        else if (!strncmp(tok, "int8=", 5) && tok[5])
            wo->int8_tensors = tok + 5;
        else
            return -1;
    }
    return 0;
}

/* log softmax of row l at token t, and the log-sum-exp. */
static double lse_of(const float *l, int32_t n)
{
    double mx = l[0];
    for (int32_t i = 1; i < n; i++)
        mx = l[i] > mx ? l[i] : mx;
    double s = 0.0;
    for (int32_t i = 0; i < n; i++)
        s += exp((double)l[i] - mx);
    return mx + log(s);
}

static int32_t argmax(const float *l, int32_t n)
{
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        b = l[i] > l[b] ? i : b;
    return b;
}

/* Logits of every scored row of every chunk into out [n_pos][n_vocab]. */
static int eval_all(const char *path, const char *device, const struct ork_npu_weights_opts *wo,
                    int32_t *ids, int32_t n_ctx, int32_t n_chunks, int32_t bos, float *out)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = device;
    mp.no_tokenizer = !(wo && wo->calib_path);     /* a calibration tokenizes its text */
    mp.npu_flags = ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_QUIET;
    if (wo)
        mp.npu_weights = *wo;
    struct ork_model *m;
    int ret = ork_model_load(path, &mp, &m);
    if (ret < 0)
        return ret;
    int32_t nv = ork_model_config(m)->n_vocab, first = n_ctx / 2;
    struct ork_session_params sp = { .ctx_size = n_ctx };
    struct ork_session *s;
    float *l = malloc((size_t)(n_ctx - first) * (size_t)nv * sizeof(float));
    if (!l || (ret = ork_session_create(m, &sp, &s)) < 0) {
        free(l);
        ork_model_free(m);
        return ret < 0 ? ret : -1;
    }
    size_t at = 0;
    for (int32_t c = 0; c < n_chunks && ret == 0; c++) {
        int32_t *chunk = ids + (size_t)c * (size_t)n_ctx, saved = chunk[0];
        if (bos >= 0)
            chunk[0] = bos;
        ork_session_reset(s);
        ret = ork_model_eval(s, chunk, first, 0, NULL, ORK_EVAL_LAST_LOGITS);
        if (ret == 0)
            ret = ork_model_eval(s, chunk + first, n_ctx - first, first, l, ORK_EVAL_ALL_LOGITS);
        chunk[0] = saved;
        for (int32_t j = first; ret == 0 && j < n_ctx - 1; j++, at++)
            memcpy(out + at * (size_t)nv, l + (size_t)(j - first) * (size_t)nv,
                   (size_t)nv * sizeof(float));
    }
    ork_session_free(s);
    free(l);
    ork_model_free(m);
    return ret;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: npu_weights_kl MODEL.gguf TEXT [--ctx N] [--chunks N] "
                        "SETTING...\n");
        return 2;
    }
    const char *path = argv[1], *text_path = argv[2];
    int32_t n_ctx = 64, max_chunks = 8;
    int a = 3;
    for (; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--ctx"))
            n_ctx = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--chunks"))
            max_chunks = atoi(argv[a + 1]);
        else
            break;
    }
    FILE *f = fopen(text_path, "rb");
    if (!f)
        return fprintf(stderr, "cannot open %s\n", text_path), 1;
    fseek(f, 0, SEEK_END);
    long tl = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)tl + 1);
    if (!text || fread(text, 1, (size_t)tl, f) != (size_t)tl)
        return fprintf(stderr, "cannot read %s\n", text_path), 1;
    fclose(f);
    /* the tokenizer of the model (CPU load) */
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = "cpu";
    struct ork_model *m;
    if (ork_model_load(path, &mp, &m) < 0)
        return fprintf(stderr, "cannot load %s\n", path), 1;
    const struct ork_tokenizer *tok = ork_model_tokenizer(m);
    size_t cap = (size_t)tl + 16, n_tok = 0;
    int32_t *ids = malloc(cap * sizeof(int32_t));
    bool add_bos = ork_tokenizer_add_bos(tok) && ork_tokenizer_bos(tok) >= 0;
    int32_t bos = add_bos ? ork_tokenizer_bos(tok) : -1;
    if (!ids || ork_tokenize(tok, text, (size_t)tl, true, false, ids, cap, &n_tok) < 0)
        return fprintf(stderr, "cannot tokenize\n"), 1;
    int32_t nv = ork_model_config(m)->n_vocab;
    ork_model_free(m);
    int32_t n_chunks = (int32_t)(n_tok / (size_t)n_ctx);
    n_chunks = max_chunks > 0 && max_chunks < n_chunks ? max_chunks : n_chunks;
    int32_t first = n_ctx / 2, per = n_ctx - 1 - first;
    size_t n_pos = (size_t)n_chunks * (size_t)per;
    float *ref = malloc(n_pos * (size_t)nv * sizeof(float));
    float *got = malloc(n_pos * (size_t)nv * sizeof(float));
    double *nll0 = malloc(n_pos * sizeof(double)), *nll = malloc(n_pos * sizeof(double));
    if (!ref || !got || !nll0 || !nll)
        return 1;
    if (eval_all(path, "cpu", NULL, ids, n_ctx, n_chunks, bos, ref) < 0)
        return fprintf(stderr, "reference run failed\n"), 1;
    printf("%zu scored positions (%d chunks of %d, rows %d..%d)\n\n", n_pos, n_chunks, n_ctx,
           first, n_ctx - 2);
    printf("| setting | PPL | dlogPPL vs first (paired se) | mean KL vs F32 (se) | top-1 vs F32 "
           "|\n|---|---|---|---|---|\n");
    for (int i = a; i < argc; i++) {
        struct ork_npu_weights_opts wo;
        char buf[1024];
        if (snprintf(buf, sizeof buf, "%s", argv[i]) >= (int)sizeof buf ||
            parse_setting(buf, &wo) < 0)
            return fprintf(stderr, "bad setting '%s'\n", argv[i]), 2;
        if (eval_all(path, "sim", &wo, ids, n_ctx, n_chunks, bos, got) < 0)
            return fprintf(stderr, "%s: run failed: %s\n", argv[i], ork_error_message()), 1;
        double sn = 0, skl = 0, skl2 = 0, sd = 0, sd2 = 0;
        size_t top = 0;
        for (size_t p = 0; p < n_pos; p++) {
            size_t c = p / (size_t)per, j = (size_t)first + p % (size_t)per;
            int32_t t = ids[c * (size_t)n_ctx + j + 1];
            const float *r = ref + p * (size_t)nv, *g = got + p * (size_t)nv;
            double lr = lse_of(r, nv), lg = lse_of(g, nv), kl = 0;
            for (int32_t v = 0; v < nv; v++) {
                double pr = exp((double)r[v] - lr);
                kl += pr * (((double)r[v] - lr) - ((double)g[v] - lg));
            }
            nll[p] = lg - (double)g[t];
            sn += nll[p];
            skl += kl;
            skl2 += kl * kl;
            top += argmax(r, nv) == argmax(g, nv);
            if (i == a)
                nll0[p] = nll[p];
            double d = nll[p] - nll0[p];
            sd += d;
            sd2 += d * d;
        }
        double n = (double)n_pos, mkl = skl / n, md = sd / n;
        double se_kl = sqrt((skl2 / n - mkl * mkl) / n), se_d = sqrt(fmax(sd2 / n - md * md, 0) / n);
        printf("| %s | %.4f | %+.4f (%.4f) | %.4f (%.4f) | %.2f %% |\n", argv[i], exp(sn / n), md,
               se_d, mkl, se_kl, 100.0 * (double)top / n);
        fflush(stdout);
    }
    free(ref);
    free(got);
    free(nll0);
    free(nll);
    free(ids);
    free(text);
    return 0;
}
