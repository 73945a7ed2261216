/* rotate.h -- the rotation of K of the NPU weights (rotate.c): private to the engine's NPU
 * backend (src/engine/npu/) and its tests; self-contained (no engine headers). */
#ifndef ORK_ENGINE_NPU_ROTATE_H
#define ORK_ENGINE_NPU_ROTATE_H

#include <ork/twin.h>

#include <stdint.h>

/* R^T = D_Q (x) H_P for K = P Q (P the largest power of two dividing K, Q odd): see rotate.c. */
struct ork__npu_rot {
    uint32_t k, p, q;
    float *d;                           /* (q, q): the DCT-II rows over sqrt(p); NULL: q = 1 */
    float h_scale;                      /* 1 / sqrt(p) (applied by d when q > 1) */
};
/* Identity of the transform a pack records (caps->w_rotation): bump it when rotate.c changes
 * what it computes, so that packs of the old transform are rebuilt. */
#define ORK__NPU_ROT_ID 1u
int ork__npu_rot_init(struct ork__npu_rot *r, uint32_t k);
void ork__npu_rot_fini(struct ork__npu_rot *r);
/* y = R^T x over r->k elements (x and y must not overlap). */
void ork__npu_rot_apply(const struct ork__npu_rot *r, const float *x, float *y);
/* Columns [c0, c0 + r->k) of `rows` rows of x (row stride ldx) rotated into dense y [rows][k]. */
void ork__npu_rot_rows(const struct ork__npu_rot *r, const float *x, uint32_t ldx, uint32_t c0,
                       uint32_t rows, float *y);
/* The board twin's A76 work of rotating rows x k (the derivation is in rotate.c). */
struct ork_twin_work ork__npu_rot_work(const struct ork_twin_consts *c, uint32_t rows,
                                       uint32_t k);

#endif
