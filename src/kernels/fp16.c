/* fp16.c -- exact conversions between f32 and the 16-bit float formats (IEEE binary16 and
 * bfloat16). Scalar and bit-exact: every one of the 65536 half values round-trips, f32 -> half
 * rounds to nearest, ties to even, with overflow to inf, and subnormals both ways. NaNs come out
 * quiet (the quiet bit set, payload kept as far as it fits), which is what the x86 F16C
 * instructions do, so the bulk SIMD paths in dot.c produce the same bits as these.
 * Not here: row conversions and SIMD (dot.c). */
#include <stdint.h>
#include <string.h>

#include <ork-kernels/kernels.h>

/* IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits.
 * binary32: 1 sign, 8 exponent (bias 127), 23 mantissa bits. */
#define F16_SIGN      0x8000u
#define F16_EXP_MASK  0x7c00u
#define F16_MANT_MASK 0x03ffu
#define F16_QUIET     0x0200u       /* top mantissa bit: quiet NaN */
#define F32_SIGN      0x80000000u
#define F32_EXP_MASK  0x7f800000u
#define F32_MANT_MASK 0x007fffffu
#define F32_QUIET     0x00400000u
#define F32_HIDDEN    0x00800000u   /* implicit leading 1 of a normal f32 */
#define EXP_REBIAS    (127 - 15)    /* f32 exponent bias minus f16 exponent bias */
#define MANT_SHIFT    (23 - 10)     /* f32 mantissa bits minus f16 mantissa bits */
/* |f| >= 65520 (0x477ff000) rounds to inf: 65504 is the largest half, and 65520 lies halfway
 * between it and 65536 with an odd neighbour, so the tie goes up to inf. */
#define F32_F16_OVERFLOW 0x477ff000u
/* |f| < 2^-14 (0x38800000), the smallest normal half, becomes a half subnormal (or zero). */
#define F32_F16_MIN_NORMAL 0x38800000u

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float ork_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & F16_SIGN) << 16;
    uint32_t exp = (h & F16_EXP_MASK) >> 10;
    uint32_t mant = h & F16_MANT_MASK;

    if (exp == 0) {
        /* zero or subnormal: mant * 2^-24, exact in f32 (normal there) */
        float v = (float)mant * 0x1p-24f;
        return (h & F16_SIGN) ? -v : v;
    }
    if (exp == 0x1f) {
        if (mant == 0)
            return bits_f32(sign | F32_EXP_MASK);                      /* +-inf */
        return bits_f32(sign | F32_EXP_MASK | F32_QUIET | (mant << MANT_SHIFT));   /* NaN */
    }
    return bits_f32(sign | ((exp + EXP_REBIAS) << 23) | (mant << MANT_SHIFT));
}

uint16_t ork_f32_to_fp16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & F16_SIGN);
    uint32_t a = u & ~F32_SIGN;

    if (a >= F32_EXP_MASK) {
        if (a == F32_EXP_MASK)
            return sign | F16_EXP_MASK;                                /* +-inf */
        return (uint16_t)(sign | F16_EXP_MASK | F16_QUIET |
                          ((a & F32_MANT_MASK) >> MANT_SHIFT));        /* NaN, quiet */
    }
    if (a >= F32_F16_OVERFLOW)
        return sign | F16_EXP_MASK;
    if (a < F32_F16_MIN_NORMAL) {
        /* value / 2^-24 = m * 2^(e - 126) with m the 24-bit significand: shift right by
         * 126 - e (>= 14 here) and round to nearest even. */
        uint32_t e = a >> 23;
        uint32_t shift = 126 - e;
        if (shift > 24)
            return sign;            /* below 2^-25: rounds to zero (2^-25 itself ties to 0) */
        uint32_t m = (a & F32_MANT_MASK) | F32_HIDDEN;
        uint32_t q = m >> shift;
        uint32_t rem = m & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;                    /* may carry to 0x400: the smallest normal, correctly */
        return (uint16_t)(sign | q);
    }
    uint32_t h = ((a >> 23) - EXP_REBIAS) << 10 | ((a & F32_MANT_MASK) >> MANT_SHIFT);
    uint32_t rem = a & ((1u << MANT_SHIFT) - 1);
    uint32_t half = 1u << (MANT_SHIFT - 1);
    if (rem > half || (rem == half && (h & 1)))
        h++;                        /* a carry into the exponent is the right result */
    return (uint16_t)(sign | h);
}

/* bfloat16 is the top half of an f32. */
#define BF16_QUIET 0x0040u

float ork_bf16_to_f32(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

uint16_t ork_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & ~F32_SIGN) > F32_EXP_MASK)
        return (uint16_t)((u >> 16) | BF16_QUIET);                     /* NaN stays NaN */
    /* round to nearest even on the low 16 bits; overflow carries into inf correctly */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
