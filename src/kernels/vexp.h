/* vexp.h -- the constants of the vector exp the SIMD transformer ops share (x86/ops_avx2.c,
 * arm/ops_neon.c): the same polynomial and range on every path. Internal to src/kernels. */
#ifndef ORK_KERNELS_VEXP_H
#define ORK_KERNELS_VEXP_H

/* ---- vector exp ----
 * exp(x) = 2^n * e^r with n = round(x / ln 2), r = x - n ln 2 (ln 2 split in a high part with
 * trailing zero bits, so n * LN2_HI is exact for |n| <= 2^8, and a low part), |r| <= ln 2 / 2;
 * e^r by its Taylor polynomial of degree 7 (truncation error r^8/8! < 6e-9 relative, under
 * 2^-24); 2^n built in the exponent field as 2^(n-1) * 2 so that n = 128 does not overflow
 * the field. Inputs below EXP_LO give 0 (the true value is < 2^-124), above EXP_HI +inf,
 * NaN stays NaN. */
#define EXP_LOG2E 1.44269504088896341f
#define EXP_LN2_HI 0.693145751953125f           /* 0x3f317200: ln 2 rounded to 16 bits */
#define EXP_LN2_LO 1.42860682030941723e-6f      /* ln 2 - EXP_LN2_HI */
#define EXP_HI 88.72283905206835f               /* ln(FLT_MAX) */
#define EXP_LO (-86.0f)                         /* n >= -124: 2^(n-1) stays a normal float */
#define EXP_C2 (1.0f / 2.0f)                    /* 1/k!, the Taylor coefficients of e^r */
#define EXP_C3 (1.0f / 6.0f)
#define EXP_C4 (1.0f / 24.0f)
#define EXP_C5 (1.0f / 120.0f)
#define EXP_C6 (1.0f / 720.0f)
#define EXP_C7 (1.0f / 5040.0f)
#define F32_EXP_BIAS 127
#define F32_MANT_BITS 23

#endif
