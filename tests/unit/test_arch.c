/* test_arch.c -- the architecture descriptors (ork-engine/arch.h, src/engine/model/arch.c):
 * the table names llama, qwen2 and qwen3 with the settings their forward passes use, lookups by
 * name are exact, and ork_arch_check refuses every setting the engine has no op for, naming it. */
#include "ork_test.h"

#include <ork-engine/arch.h>
#include <ork/error.h>

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

int main(void)
{
    RUN(test_table);
    RUN(test_check_refuses);
    return ork_test_done();
}
