/* pack.c -- host-side data preparation for the NPU: packing W into the tiled weight layouts
 * (spec §4.3, §4.4), symmetric int8 quantisation with per-output-channel and per-row scales,
 * dequantisation (spec §6.5) and IEEE half conversions. No device access here. */
#include "pack.h"

#include <ork/error.h>
#include <ork/npu.h>

#include <math.h>
#include <string.h>

/* Tile shapes (spec §4.3, §4.4): K-tiles of 32; N-tiles of 32 (int8) or 16 (fp16). */
#define K_TILE 32u
#define N_TILE_I8 32u
#define N_TILE_F16 16u
/* Symmetric int8 range: [-127, 127] (keeps the scale symmetric; -128 is never produced). */
#define Q8_MAX 127.0f

void ork__pack_slice_i8(uint8_t *dst, const int8_t *w, uint32_t ldw, uint32_t n, uint32_t k0,
                        uint32_t klen, uint32_t kp, uint32_t np)
{
    memset(dst, 0, (size_t)kp * np);
    for (uint32_t j = 0; j < n && j < np; j++) {
        const int8_t *row = w + (size_t)j * ldw + k0;
        /* One column's 32 K values are contiguous within a tile: copy runs of up to 32. */
        for (uint32_t k = 0; k < klen; k += K_TILE) {
            uint32_t run = klen - k < K_TILE ? klen - k : K_TILE;
            memcpy(dst + ork__pack_offset_i8(k, j, kp), row + k, run);
        }
    }
}

void ork__pack_slice_f16(uint8_t *dst, const uint16_t *w, uint32_t ldw, uint32_t n, uint32_t k0,
                         uint32_t klen, uint32_t kp, uint32_t np)
{
    memset(dst, 0, (size_t)kp * np * 2);
    for (uint32_t j = 0; j < n && j < np; j++) {
        const uint16_t *row = w + (size_t)j * ldw + k0;
        for (uint32_t k = 0; k < klen; k++) {
            uint8_t *p = dst + 2 * ork__pack_index_f16(k, j, kp);
            p[0] = (uint8_t)(row[k] & 0xff);          /* little-endian (spec §0) */
            p[1] = (uint8_t)(row[k] >> 8);
        }
    }
}

static int quantize_rows(const float *x, uint32_t rows, uint32_t k, int8_t *q, float *scales,
                         const char *what)
{
    if (!x || !q || !scales || !rows || !k)
        return ork_errorf(ORK_EINVAL, "%s: null buffer or empty shape (%u x %u)", what, rows, k);
    for (uint32_t i = 0; i < rows; i++) {
        const float *r = x + (size_t)i * k;
        float amax = 0.0f;
        for (uint32_t j = 0; j < k; j++) {
            if (!isfinite(r[j]))
                return ork_errorf(ORK_EINVAL, "%s: row %u column %u is not finite", what, i, j);
            float a = fabsf(r[j]);
            amax = a > amax ? a : amax;
        }
        float scale = amax > 0.0f ? amax / Q8_MAX : 1.0f;
        float inv = 1.0f / scale;
        for (uint32_t j = 0; j < k; j++) {
            float v = roundf(r[j] * inv);
            v = v > Q8_MAX ? Q8_MAX : (v < -Q8_MAX ? -Q8_MAX : v);
            q[(size_t)i * k + j] = (int8_t)v;
        }
        scales[i] = scale;
    }
    return 0;
}

int ork_npu_quantize_weights_i8(const float *w, uint32_t n, uint32_t k, int8_t *q, float *scales)
{
    return quantize_rows(w, n, k, q, scales, "quantize weights");
}

int ork_npu_quantize_rows_i8(const float *x, uint32_t m, uint32_t k, int8_t *q, float *scales)
{
    return quantize_rows(x, m, k, q, scales, "quantize rows");
}

void ork_npu_dequantize(const int32_t *c, uint32_t m, uint32_t n, const float *a_scales,
                        const float *w_scales, float *out)
{
    for (uint32_t i = 0; i < m; i++)
        for (uint32_t j = 0; j < n; j++)
            out[(size_t)i * n + j] = a_scales[i] * w_scales[j] * (float)c[(size_t)i * n + j];
}

/* IEEE 754 binary16: 1 sign, 5 exponent (bias 15), 10 mantissa bits. */
uint16_t ork_npu_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xffu)                                   /* Inf / NaN (keep NaN quiet) */
        return sign | 0x7c00u | (mant ? 0x200u | (uint16_t)(mant >> 13) : 0);
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 0x1f)                                      /* overflow -> Inf */
        return sign | 0x7c00u;
    if (e <= 0) {                                       /* subnormal or zero */
        if (e < -10)
            return sign;
        mant |= 0x800000u;
        uint32_t shift = (uint32_t)(14 - e);
        uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1)))
            h++;
        return sign | (uint16_t)h;
    }
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
        h++;                                            /* may carry into the exponent: fine */
    return sign | (uint16_t)h;
}

float ork_npu_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t x;
    if (exp == 0x1fu) {
        x = sign | 0x7f800000u | (mant << 13);
    } else if (exp == 0) {
        if (!mant) {
            x = sign;
        } else {                                        /* normalise the subnormal */
            int32_t e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400u));
            x = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
        }
    } else {
        x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}
