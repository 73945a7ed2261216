/* test_kv.c -- the KV cache (src/engine/model/kv.c): rows stored at every position of several layers
 * and heads read back through the two attention loops, against one dispatched dot / mad per
 * row on the rows kept aside (same bits), one query or two at once, across position blocks and
 * with a short context; prefaulting zeroes exactly the positions asked for. */
#include "engine/model/model_priv.h"

#include <ork-kernels/kernels.h>
#include <ork/error.h>

#include "ork_test.h"

#define N_LAYERS 3
#define N_KV_HEADS 2
#define HEAD_DIM 32
#define KV_DIM (N_KV_HEADS * HEAD_DIM)
/* Positions kept: past two blocks of the layout (kv.c KV_BLOCK, 256 positions). */
#define MAX_POS 600

static uint32_t rng_state = 12345u;

static float rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((rng_state >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* Keys and values of every (layer, position), as given to ork__kv_store. */
struct rows {
    float k[N_LAYERS][MAX_POS][KV_DIM];
    float v[N_LAYERS][MAX_POS][KV_DIM];
};

/* Stores ctx positions of random rows; the F16 cache keeps the rows' F16 roundings. */
static void fill(struct ork_kv_cache *kv, struct rows *r, int ctx)
{
    for (int l = 0; l < N_LAYERS; l++)
        for (int p = 0; p < ctx; p++) {
            for (int i = 0; i < KV_DIM; i++) {
                r->k[l][p][i] = rnd();
                r->v[l][p][i] = rnd();
                if (kv->type == ORK_KV_F16) {
                    r->k[l][p][i] = ork_fp16_to_f32(ork_f32_to_fp16(r->k[l][p][i]));
                    r->v[l][p][i] = ork_fp16_to_f32(ork_f32_to_fp16(r->v[l][p][i]));
                }
            }
            ork__kv_store(kv, l, p, r->k[l][p], r->v[l][p]);
        }
}

/* Every layer, head and a few n_pos against per-row dots and mads of the kept rows. */
static void check_reads(const struct ork_kv_cache *kv, const struct rows *r, int ctx)
{
    static const int n_pos_list[] = { 1, 2, 63, 64, 65, 255, 256, 257, 511, 512, 513, MAX_POS };
    static float w[MAX_POS], w2[MAX_POS], sc[MAX_POS], sc2[MAX_POS], sc3[MAX_POS];
    float q[HEAD_DIM], q2[HEAD_DIM], out[HEAD_DIM], out2[HEAD_DIM], out3[HEAD_DIM];
    float want[HEAD_DIM], want2[HEAD_DIM];
    for (int i = 0; i < HEAD_DIM; i++) {
        q[i] = rnd();
        q2[i] = rnd();
    }
    int bad = 0;
    for (size_t c = 0; c < sizeof n_pos_list / sizeof n_pos_list[0]; c++) {
        int n_pos = n_pos_list[c];
        if (n_pos > ctx)
            continue;
        for (int t = 0; t < n_pos; t++) {
            w[t] = rnd();
            w2[t] = rnd();
        }
        for (int l = 0; l < N_LAYERS; l++)
            for (int h = 0; h < N_KV_HEADS; h++) {
                ork__kv_scores(kv, l, h, (const float *const[]){ q }, 1, 0.25f, 0, n_pos,
                               (float *const[]){ sc });
                for (int t = 0; t < n_pos; t++) {
                    float d = ork_vec_dot(ORK_TYPE_F32, r->k[l][t] + h * HEAD_DIM, q, HEAD_DIM);
                    bad += sc[t] != d * 0.25f;
                }
                /* two queries at once: each gets its own single-query bits */
                ork__kv_scores(kv, l, h, (const float *const[]){ q2, q }, 2, 0.25f, 0, n_pos,
                               (float *const[]){ sc2, sc3 });
                for (int t = 0; t < n_pos; t++) {
                    float d = ork_vec_dot(ORK_TYPE_F32, r->k[l][t] + h * HEAD_DIM, q2, HEAD_DIM);
                    bad += sc2[t] != d * 0.25f || sc3[t] != sc[t];
                }
                ork__kv_weighted_sum(kv, l, h, (const float *const[]){ w }, 1, 0, n_pos,
                                     (float *const[]){ out });
                for (int i = 0; i < HEAD_DIM; i++)
                    want[i] = want2[i] = 0.0f;
                for (int t = 0; t < n_pos; t++) {
                    CHECK(ork_vec_mad(want, r->v[l][t] + h * HEAD_DIM, ORK_TYPE_F32, w[t],
                                      HEAD_DIM) == 0);
                    CHECK(ork_vec_mad(want2, r->v[l][t] + h * HEAD_DIM, ORK_TYPE_F32, w2[t],
                                      HEAD_DIM) == 0);
                }
                for (int i = 0; i < HEAD_DIM; i++)
                    bad += out[i] != want[i];
                ork__kv_weighted_sum(kv, l, h, (const float *const[]){ w2, w }, 2, 0, n_pos,
                                     (float *const[]){ out2, out3 });
                for (int i = 0; i < HEAD_DIM; i++)
                    bad += out2[i] != want2[i] || out3[i] != want[i];
            }
    }
    CHECK_EQ_INT(bad, 0);
}

static struct rows g_rows;

static void run_type(enum ork_kv_type type, int ctx)
{
    struct ork_kv_cache kv;
    CHECK(ork__kv_init(&kv, type, N_LAYERS, ctx, N_KV_HEADS, HEAD_DIM) == 0);
    fill(&kv, &g_rows, ctx);
    check_reads(&kv, &g_rows, ctx);
    ork__kv_fini(&kv);
}

static void test_f32_blocks(void)
{
    run_type(ORK_KV_F32, MAX_POS);     /* 3 blocks, the last one partial */
}

static void test_f32_short_ctx(void)
{
    run_type(ORK_KV_F32, 257);     /* a context just past one block */
}

static void test_f16_blocks(void)
{
    run_type(ORK_KV_F16, MAX_POS);
}

/* Rewriting a position (a new prefix after a reset) changes exactly that position's reads. */
static void test_overwrite(void)
{
    struct ork_kv_cache kv;
    CHECK(ork__kv_init(&kv, ORK_KV_F32, N_LAYERS, 130, N_KV_HEADS, HEAD_DIM) == 0);
    fill(&kv, &g_rows, 130);
    for (int i = 0; i < KV_DIM; i++)
        g_rows.k[1][64][i] = rnd();
    ork__kv_store(&kv, 1, 64, g_rows.k[1][64], g_rows.v[1][64]);
    check_reads(&kv, &g_rows, 130);
    ork__kv_fini(&kv);
}

/* Prefaulting positions [from, to) zeroes exactly those rows: the rows stored before keep
 * their reads, the prefaulted ones read as zero keys. */
#define PF_FROM 200
static void test_prefault(void)
{
    for (int ty = 0; ty < 2; ty++) {
        struct ork_kv_cache kv;
        CHECK(ork__kv_init(&kv, ty ? ORK_KV_F16 : ORK_KV_F32, N_LAYERS, MAX_POS, N_KV_HEADS,
                           HEAD_DIM) == 0);
        fill(&kv, &g_rows, MAX_POS);
        ork__kv_prefault(&kv, PF_FROM, MAX_POS);   /* across a block boundary */
        check_reads(&kv, &g_rows, PF_FROM);
        float q[HEAD_DIM], sc[MAX_POS];
        for (int i = 0; i < HEAD_DIM; i++)
            q[i] = 1.0f + rnd();
        int nonzero = 0, zero = 0;
        for (int l = 0; l < N_LAYERS; l++)
            for (int h = 0; h < N_KV_HEADS; h++) {
                ork__kv_scores(&kv, l, h, (const float *const[]){ q }, 1, 0.25f, 0, MAX_POS,
                               (float *const[]){ sc });
                for (int t = 0; t < MAX_POS; t++) {
                    nonzero += t >= PF_FROM && sc[t] != 0.0f;
                    zero += t < PF_FROM && sc[t] == 0.0f;
                }
            }
        CHECK_EQ_INT(nonzero, 0);
        CHECK_EQ_INT(zero, 0);
        ork__kv_fini(&kv);
    }
}

static void test_errors(void)
{
    struct ork_kv_cache kv;
    CHECK(ork__kv_init(&kv, (enum ork_kv_type)7, 1, 64, 1, 32) == ORK_EINVAL);
    CHECK(ork__kv_init(&kv, ORK_KV_F32, 1 << 30, 1 << 30, 64, 128) == ORK_ENOMEM);
}

int main(void)
{
    RUN(test_f32_blocks);
    RUN(test_f32_short_ctx);
    RUN(test_f16_blocks);
    RUN(test_overwrite);
    RUN(test_prefault);
    RUN(test_errors);
    return ork_test_done();
}
