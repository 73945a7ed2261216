/* dcomp_grids.c -- weight grids for the NPU weight decompressor, measured on a GGUF's tensors
 * (docs/dcomp.md, docs/bench-log/2026-dcomp.md). For every 2-D tensor (W[n][k], k = ne[0]):
 * per grid L (codes in [-L, L], per-output-channel scales) the rel-RMSE against the source
 * weights for plain max-abs rounding, for the least-error clipping, and for the clipping after
 * a Hadamard rotation of K; the stream bits per weight the encoder achieves on those codes;
 * the coarsest grid within --max-err. Host-side; no device.
 *
 *   dcomp_grids MODEL.gguf [--max-err 0.05] [--match SUBSTR] [--hadamard-max B] [--cores C]
 *   dcomp_grids --random gauss|t5 [--k K] [--n N] [--codec-speed]   one seeded random W
 *       (Gaussian or Student-t with 5 degrees of freedom), to compare with the estimate of spec
 *       npu-weight-decompression.md §1.8 (K = 1024, N = 256 there); --codec-speed also times
 *       the host encoder and decoder on its L = 15 codes as one block (host wall time)
 *   dcomp_grids QUANT.gguf --against SOURCE.gguf   the rel-RMSE of QUANT's own block-quantised
 *       tensors (e.g. Q4_0, Q8_0) against SOURCE's same-named ones, for comparison with the grids
 */
#include <ork-engine/gguf.h>
#include <ork-kernels/kernels.h>
#include <ork/dcomp.h>
#include <ork/error.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Default error bound of the pick: rel-RMSE 5 %, about what per-channel int8 of real LLM
 * weights shows at L = 31 (docs/bench-log/2026-dcomp.md); a user choice, not a quality claim. */
#define DEFAULT_MAX_ERR 0.05
#define VARIANTS 3

struct opts {
    const char *path, *match, *random, *against;
    double max_err;
    uint32_t had_max, cores, k, n;
    bool codec_speed;
};

/* Totals per variant and grid over the tensors measured. */
struct totals {
    double err2[VARIANTS][ORK_DCOMP_N_GRIDS], ref2;
    double bytes[VARIANTS][ORK_DCOMP_N_GRIDS], weights, picked_bytes;
    uint32_t tensors;
};

static const char *variant_name[VARIANTS] = { "rtn", "clip", "had+clip" };

static int usage(void)
{
    fprintf(stderr, "usage: dcomp_grids MODEL.gguf [--max-err E] [--match SUBSTR] "
                    "[--hadamard-max B] [--cores C]\n"
                    "       dcomp_grids --random gauss|t5 [--k K] [--n N] [--codec-speed] "
                    "[same options]\n"
                    "       dcomp_grids QUANT.gguf --against SOURCE.gguf [--match SUBSTR]\n");
    return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){ .max_err = DEFAULT_MAX_ERR, .cores = 1, .k = 1024, .n = 256 };
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-err") && i + 1 < argc)
            o->max_err = atof(argv[++i]);
        else if (!strcmp(argv[i], "--match") && i + 1 < argc)
            o->match = argv[++i];
        else if (!strcmp(argv[i], "--hadamard-max") && i + 1 < argc)
            o->had_max = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cores") && i + 1 < argc)
            o->cores = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--against") && i + 1 < argc)
            o->against = argv[++i];
        else if (!strcmp(argv[i], "--codec-speed"))
            o->codec_speed = true;
        else if (!strcmp(argv[i], "--random") && i + 1 < argc)
            o->random = argv[++i];
        else if (!strcmp(argv[i], "--k") && i + 1 < argc)
            o->k = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc)
            o->n = (uint32_t)atoi(argv[++i]);
        else if (argv[i][0] != '-' && !o->path)
            o->path = argv[i];
        else
            return -1;
    }
    if (o->random && strcmp(o->random, "gauss") && strcmp(o->random, "t5"))
        return -1;
    return (o->path || o->random) && o->k && o->n ? 0 : -1;
}

/* Seeded normals (xorshift64 + Box-Muller) for --random. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double uniform01(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
    return sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01());
}

/* Student-t with 5 degrees of freedom: z / sqrt(chi2_5 / 5). */
static double student_t5(void)
{
    double c = 0.0;
    for (int i = 0; i < 5; i++) {
        double z = normal();
        c += z * z;
    }
    return normal() / sqrt(c / 5.0);
}

/* Stream bytes of codes q on the --cores split (ork_dcomp_grid_pick measures one core). */
static double split_bytes(const int8_t *q, uint32_t n, uint32_t k, uint32_t cores)
{
    struct ork_dcomp_weights dw;
    const struct ork_dcomp_weights_desc d = {
        .struct_size = sizeof d, .k = k, .n = n, .w = q, .max_m = 1, .cores = cores,
    };
    if (ork_dcomp_weights_encode(&d, &dw) != 0)
        return NAN;
    double b = (double)dw.bytes;
    ork_dcomp_weights_fini(&dw);
    return b;
}

/* Dequantise a GGUF tensor into a new float W[n][k]. */
static float *load_tensor(const struct ork_gguf_tensor *t)
{
    const uint32_t k = (uint32_t)t->ne[0], n = (uint32_t)t->ne[1];
    const size_t rb = ork_type_row_bytes(t->type, k);
    float *w = malloc((size_t)n * k * sizeof *w);
    int ret = w ? 0 : ORK_ENOMEM;
    for (uint32_t r = 0; r < n && ret == 0; r++)
        ret = ork_dequant_row(t->type, (const uint8_t *)t->data + (size_t)r * rb,
                              w + (size_t)r * k, k);
    if (ret != 0) {
        fprintf(stderr, "%s: %s\n", t->name, ork_error_message());
        free(w);
        return NULL;
    }
    return w;
}

/* Measure W[n][k] (consumed: freed here). */
static int measure(const char *name, float *w, uint32_t n, uint32_t k, const struct opts *o,
                   struct totals *tot)
{
    const size_t nk = (size_t)n * k;
    int ret = 0;
    const uint32_t hb = ork_dcomp_hadamard_block(k, o->had_max);
    struct ork_dcomp_grid_result res[VARIANTS][ORK_DCOMP_N_GRIDS];
    uint32_t picked[VARIANTS];
    bool met[VARIANTS];
    for (uint32_t v = 0; v < VARIANTS && ret == 0; v++) {
        const struct ork_dcomp_grid_opts go = {
            .quant_flags = v ? ORK_DCOMP_QUANT_CLIP : 0,
            .hadamard_block = v == 2 ? hb : 0,
            .max_rel_rmse = o->max_err,
        };
        ret = ork_dcomp_grid_pick(w, n, k, &go, res[v], &picked[v], &met[v]);
    }
    double ref2 = 0.0;
    for (size_t i = 0; i < nk; i++)
        ref2 += (double)w[i] * w[i];
    if (ret == 0 && o->cores > 1) {        /* re-measure the clip codes on the core split */
        int8_t *q = malloc(nk);
        float *sc = malloc(n * sizeof *sc);
        for (uint32_t g = 0; q && sc && g < ORK_DCOMP_N_GRIDS; g++)
            if (ork_dcomp_quantize(w, n, k, ork_dcomp_grids[g], ORK_DCOMP_QUANT_CLIP, q, sc) == 0) {
                res[1][g].bytes = (uint64_t)split_bytes(q, n, k, o->cores);
                res[1][g].bpw = 8.0 * (double)res[1][g].bytes / (double)nk;
            }
        free(q);
        free(sc);
    }
    free(w);
    if (ret != 0) {
        fprintf(stderr, "%s: %s\n", name, ork_error_message());
        return ret;
    }
    for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++) {
        printf("%-28s %6u %6u %5u %4u  %.5f  %.5f  %.5f   %.3f  %.3f  %.3f\n", name, n, k, hb,
               ork_dcomp_grids[g], res[0][g].rel_rmse, res[1][g].rel_rmse, res[2][g].rel_rmse,
               res[0][g].bpw, res[1][g].bpw, res[2][g].bpw);
        for (uint32_t v = 0; v < VARIANTS; v++) {
            tot->err2[v][g] += res[v][g].rel_rmse * res[v][g].rel_rmse * ref2;
            tot->bytes[v][g] += (double)res[v][g].bytes;
        }
    }
    printf("%-28s pick (clip, rel-RMSE <= %.4f): L = %u%s, %.3f bpw\n", name, o->max_err,
           ork_dcomp_grids[picked[1]], met[1] ? "" : " (bound not met)", res[1][picked[1]].bpw);
    tot->picked_bytes += (double)res[1][picked[1]].bytes;
    tot->ref2 += ref2;
    tot->weights += (double)nk;
    tot->tensors++;
    return 0;
}

static void print_totals(const struct totals *t, const struct opts *o)
{
    printf("\n# all %u tensors (%.0f weights): rel-RMSE over the whole set, stream bpw "
           "(scales excluded)\n", t->tensors, t->weights);
    printf("#    L  rmse_rtn  rmse_clip  rmse_had   bpw_rtn  bpw_clip  bpw_had\n");
    for (uint32_t g = 0; g < ORK_DCOMP_N_GRIDS; g++) {
        printf("total %4u  %.5f  %.5f  %.5f   %.3f  %.3f  %.3f\n", ork_dcomp_grids[g],
               sqrt(t->err2[0][g] / t->ref2), sqrt(t->err2[1][g] / t->ref2),
               sqrt(t->err2[2][g] / t->ref2), 8 * t->bytes[0][g] / t->weights,
               8 * t->bytes[1][g] / t->weights, 8 * t->bytes[2][g] / t->weights);
    }
    printf("total pick (clip, rel-RMSE <= %.4f per tensor): %.3f bpw on %u core(s)\n",
           o->max_err, 8 * t->picked_bytes / t->weights, o->cores);
}

static void print_header(const char *what)
{
    printf("# %s: per tensor and grid L, rel-RMSE (%s / %s / %s) and stream bits per weight\n",
           what, variant_name[0], variant_name[1], variant_name[2]);
    printf("# %-26s %6s %6s %5s %4s  %-7s  %-7s  %-7s   %-5s  %-5s  %-5s\n", "tensor", "n", "k",
           "had", "L", "rtn", "clip", "had", "bpw", "bpw_c", "bpw_h");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Host encode and decode rate of W's L = 15 codes as one block (n, k multiples of 32): the
 * median of CODEC_RUNS runs each, in MB of int8 weights a second. */
#define CODEC_RUNS 5
#define CODEC_LEVELS 15u

static int codec_speed(const float *w, uint32_t n, uint32_t k)
{
    if (n % ORK_DCOMP_TILE || k % ORK_DCOMP_TILE)
        return fprintf(stderr, "--codec-speed: n and k must be multiples of 32\n"), 1;
    const size_t nk = (size_t)n * k;
    const uint64_t cap = ork_dcomp_block_bound(k, n);
    int8_t *q = malloc(nk);
    float *sc = malloc(n * sizeof *sc);
    uint8_t *enc = malloc(cap), *back = malloc(nk);
    int rc = 1;
    struct ork_dcomp_regs regs;
    struct ork_dcomp_block_info info;
    double te[CODEC_RUNS], td[CODEC_RUNS];
    /* the codes as the bytes of a block: the rate does not depend on where each code sits */
    if (!q || !sc || !enc || !back ||
        ork_dcomp_quantize(w, n, k, CODEC_LEVELS, 0, q, sc) != 0)
        goto out;
    for (int r = 0; r < CODEC_RUNS; r++) {
        double t0 = now_s();
        if (ork_dcomp_block_encode((const uint8_t *)q, k, n, ORK_DCOMP_ENCODE_FORCE, enc, cap,
                                   &regs, &info) != 0)
            goto out;
        double t1 = now_s();
        if (ork_dcomp_block_decode(enc, info.bytes, k, n, &regs, NULL, back) != 0 ||
            memcmp(back, q, nk) != 0)
            goto out;
        te[r] = t1 - t0;
        td[r] = now_s() - t1;
    }
    for (int a = 0; a < CODEC_RUNS; a++)          /* sort both for the medians */
        for (int b = a + 1; b < CODEC_RUNS; b++) {
            if (te[b] < te[a]) { double x = te[a]; te[a] = te[b]; te[b] = x; }
            if (td[b] < td[a]) { double x = td[a]; td[a] = td[b]; td[b] = x; }
        }
    printf("codec (host wall time, L = %u, %u x %u block, %.3f bpw): encode %.1f MB/s, decode "
           "%.1f MB/s (median of %d)\n", CODEC_LEVELS, k, n, 8.0 * (double)info.bytes / (double)nk,
           (double)nk / te[CODEC_RUNS / 2] / 1e6, (double)nk / td[CODEC_RUNS / 2] / 1e6,
           CODEC_RUNS);
    rc = 0;
out:
    free(q);
    free(sc);
    free(enc);
    free(back);
    return rc;
}

static int run_random(const struct opts *o)
{
    const size_t nk = (size_t)o->n * o->k;
    float *w = malloc(nk * sizeof *w);
    if (!w)
        return 1;
    const bool t5 = !strcmp(o->random, "t5");
    for (size_t i = 0; i < nk; i++)
        w[i] = (float)(t5 ? student_t5() : normal());
    char name[64];
    snprintf(name, sizeof name, "random-%s", o->random);
    print_header(name);
    if (o->codec_speed && codec_speed(w, o->n, o->k) != 0) {
        free(w);
        return 1;
    }
    struct totals tot;
    memset(&tot, 0, sizeof tot);
    return measure(name, w, o->n, o->k, o, &tot) == 0 ? 0 : 1;
}

/* --against: rel-RMSE of every 2-D tensor of g against the same-named tensor of the source. */
static int run_against(struct ork_gguf *g, const struct opts *o)
{
    struct ork_gguf *src;
    if (ork_gguf_open(o->against, &src) != 0) {
        fprintf(stderr, "dcomp_grids: %s: %s\n", o->against, ork_error_message());
        return 1;
    }
    printf("# %s against %s: rel-RMSE of the file's own quantisation\n", o->path, o->against);
    double err2 = 0.0, ref2 = 0.0;
    int rc = 0;
    for (uint64_t i = 0; i < ork_gguf_n_tensors(g) && rc == 0; i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        const struct ork_gguf_tensor *r = ork_gguf_tensor_find(src, t->name);
        if (t->n_dims != 2 || t->ne[1] < 2 || (o->match && !strstr(t->name, o->match)) || !r ||
            r->ne[0] != t->ne[0] || r->ne[1] != t->ne[1])
            continue;
        float *a = load_tensor(t), *b = load_tensor(r);
        double e = 0.0, f = 0.0;
        for (size_t j = 0; a && b && j < (size_t)t->ne[0] * t->ne[1]; j++) {
            double d = (double)a[j] - b[j];
            e += d * d;
            f += (double)b[j] * b[j];
        }
        if (!a || !b)
            rc = 1;
        else
            printf("%-28s %6u %6u %-5s %.5f\n", t->name, (uint32_t)t->ne[1], (uint32_t)t->ne[0],
                   ork_type_name(t->type), f > 0 ? sqrt(e / f) : 0.0);
        err2 += e;
        ref2 += f;
        free(a);
        free(b);
    }
    if (ref2 > 0)
        printf("total rel-RMSE %.5f\n", sqrt(err2 / ref2));
    ork_gguf_close(src);
    return rc;
}

int main(int argc, char **argv)
{
    struct opts o;
    if (parse(argc, argv, &o) != 0)
        return usage();
    if (o.random)
        return run_random(&o);
    struct ork_gguf *g;
    if (ork_gguf_open(o.path, &g) != 0) {
        fprintf(stderr, "dcomp_grids: %s: %s\n", o.path, ork_error_message());
        return 1;
    }
    if (o.against) {
        int r = run_against(g, &o);
        ork_gguf_close(g);
        return r;
    }
    print_header(o.path);
    struct totals tot;
    memset(&tot, 0, sizeof tot);
    int rc = 0;
    for (uint64_t i = 0; i < ork_gguf_n_tensors(g) && rc == 0; i++) {
        const struct ork_gguf_tensor *t = ork_gguf_tensor_at(g, i);
        if (t->n_dims != 2 || t->ne[1] < 2 || (o.match && !strstr(t->name, o.match)))
            continue;
        float *w = load_tensor(t);
        rc = w && measure(t->name, w, (uint32_t)t->ne[1], (uint32_t)t->ne[0], &o, &tot) == 0 ? 0 : 1;
    }
    if (tot.tensors)
        print_totals(&tot, &o);
    ork_gguf_close(g);
    return rc;
}
