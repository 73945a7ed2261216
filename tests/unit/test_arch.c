/* test_arch.c -- the architecture descriptors (ork-engine/arch.h, src/engine/model/arch.c):
 * the table names llama, qwen2 and qwen3 with the settings their forward passes use, lookups by
 * name are exact, and ork_arch_check refuses every setting the engine has no op for, naming it.
 * Also the architecture ops (ops_arch.c): the FP16-table GELU, the softcap, MoE routing. */
#include "ork_test.h"

#include "engine/model/model_priv.h"

#include <ork-engine/arch.h>
#include <ork/error.h>

#include <math.h>
#include <string.h>

static void test_table(void)
{
    CHECK(ork_arch_count() >= 3);
    for (size_t i = 0; i < ork_arch_count(); i++) {
        const struct ork_arch_desc *d = ork_arch_at(i);
        REQUIRE(d && d->name);
        CHECK(ork_arch_find(d->name, strlen(d->name)) == d);
        CHECK_EQ_INT(ork_arch_check(d), 0);
        CHECK(d->layer_tensors && d->n_layer_tensors > 0);
    }
    const struct ork_arch_desc *llama = ork_arch_find("llama", 5);
    const struct ork_arch_desc *qwen2 = ork_arch_find("qwen2", 5);
    const struct ork_arch_desc *qwen3 = ork_arch_find("qwen3", 5);
    REQUIRE(llama && qwen2 && qwen3);
    CHECK_EQ_INT(llama->rope, ORK_ROPE_NORM);
    CHECK_EQ_INT(qwen2->rope, ORK_ROPE_NEOX);
    CHECK_EQ_INT(qwen3->rope, ORK_ROPE_NEOX);
    CHECK(qwen2->qkv_bias && !llama->qkv_bias && !qwen3->qkv_bias);
    CHECK(qwen3->qk_norm && !llama->qk_norm && !qwen2->qk_norm);
    /* exact names only: a prefix or an unknown family is not found */
    CHECK(ork_arch_find("llam", 4) == NULL);
    CHECK(ork_arch_find("qwen2x", 6) == NULL);
    CHECK(ork_arch_find("gemma", 5) == NULL);
    CHECK(ork_arch_find("qwen3mo", 7) == NULL);
    static const char *const added[] = { "gemma2", "gemma3", "phi3", "qwen3moe" };
    for (size_t i = 0; i < sizeof added / sizeof added[0]; i++) {
        const struct ork_arch_desc *d = ork_arch_find(added[i], strlen(added[i]));
        REQUIRE(d != NULL);
        CHECK_EQ_INT(ork_arch_check(d), 0);
    }
}

/* Each setting without an op, on a copy of llama's entry, is refused with its name. */
static void test_check_refuses(void)
{
    const struct ork_arch_desc *llama = ork_arch_find("llama", 5);
    REQUIRE(llama);
    struct ork_arch_desc d;
    static const char *const cases[] = {
        "post-sublayer RMSNorm", "FFN activation", "ungated FFN", "embedding scale",
        "experts with an activation", "layer tensor list",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        d = *llama;
        switch (i) {
        case 0: d.norm = ORK_NORM_POST; break;
        case 1: d.act = (enum ork_ffn_act)7; break;
        case 2: d.ffn_gated = false; break;
        case 3: d.embd_scale = (enum ork_embd_scale)7; break;
        case 4: d.moe = true; d.act = ORK_FFN_GELU; break;
        default: d.layer_tensors = NULL; d.n_layer_tensors = 0; break;
        }
        CHECK_EQ_INT(ork_arch_check(&d), ORK_EUNSUPPORTED);
        CHECK(strstr(ork_error_message(), cases[i]) != NULL);
        CHECK(strstr(ork_error_message(), "llama") != NULL);
    }
}

/* gelu(x) * up through the FP16 table: fp16(gelu(fp16(x))), 0 at or below -10, x at or above
 * 10; within an FP16 step of the exact tanh formula elsewhere. */
static void test_gelu_table(void)
{
    ork__gelu_init();
    static const float xs[] = { -12.0f, -10.0f, -3.0f, -0.5f, 0.0f, 0.3f, 1.0f, 2.5f, 9.99f, 10.0f,
                                37.0f };
    enum { N = sizeof xs / sizeof xs[0] };
    float g[N], up[N];
    for (int i = 0; i < N; i++) {
        g[i] = xs[i];
        up[i] = 2.0f;
    }
    ork__gelu_mul(g, up, N);
    for (int i = 0; i < N; i++) {
        float x = xs[i], want;
        if (x <= -10.0f)
            want = 0.0f;
        else if (x >= 10.0f)
            want = x;
        else {
            float h = ork_fp16_to_f32(ork_f32_to_fp16(x));
            want = ork_fp16_to_f32(ork_f32_to_fp16(
                0.5f * h * (1.0f + tanhf(0.7978845608f * h * (1.0f + 0.044715f * h * h)))));
            double exact = 0.5 * x * (1.0 + tanh(0.7978845608 * x * (1.0 + 0.044715 * x * x)));
            CHECK(fabs((double)want - exact) <= 2e-3 * fabs(exact) + 1e-4);
        }
        CHECK(g[i] == want * 2.0f);
    }
    CHECK(g[4] == 0.0f);
}

static void test_softcap_route(void)
{
    float x[3] = { 0.0f, 5.0f, -100.0f };
    ork__softcap(x, 3, 5.0f);
    CHECK(x[0] == 0.0f);
    CHECK_NEAR(x[1], 5.0 * tanh(1.0), 1e-6);
    CHECK_NEAR(x[2], -5.0, 1e-6);
    /* top-2 of 4 by probability, renormalised over the two; ties go to the lower id */
    float p[4] = { 1.0f, 3.0f, 2.0f, 3.0f };
    int32_t ids[2];
    float w[2];
    CHECK_EQ_INT(ork__moe_route(p, 4, 2, ids, w), 0);
    CHECK_EQ_INT(ids[0], 1);
    CHECK_EQ_INT(ids[1], 3);
    CHECK_NEAR(w[0], 0.5, 1e-6);
    CHECK_NEAR(w[1], 0.5, 1e-6);
    float q[3] = { 0.0f, 1.0f, 2.0f };
    CHECK_EQ_INT(ork__moe_route(q, 3, 1, ids, w), 0);
    CHECK_EQ_INT(ids[0], 2);
    CHECK_NEAR(w[0], 1.0, 1e-6);
}

int main(void)
{
    RUN(test_table);
    RUN(test_gelu_table);
    RUN(test_softcap_route);
    RUN(test_check_refuses);
    return ork_test_done();
}
