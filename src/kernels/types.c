/* types.c -- block sizes of every GGML tensor type (facts of the GGUF/GGML file format). */
#include <ork-kernels/types.h>

#define T(id, nm, blk, bytes, sup) [ORK_TYPE_##id] = { nm, blk, bytes, sup }

static const struct ork_type_traits traits[ORK_TYPE_COUNT] = {
    T(F32, "F32", 1, 4, true),          T(F16, "F16", 1, 2, true),
    T(Q4_0, "Q4_0", 32, 18, true),      T(Q4_1, "Q4_1", 32, 20, false),
    T(Q5_0, "Q5_0", 32, 22, false),     T(Q5_1, "Q5_1", 32, 24, false),
    T(Q8_0, "Q8_0", 32, 34, true),      T(Q8_1, "Q8_1", 32, 36, false),
    T(Q2_K, "Q2_K", 256, 84, false),    T(Q3_K, "Q3_K", 256, 110, false),
    T(Q4_K, "Q4_K", 256, 144, true),    T(Q5_K, "Q5_K", 256, 176, false),
    T(Q6_K, "Q6_K", 256, 210, true),    T(Q8_K, "Q8_K", 256, 292, false),
    T(IQ2_XXS, "IQ2_XXS", 256, 66, false), T(IQ2_XS, "IQ2_XS", 256, 74, false),
    T(IQ3_XXS, "IQ3_XXS", 256, 98, false), T(IQ1_S, "IQ1_S", 256, 50, false),
    T(IQ4_NL, "IQ4_NL", 32, 18, false), T(IQ3_S, "IQ3_S", 256, 110, false),
    T(IQ2_S, "IQ2_S", 256, 82, false),  T(IQ4_XS, "IQ4_XS", 256, 136, false),
    T(I8, "I8", 1, 1, false),           T(I16, "I16", 1, 2, false),
    T(I32, "I32", 1, 4, false),         T(I64, "I64", 1, 8, false),
    T(F64, "F64", 1, 8, false),         T(IQ1_M, "IQ1_M", 256, 56, false),
    T(BF16, "BF16", 1, 2, true),        T(TQ1_0, "TQ1_0", 256, 54, false),
    T(TQ2_0, "TQ2_0", 256, 66, false),
};

const struct ork_type_traits *ork_type_traits(uint32_t type)
{
    if (type >= ORK_TYPE_COUNT || traits[type].name == NULL)
        return NULL;
    return &traits[type];
}

const char *ork_type_name(uint32_t type)
{
    const struct ork_type_traits *t = ork_type_traits(type);
    return t ? t->name : "unknown";
}

size_t ork_type_row_bytes(uint32_t type, uint64_t n)
{
    const struct ork_type_traits *t = ork_type_traits(type);
    if (!t || n % t->block)
        return 0;
    return (size_t)(n / t->block) * t->block_bytes;
}
