/* test_kernels_fixtures.c -- dequantization of tensors written by the reference quantizer:
 * every tensor of stories260K-F16/-Q8_0/-Q4_0.gguf, read row by row with ork_get_row, must
 * match the same tensor of the F32 file within that block's quantization step (skips when
 * ../shared/fixtures is absent). The F32 file is the independent source of truth: a wrong
 * block layout (element order, scale position, nibble offset) lands far outside the step. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork-engine/gguf.h>
#include <ork-kernels/kernels.h>

#include "ork_test.h"

/* Step bounds, relative to the block's max |x| (amax):
 *   Q8_0: d = amax/127 stored as f16, q = round(x/d) -> |err| <= d/2 plus the f16 rounding of d
 *         over up to 127 steps: 0.5/127 + 2^-11  ~ 0.0044 amax; allow 0.005.
 *   Q4_0: d = (signed max)/-8, q clamped to 0..15 -> the far end may be off by one full step:
 *         |err| <= d = amax/8 (+ f16 rounding); allow 0.13 amax.
 *   F16:  relative 2^-11 per element (plus subnormal absolute 2^-25). */
#define Q8_0_STEP_FRAC 0.005
#define Q4_0_STEP_FRAC 0.13
#define F16_REL 4.9e-4          /* 2^-11 */

struct stats {
    int tensors, bad;
    uint32_t type;              /* the file's main type */
    double worst;               /* worst |err| / allowed over tensors of that type */
};

static void compare_tensor(const struct ork_gguf_tensor *q, const struct ork_gguf_tensor *f,
                           struct stats *st)
{
    int64_t k = (int64_t)q->ne[0];
    int64_t rows = (int64_t)(q->nbytes / ork_type_row_bytes(q->type, (uint64_t)k));
    struct ork_mat mq = { .type = q->type, .n_rows = rows, .n_cols = k,
                          .row_bytes = ork_type_row_bytes(q->type, (uint64_t)k), .data = q->data };
    float *row = ork_malloc(sizeof(float) * (size_t)k);
    if (!row) {
        st->bad++;
        return;
    }
    const float *ref = f->data;
    int64_t blk = ork_type_traits(q->type)->block;
    int bad = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (ork_get_row(&mq, r, row) != 0) {
            bad++;
            break;
        }
        const float *x = ref + r * k;
        for (int64_t b = 0; b < k / blk; b++) {
            double amax = 0;
            for (int64_t i = 0; i < blk; i++)
                amax = fmax(amax, fabs(x[b * blk + i]));
            for (int64_t i = b * blk; i < (b + 1) * blk; i++) {
                double err = fabs((double)row[i] - x[i]), allowed;
                switch (q->type) {
                case ORK_TYPE_Q8_0: allowed = Q8_0_STEP_FRAC * amax; break;
                case ORK_TYPE_Q4_0: allowed = Q4_0_STEP_FRAC * amax; break;
                case ORK_TYPE_F16: allowed = F16_REL * fabs(x[i]) + 0x1p-25; break;
                default: allowed = 0; break;      /* same type as the F32 file: exact */
                }
                if (allowed > 0 && q->type == st->type)
                    st->worst = fmax(st->worst, err / allowed);
                if (!(err <= allowed))
                    bad++;
            }
        }
    }
    if (bad)
        fprintf(stderr, "%s (%s): %d elements outside the step bound\n", q->name,
                ork_type_name(q->type), bad);
    st->bad += bad;
    st->tensors++;
    ork_free(row);
}

static void check_file(const char *rel, uint32_t want_type)
{
    struct ork_gguf *gf = NULL, *gq = NULL;
    REQUIRE(ork_gguf_open(ork_test_fixture("models/stories260K.gguf"), &gf) == 0);
    int ret = ork_gguf_open(ork_test_fixture(rel), &gq);
    if (ret) {
        fprintf(stderr, "%s: %s\n", rel, ork_error_describe(ret));
        ork_gguf_close(gf);
        CHECK_EQ_INT(ret, 0);
        return;
    }
    struct stats st = { .type = want_type };
    int seen_type = 0;
    for (uint64_t i = 0; i < ork_gguf_n_tensors(gq); i++) {
        const struct ork_gguf_tensor *q = ork_gguf_tensor_at(gq, i);
        const struct ork_gguf_tensor *f = ork_gguf_tensor_find(gf, q->name);
        REQUIRE(f != NULL);
        REQUIRE(f->type == ORK_TYPE_F32);
        REQUIRE(memcmp(f->ne, q->ne, sizeof f->ne) == 0);
        if (q->type == want_type)
            seen_type++;
        compare_tensor(q, f, &st);
    }
    printf("  %s: %d tensors, %d of type %s, worst error %.2f of the allowed step\n", rel,
           st.tensors, seen_type, ork_type_name(want_type), st.worst);
    CHECK(seen_type > 0);
    CHECK_EQ_INT(st.bad, 0);
    /* the check is meaningful: errors are of the size quantization produces */
    if (want_type != ORK_TYPE_F16)
        CHECK(st.worst > 0.05);
    ork_gguf_close(gq);
    ork_gguf_close(gf);
}

static void test_q8_0_file(void) { check_file("models/stories260K-Q8_0.gguf", ORK_TYPE_Q8_0); }
static void test_q4_0_file(void) { check_file("models/stories260K-Q4_0.gguf", ORK_TYPE_Q4_0); }
static void test_f16_file(void)  { check_file("models/stories260K-F16.gguf", ORK_TYPE_F16); }

int main(void)
{
    ork_test_fixture("models/stories260K.gguf");    /* skip the whole file when absent */
    RUN(test_q8_0_file);
    RUN(test_q4_0_file);
    RUN(test_f16_file);
    return ork_test_done();
}
