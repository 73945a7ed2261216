/* ops_arch.c -- the CPU ops only some architectures use (model_priv.h "architecture ops"):
 * the tanh GELU of Gemma's GeGLU as llama.cpp's CPU backend computes it, tanh softcapping, and
 * the MoE router's top-k selection.
 *
 * GELU: ggml's CPU backend does not evaluate the tanh formula per element; it looks the value
 * up in a table indexed by the input's FP16 bits, each entry the formula evaluated at that FP16
 * value in float and rounded to FP16, with inputs at or below -10 giving 0 and at or above 10
 * passing through (../shared/fixtures/ARCHS.md "gemma2", FFN: ggml-cpu/vec.h:46, 1414-1427).
 * Exact tanh-gelu moves Gemma's logprobs by up to 1.6e-3 (gemma2) and 3.7e-2 (gemma3) against
 * llama.cpp; the table brings them to the few 1e-4 that float noise at an FP16 rounding boundary
 * leaves (ARCHS.md "Cross-check"). The table is 128 KiB, built once. */
#include "model_priv.h"

#include <math.h>
#include <pthread.h>

/* The tanh approximation of GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (Hendrycks &
 * Gimpel 2016, eq. 2). */
#define GELU_COEF_A 0.044715f
#define GELU_SQRT_2_OVER_PI 0.79788456080286535587989211986876f
/* The table's domain (ggml-cpu/vec.h, ARCHS.md "gemma2" FFN): outside it, 0 or the input. */
#define GELU_TABLE_LO (-10.0f)
#define GELU_TABLE_HI 10.0f
#define GELU_TABLE_SIZE (1 << 16)       /* every FP16 bit pattern */

static uint16_t gelu_table[GELU_TABLE_SIZE];
static pthread_once_t gelu_once = PTHREAD_ONCE_INIT;

static float gelu_tanh(float x)
{
    return 0.5f * x * (1.0f + tanhf(GELU_SQRT_2_OVER_PI * x * (1.0f + GELU_COEF_A * x * x)));
}

static void gelu_table_build(void)
{
    for (uint32_t i = 0; i < GELU_TABLE_SIZE; i++)
        gelu_table[i] = ork_f32_to_fp16(gelu_tanh(ork_fp16_to_f32((uint16_t)i)));
}

void ork__gelu_init(void)
{
    pthread_once(&gelu_once, gelu_table_build);
}

void ork__gelu_mul(float *gate, const float *up, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        float x = gate[i], y;
        if (x <= GELU_TABLE_LO)
            y = 0.0f;
        else if (x >= GELU_TABLE_HI)
            y = x;
        else
            y = ork_fp16_to_f32(gelu_table[ork_f32_to_fp16(x)]);
        gate[i] = y * up[i];
    }
}

/* cap * tanh(x / cap), in llama.cpp's order: scale by 1/cap, tanh, scale by cap
 * (llama-graph.cpp:2585-2591, gemma2.cpp:168-171). */
void ork__softcap(float *x, int64_t n, float cap)
{
    float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; i++)
        x[i] = tanhf(x[i] * inv) * cap;
}

int ork__moe_route(float *probs, int32_t n_expert, int32_t k, int32_t *ids, float *w)
{
    ork_softmax(probs, n_expert);
    /* top-k by probability, descending; ties to the lower id */
    for (int32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t e = 0; e < n_expert; e++) {
            bool taken = false;
            for (int32_t u = 0; u < j; u++)
                taken |= ids[u] == e;
            if (!taken && (best < 0 || probs[e] > probs[best]))
                best = e;
        }
        ids[j] = best;
        w[j] = probs[best];
    }
    /* renormalised over the selected (qwen3moe.cpp:144 norm_w; the floor is llama-graph.cpp's
     * clamp of the sum, ARCHS.md "qwen3moe" Routing) */
    float sum = 0.0f;
    for (int32_t j = 0; j < k; j++)
        sum += w[j];
    if (sum < ORK__MOE_WSUM_MIN)
        sum = ORK__MOE_WSUM_MIN;
    for (int32_t j = 0; j < k; j++)
        w[j] /= sum;
    return 0;
}
