/* w4a8_plan.c -- the host halves of a run on W4A8 weights, over a plan's blocks (matmul.c lays
 * them out: per K-slice j and M-tile of mt tokens at m0, the A block at a_off[j] + m0 pad_j
 * holds the split rows (pad_j/32, 2 mt, 32) int4, and per N-slice i the C block at
 * c_off[j, i] + 4 m0 pad_i the partials (pad_i/8, 2 mt, 8) int16 -- the byte sizes of the int8
 * plan's blocks, spec §4.6). Each block's transform is w4a8_run.c's. */
#include "ork_priv.h"
#include "w4a8.h"

#include <ork/alloc.h>
#include <ork/error.h>

/* Bytes of one int16 partial pair per token and column: 2 rows x 2 bytes (= the int8 plan's
 * int32 per row and column, so the block offsets agree). */
#define C_TOKEN_COL_BYTES 4u

/* Tokens of the M-tile at m0 (its program's rows / 2) and of a run of m rows in it. */
static uint32_t tile_tokens(const struct ork_npu_matmul *mm, uint32_t m0)
{
    return mm->m - m0 < mm->m_tile ? mm->m - m0 : mm->m_tile;
}

int ork__w4a8_copy_in(struct ork_npu_matmul *mm, const int8_t *a, uint32_t m)
{
    const struct ork_npu_weights *w = mm->w;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++) {
        const struct ork_slice *s = &w->kplan.s[j];
        for (uint32_t m0 = 0; m0 < m; m0 += mm->m_tile) {
            const uint32_t mt = tile_tokens(mm, m0), rows = m - m0 < mt ? m - m0 : mt;
            uint8_t *blk = (uint8_t *)mm->a_bo.map + mm->a_off[j] + (uint64_t)m0 * s->pad;
            ork__w4a8_split_rows(blk, mt, a + (size_t)m0 * w->k, w->k, s, rows);
        }
    }
    return ork__npu_bo_sync(mm->npu, &mm->a_bo, 0, mm->a_bo.size, ORK_KBO_SYNC_TO_DEVICE);
}

int ork__w4a8_gather(struct ork_npu_matmul *mm, int32_t *c, uint32_t m)
{
    const struct ork_npu_weights *w = mm->w;
    for (uint32_t j = 0; j < w->kplan.n_slices; j++)
        for (uint32_t i = 0; i < mm->n_ns; i++) {
            const struct ork_slice *ns = &mm->ns[i];
            const uint8_t *base = (const uint8_t *)mm->c_bo[ork__matmul_cbo_idx(mm, i)].map +
                                  mm->c_off[j * mm->n_ns + i];
            for (uint32_t m0 = 0; m0 < m; m0 += mm->m_tile) {
                const uint32_t mt = tile_tokens(mm, m0), rows = m - m0 < mt ? m - m0 : mt;
                const int16_t *blk = (const int16_t *)(const void *)(
                    base + (uint64_t)m0 * ns->pad * C_TOKEN_COL_BYTES);
                ork__w4a8_gather_block(c + (size_t)m0 * w->n, w->n, blk, mt, rows, ns,
                                       w->colsum, j == 0);
            }
        }
    return 0;
}

int ork__w4a8_sentinels(struct ork_npu_matmul *mm)
{
    const struct ork_npu_weights *w = mm->w;
    mm->sentinel = ork_calloc(mm->n_tasks, sizeof *mm->sentinel);
    if (!mm->sentinel)
        return ork_errorf(ORK_ENOMEM, "npu matmul: W4A8 sentinels of %u tasks", mm->n_tasks);
    for (uint32_t t = 0; t < mm->n_tasks; t++) {
        const struct ork_mm_tile *tl = &mm->tiles[t];
        const uint8_t *slice = (const uint8_t *)w->bo.map + w->slice_off[tl->kslice];
        mm->sentinel[t] = ork__w4a8_sentinel(slice, w->kplan.s[tl->kslice].pad,
                                             &mm->ns[tl->nslice]);
    }
    return 0;
}
