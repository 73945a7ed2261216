/* cmd_perplexity.c -- `ork perplexity`: perplexity of a text file, by the method llama.cpp's
 * perplexity tool uses (so numbers are comparable): tokenize the whole file (BOS as the model
 * wants), cut it into chunks of n_ctx tokens, evaluate each chunk from an empty cache with its
 * first token replaced by BOS, and score only the second half of each chunk: the mean of
 * -log softmax(logits[j])[token j+1] for j from n_ctx/2 to n_ctx-2. Prints the running
 * perplexity after each chunk and "PPL = x +/- y" (the error is the standard error of the mean
 * NLL, scaled by the perplexity). */
#include "cli.h"
#include "cmd_run.h"

#include <ork/alloc.h>
#include <ork/error.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CMD "perplexity"
#define PPL_DEFAULT_CTX 512     /* llama.cpp's default context for perplexity runs */

static void usage(FILE *out)
{
    fprintf(out, "usage: ork perplexity -m MODEL -f FILE [-c N_CTX] [options]\n\n"
                 "Perplexity of a text file, scored on the second half of each chunk of N_CTX\n"
                 "tokens (llama.cpp's method).\n\n"
                 "options:\n"
                 "  -f, --file FILE           text to score [required]\n"
                 "  --chunks N                score at most N chunks (default: all)\n"
                 "  --ref-device DEV          evaluate every chunk on DEV too (e.g. cpu) and\n"
                 "                            report DEV's perplexity and the teacher-forced\n"
                 "                            top-1 agreement of the two (same model, flags)\n"
                 "  (-c defaults to 512 here)\n");
    ork_cli_gen_help(out, false);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = ork_malloc(cap);
    while (buf) {
        if (n + 1 >= cap) {
            char *nb = ork_realloc(buf, cap * 2);
            if (!nb) {
                ork_free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t r = fread(buf + n, 1, cap - 1 - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (buf && ferror(f)) {
        ork_free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) {
        buf[n] = 0;
        *len = n;
    }
    return buf;
}

static int32_t argmax_of(const float *logits, int32_t n_vocab)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n_vocab; i++)
        best = logits[i] > logits[best] ? i : best;
    return best;
}

/* -log softmax(logits)[target], in double. */
static double nll_of(const float *logits, int32_t n_vocab, int32_t target)
{
    double mx = logits[0];
    for (int32_t i = 1; i < n_vocab; i++)
        mx = logits[i] > mx ? logits[i] : mx;
    double z = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        z += exp((double)logits[i] - mx);
    return -((double)logits[target] - mx - log(z));
}

/* Evaluate one chunk from an empty cache: the first half fills it, the rest gives logits. */
static int eval_chunk(struct ork_session *s, const int32_t *chunk, int32_t n_ctx, int32_t first,
                      float *logits)
{
    ork_session_reset(s);
    int ret = ork_model_eval(s, chunk, first, 0, NULL, ORK_EVAL_LAST_LOGITS);
    if (ret == 0)
        ret = ork_model_eval(s, chunk + first, n_ctx - first, first, logits, ORK_EVAL_ALL_LOGITS);
    return ret;
}

/* The whole text as token ids (BOS as asked), *ids malloc'd. */
static int tokenize_all(const struct ork_tokenizer *tok, const char *text, size_t text_len,
                        bool bos, int32_t **ids, size_t *n_tok)
{
    size_t cap = text_len + 2;   /* a token covers at least one byte, plus BOS */
    if (!(*ids = ork_malloc(cap * sizeof(int32_t))))
        return ORK_ENOMEM;
    int ret = ork_tokenize(tok, text, text_len, bos, false, *ids, cap, n_tok);
    if (ret == ORK_ENOSPC) {
        ork_free(*ids);
        cap = *n_tok;
        if (!(*ids = ork_malloc(cap * sizeof(int32_t))))
            return ORK_ENOMEM;
        ret = ork_tokenize(tok, text, text_len, bos, false, *ids, cap, n_tok);
    }
    return ret;
}

/* --ref-device: the same model and options on dev, int8 NPU weights (the reference). */
static int ref_setup(const struct ork_cli_gen_opts *o, const char *dev, struct ork_model **rm,
                     struct ork_session **rs)
{
    struct ork_cli_gen_opts ro = *o;
    ro.model_params.device = dev;
    ro.model_params.npu_weights = (struct ork_npu_weights_opts){ 0 };
    ro.model_params.load = ORK_LOAD_AUTO;
    return ork_cli_gen_setup(CMD, &ro, rm, rs, NULL);
}

/* Running sums of the scored positions: the NLL (and its square), the reference's NLL and the
 * positions where both pick the same top-1 token. */
struct ppl_sums {
    double nll, nll2, rnll;
    long long count, agree;
};

/* Score rows first..n_ctx-2 of a chunk (logits row j - first predicts token j + 1). */
static void score_chunk(struct ppl_sums *ps, const int32_t *chunk, int32_t n_ctx, int32_t first,
                        int32_t n_vocab, const float *logits, const float *rlogits)
{
    for (int32_t j = first; j < n_ctx - 1; j++) {
        const float *a = logits + (size_t)(j - first) * (size_t)n_vocab;
        double v = nll_of(a, n_vocab, chunk[j + 1]);
        ps->nll += v;
        ps->nll2 += v * v;
        ps->count++;
        if (rlogits) {
            const float *b = rlogits + (size_t)(j - first) * (size_t)n_vocab;
            ps->agree += argmax_of(a, n_vocab) == argmax_of(b, n_vocab);
            ps->rnll += nll_of(b, n_vocab, chunk[j + 1]);
        }
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int ork_cmd_perplexity(int argc, char **argv)
{
    struct ork_cli_gen_opts o;
    ork_cli_gen_opts_default(&o);
    const char *file = NULL;
    long long max_chunks = -1;
    const char *ref_dev = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        int r = ork_cli_gen_opt(CMD, argc, argv, &i, &o);
        if (r < 0)
            return ORK_EXIT_USAGE;
        if (r > 0)
            continue;
        if (!strcmp(a, "-f") || !strcmp(a, "--file")) {
            if (!(file = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--ref-device")) {
            if (!(ref_dev = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
            if (!ork_cli_device_valid(ref_dev)) {
                fprintf(stderr, "ork %s: invalid value '%s' for --ref-device: must be a device "
                        "of --device (see ork %s --help)\n", CMD, ref_dev, CMD);
                return ORK_EXIT_USAGE;
            }
        } else if (!strcmp(a, "--chunks")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v || !ork_cli_parse_int(CMD, a, v, 1, INT32_MAX, &max_chunks))
                return ORK_EXIT_USAGE;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        }
    }
    if (!o.model || !file) {
        fprintf(stderr, "ork %s: -m MODEL and -f FILE are required (see ork %s --help)\n", CMD,
                CMD);
        return ORK_EXIT_USAGE;
    }
    if (o.session.ctx_size == 0)
        o.session.ctx_size = PPL_DEFAULT_CTX;
    int32_t n_ctx = o.session.ctx_size;
    if (n_ctx < 4) {
        fprintf(stderr, "ork %s: -c must be at least 4 for perplexity\n", CMD);
        return ORK_EXIT_USAGE;
    }

    size_t text_len = 0;
    char *text = read_all(file, &text_len);
    if (!text) {
        fprintf(stderr, "ork %s: cannot read '%s'\n", CMD, file);
        return ORK_EXIT_ERROR;
    }
    struct ork_model *m;
    struct ork_session *s;
    int rc = ork_cli_gen_setup(CMD, &o, &m, &s, NULL);
    if (rc) {
        ork_free(text);
        return rc;
    }
    struct ork_model *rm = NULL;        /* the reference (--ref-device), its own session */
    struct ork_session *rs = NULL;
    if (ref_dev && (rc = ref_setup(&o, ref_dev, &rm, &rs)) != 0) {
        ork_session_free(s);
        ork_model_free(m);
        ork_free(text);
        return rc;
    }
    const struct ork_tokenizer *tok = ork_model_tokenizer(m);
    int32_t n_vocab = ork_model_config(m)->n_vocab;
    bool add_bos = !o.no_bos && ork_tokenizer_add_bos(tok) && ork_tokenizer_bos(tok) >= 0;
    size_t n_tok = 0;
    int32_t *ids = NULL;
    float *logits = NULL, *rlogits = NULL;
    int ret = tokenize_all(tok, text, text_len, !o.no_bos, &ids, &n_tok);
    if (ret < 0)
        goto err;
    if (n_tok < 2 * (size_t)n_ctx) {
        fprintf(stderr, "ork %s: '%s' has %zu tokens; at least %d (2 x the context %d) are needed\n",
                CMD, file, n_tok, 2 * n_ctx, n_ctx);
        rc = ORK_EXIT_ERROR;
        goto out;
    }
    int32_t n_chunks = (int32_t)(n_tok / (size_t)n_ctx);
    if (max_chunks > 0 && max_chunks < n_chunks)
        n_chunks = (int32_t)max_chunks;
    int32_t first = n_ctx / 2;
    size_t lbytes = (size_t)(n_ctx - first) * (size_t)n_vocab * sizeof(float);
    if (!(logits = ork_malloc(lbytes)) || (rs && !(rlogits = ork_malloc(lbytes)))) {
        ret = ORK_ENOMEM;
        goto err;
    }
    fprintf(stderr, "perplexity: %zu tokens, %d chunks of %d, batch %d, scoring tokens %d..%d of "
            "each chunk\n", n_tok, n_chunks, n_ctx, ork_session_n_batch(s), n_ctx / 2, n_ctx - 1);

    struct ppl_sums ps = { 0 };
    double t0 = now_s();
    for (int32_t c = 0; c < n_chunks; c++) {
        int32_t *chunk = ids + (size_t)c * (size_t)n_ctx;
        int32_t saved = chunk[0];
        if (add_bos)
            chunk[0] = ork_tokenizer_bos(tok);
        /* the first half only fills the cache; logits are needed from row `first` on */
        ret = eval_chunk(s, chunk, n_ctx, first, logits);
        if (ret == 0 && rs)
            ret = eval_chunk(rs, chunk, n_ctx, first, rlogits);
        chunk[0] = saved;
        if (ret < 0)
            goto err;
        score_chunk(&ps, chunk, n_ctx, first, n_vocab, logits, rs ? rlogits : NULL);
        printf("[%d]%.4f,", c + 1, exp(ps.nll / (double)ps.count));
        fflush(stdout);
    }
    printf("\n");
    double secs = now_s() - t0;
    long long count = ps.count;
    double mean = ps.nll / (double)count;
    double ppl = exp(mean);
    double var = ps.nll2 / (double)count - mean * mean;
    double err = var > 0 && count > 1 ? sqrt(var / (double)(count - 1)) * ppl : 0.0;
    printf("PPL = %.4f +/- %.5f\n", ppl, err);
    if (rs)
        printf("reference (%s): PPL = %.4f; top-1 agreement %.2f %% (%lld of %lld tokens)\n",
               ref_dev, exp(ps.rnll / (double)count), 100.0 * (double)ps.agree / (double)count,
               ps.agree, count);
    if (o.profile)
        ork_cli_npu_report(stderr, m);
    fprintf(stderr, "perplexity: %lld tokens scored in %.2f s (%.0f tok/s evaluated)\n", count, secs,
            secs > 0 ? (double)n_chunks * n_ctx / secs : 0.0);
    goto out;
err:
    ork_cli_error(CMD, ret);
    rc = ORK_EXIT_ERROR;
out:
    ork_free(logits);
    ork_free(rlogits);
    ork_free(ids);
    ork_session_free(s);
    ork_model_free(m);
    ork_session_free(rs);
    ork_model_free(rm);
    ork_free(text);
    return rc;
}
