/* twin_cpu.c -- the twin's cost functions: operation counts -> work on the board.
 *
 * A CPU phase is charged from its instruction mix on one Cortex-A76: counts per 4-lane fp32
 * vector (or per 32-weight block for matmuls) of ASIMD ALU ops, FMLAs, SDOTs, conversions,
 * expf evaluations, loads, stores and scalar instructions. Its issue time is the largest of
 *   V pipes:  vec/vec_rate + fma/fma_rate + sdot/sdot_rate + fcvt/fcvt_rate + exp*exp_cycles
 *   memory:   ld/load_rate + st/store_rate
 *   dispatch: all instructions / issue_width
 * over cpu_freq_hz (a port-pressure bound: latency chains and branch misses are not modelled).
 * DRAM bytes are what the phase moves past the caches: weights, the KV cache and device
 * buffers always; activations only when their footprint exceeds the L3 (cpu_l3_bytes).
 * Every count is derived in docs/twin.md ("CPU phase formulas"). Not here: the timeline. */
#include <ork/twin.h>

#include <math.h>

/* Instruction counts of one unit of work (a vector, a block, a row). */
struct mix {
    double vec, fma, sdot, fcvt, exp, ld, st, scalar;
};

/* Bytes per 32 weights: F32 128, F16 64, Q8_0 34 (32 int8 + fp16 scale), Q4_0 18 (16 + 2),
 * Q4_K 144 per 256 = 18, Q6_K 210 per 256 = 26.25 (ggml block layouts, docs/gguf.md). */
static const double wtype_block_bytes[ORK_TWIN_W_COUNT] = { 128, 64, 34, 18, 18, 26.25 };
static const char *const wtype_names[ORK_TWIN_W_COUNT] = { "F32", "F16", "Q8_0", "Q4_0", "Q4_K",
                                                           "Q6_K" };
#define WBLOCK 32.0     /* weights per block of the model (K-quants: a 256 super-block / 8) */
/* The interleaved layout's group and row limit (ork_mat_x16_wanted, docs/kernels.md
 * "Interleaved weights"): 16 rows, rows of at most 64 KiB. */
#define X16_ROWS 16u
#define X16_MAX_ROW_BYTES 65536.0
/* X rows per M > 1 tile call of the NEON interleaved kernels: Q8_0/Q4_0 XN_TILE_MX
 * (src/kernels/arm/rows16_q8_0_q4_0_neon.c) and Q6_K's six-row tiles
 * (src/kernels/arm/rows16_q6_k_neon.c), Q4_K ORK_X16_MX (src/kernels/kern_priv.h). */
#define X16_TILE_ROWS_Q8 6.0
#define X16_TILE_ROWS_Q4K 4.0
#define LANES 4.0       /* fp32 lanes of a 128-bit vector */

/* Matmul mixes per 32-weight block (docs/twin.md "CPU matmul"): `unpack` is paid once per
 * block and tile of cpu_gemm_tile_rows activation rows, `dot` once per block and row. */
static const struct mix mm_unpack[ORK_TWIN_W_COUNT] = {
    [ORK_TWIN_W_F32] = { .ld = 8 },                                   /* 128 B of weights */
    [ORK_TWIN_W_F16] = { .ld = 4, .fcvt = 8 },                        /* FCVTL/FCVTL2 to f32 */
    [ORK_TWIN_W_Q8_0] = { .ld = 2, .scalar = 1, .fcvt = 1 },          /* qs + fp16 scale */
    [ORK_TWIN_W_Q4_0] = { .ld = 1, .vec = 4, .scalar = 1, .fcvt = 1 }, /* AND, USHR, 2 SUB 8 */
    [ORK_TWIN_W_Q4_K] = { .ld = 1.1, .vec = 3.5, .fcvt = 0.25, .scalar = 0.5 }, /* + 6-bit scales */
    [ORK_TWIN_W_Q6_K] = { .ld = 1.6, .vec = 10, .fcvt = 0.125, .scalar = 0.5 }, /* ql|qh, SUB 32 */
};
static const struct mix mm_dot[ORK_TWIN_W_COUNT] = {
    [ORK_TWIN_W_F32] = { .fma = 8, .ld = 8 },                         /* f32 activations */
    [ORK_TWIN_W_F16] = { .fma = 8, .ld = 8 },
    /* 2 SDOT, SCVTF of the int32 sums, FMUL of the two scales, FMLA into the f32 sum */
    [ORK_TWIN_W_Q8_0] = { .sdot = 2, .fcvt = 1, .vec = 1, .fma = 1, .ld = 2 },
    [ORK_TWIN_W_Q4_0] = { .sdot = 2, .fcvt = 1, .vec = 1, .fma = 1, .ld = 2 },
    /* integer sub-block scale MLA + min x bsum; one SCVTF/FMLA per 256 super-block */
    [ORK_TWIN_W_Q4_K] = { .sdot = 2, .vec = 2, .fcvt = 0.125, .fma = 0.125, .ld = 2.1 },
    [ORK_TWIN_W_Q6_K] = { .sdot = 2, .vec = 2, .fcvt = 0.125, .fma = 0.125, .ld = 2 },
};
/* Per output element: horizontal reduction (2 FADDP + FADD) and a quarter of a store. */
static const struct mix mm_out = { .vec = 3, .st = 0.25 };

/* Per-vector mixes of the elementwise phases (docs/twin.md "CPU phase formulas"). */
static const struct mix mx_rmsnorm = { .ld = 3, .fma = 1, .vec = 2, .st = 1 };  /* 2 passes */
/* FADDP reduction, then FSQRT and FDIV, unpipelined (~10 cycles each on V0) [INF] */
static const struct mix mx_rmsnorm_row = { .vec = 24, .scalar = 8 };
/* Q8_0 per 32: FABS 8, FMAX 7 + 2, FMUL 8, XTN 6 = 31; FCVTAS 8 + scale 1; 32 B + scale out */
static const struct mix mx_quant_block = { .ld = 8, .vec = 31, .fcvt = 9, .st = 3, .scalar = 4 };
static const struct mix mx_dequant = { .ld = 2, .fcvt = 1, .vec = 2, .st = 1 };
static const struct mix mx_bias = { .ld = 2, .vec = 1, .st = 1 };
static const struct mix mx_rope = { .ld = 3, .vec = 3, .fma = 1, .st = 1 }; /* cos/sin table */
static const struct mix mx_residual = { .ld = 2, .vec = 1, .st = 1 };
/* x / (1 + e^-x) * up: FNEG, exp, FADD, FRECPE + 2 (FRECPS, FMUL), 2 FMUL */
static const struct mix mx_silu = { .ld = 2, .exp = 1, .vec = 9, .st = 1 };
/* max pass (LD, FMAX), exp pass (LD, FSUB, exp, FADD, ST), scale pass (LD, FMUL, ST) */
static const struct mix mx_softmax = { .ld = 3, .vec = 4, .exp = 1, .st = 2 };
static const struct mix mx_softmax_row = { .vec = 16, .scalar = 8 };           /* 2 reductions, FDIV */
static const struct mix mx_argmax = { .ld = 1, .vec = 3 };                     /* FCMGT, BSL, FMAX */
static const struct mix mx_copy = { .ld = 1, .st = 1 };
static const struct mix mx_zero = { 0 };

static struct mix mix_add(struct mix a, struct mix b, double k)
{
    a.vec += k * b.vec, a.fma += k * b.fma, a.sdot += k * b.sdot, a.fcvt += k * b.fcvt;
    a.exp += k * b.exp, a.ld += k * b.ld, a.st += k * b.st, a.scalar += k * b.scalar;
    return a;
}

static double max3(double a, double b, double c)
{
    double m = a > b ? a : b;
    return m > c ? m : c;
}

/* Issue-bound time (ns) of a mix on one A76 core. */
static double mix_ns(const struct ork_twin_consts *c, struct mix m)
{
    double exp_ops = c->cpu_exp_cycles * c->cpu_vec_per_cycle;     /* instructions per expf */
    double v = m.vec / c->cpu_vec_per_cycle + m.fma / c->cpu_fma_per_cycle +
               m.sdot / c->cpu_sdot_per_cycle + m.fcvt / c->cpu_fcvt_per_cycle +
               m.exp * c->cpu_exp_cycles;
    double mem = m.ld / c->cpu_load_per_cycle + m.st / c->cpu_store_per_cycle;
    double instr = m.vec + m.fma + m.sdot + m.fcvt + m.exp * exp_ops + m.ld + m.st + m.scalar;
    return max3(v, mem, instr / c->cpu_issue_width) / c->cpu_freq_hz * 1e9;
}

/* Activation bytes reach DRAM only when the working set does not fit the L3. */
static double spill(const struct ork_twin_consts *c, double footprint, double bytes)
{
    return footprint > c->cpu_l3_bytes ? bytes : 0;
}

static struct ork_twin_work work(double issue_ns, double bytes)
{
    return (struct ork_twin_work){ .issue_ns = issue_ns, .bytes = bytes };
}

/* rows x ceil(n / 4) vectors of `per_vec` plus `per_row` for each row. */
static double rows_ns(const struct ork_twin_consts *c, uint64_t rows, uint64_t n, struct mix per_vec,
                      struct mix per_row)
{
    double vecs = ceil((double)n / LANES);
    struct mix m = mix_add(mix_add(mx_zero, per_vec, vecs * (double)rows), per_row, (double)rows);
    return mix_ns(c, m);
}

const char *ork_twin_wtype_name(enum ork_twin_wtype t)
{
    return (unsigned)t < ORK_TWIN_W_COUNT ? wtype_names[t] : "?";
}

double ork_twin_wtype_bytes(enum ork_twin_wtype t, double n)
{
    return (unsigned)t < ORK_TWIN_W_COUNT ? n / WBLOCK * wtype_block_bytes[t] : 0;
}

struct ork_twin_work ork_twin_work_sum(struct ork_twin_work a, struct ork_twin_work b)
{
    a.fixed_ns += b.fixed_ns, a.issue_ns += b.issue_ns, a.bytes += b.bytes;
    a.serial = a.serial || b.serial;
    return a;
}

struct ork_twin_work ork_twin_cpu_embed(const struct ork_twin_consts *c, enum ork_twin_wtype t,
                                        uint64_t rows, uint64_t dim)
{
    if ((unsigned)t >= ORK_TWIN_W_COUNT)
        t = ORK_TWIN_W_F32;
    /* unpack the row's blocks, widen to f32 (SXTL 4 + SCVTF 8), apply the scale, store 8 */
    static const struct mix widen = { .vec = 12, .fcvt = 8, .st = 8 };
    struct mix per_block = t == ORK_TWIN_W_F32 ? mix_add(mx_zero, mx_copy, 8)
                                               : mix_add(mm_unpack[t], widen, 1);
    double blocks = ceil((double)dim / WBLOCK) * (double)rows;
    return work(mix_ns(c, mix_add(mx_zero, per_block, blocks)),
                ork_twin_wtype_bytes(t, blocks * WBLOCK));   /* rows are scattered: DRAM */
}

struct ork_twin_work ork_twin_cpu_rmsnorm(const struct ork_twin_consts *c, uint64_t rows, uint64_t n)
{
    double fp = 8.0 * (double)rows * (double)n;                 /* x in, y out, f32 */
    return work(rows_ns(c, rows, n, mx_rmsnorm, mx_rmsnorm_row), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_quantize(const struct ork_twin_consts *c, uint64_t rows, uint64_t n)
{
    double blocks = ceil((double)n / WBLOCK) * (double)rows;
    double fp = (double)rows * (double)n * (4.0 + 34.0 / 32.0);
    return work(mix_ns(c, mix_add(mx_zero, mx_quant_block, blocks)), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_dequant(const struct ork_twin_consts *c, uint64_t n, uint32_t in_el_bytes)
{
    struct mix m = mx_dequant;
    if (in_el_bytes < 4)
        m.vec += 1;                                             /* SXTL widen int16 */
    double out = 4.0 * (double)n;
    /* the NPU wrote its output to DRAM: every input byte is a miss after the invalidate */
    return work(rows_ns(c, 1, n, m, mx_zero), (double)in_el_bytes * (double)n + spill(c, out, out));
}

struct ork_twin_work ork_twin_cpu_bias(const struct ork_twin_consts *c, uint64_t n)
{
    double fp = 8.0 * (double)n;
    return work(rows_ns(c, 1, n, mx_bias, mx_zero), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_rope(const struct ork_twin_consts *c, uint64_t n)
{
    double fp = 8.0 * (double)n;
    return work(rows_ns(c, 1, n, mx_rope, mx_zero), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_kv_append(const struct ork_twin_consts *c, uint64_t n, uint32_t kv_el_bytes)
{
    struct mix m = { .ld = 1, .st = kv_el_bytes >= 4 ? 1 : 0.5, .fcvt = kv_el_bytes >= 4 ? 0 : 1 };
    return work(rows_ns(c, 1, n, m, mx_zero), (double)kv_el_bytes * (double)n);  /* cache in DRAM */
}

struct ork_twin_work ork_twin_cpu_softmax(const struct ork_twin_consts *c, uint64_t rows, uint64_t n)
{
    double fp = 4.0 * (double)rows * (double)n;
    return work(rows_ns(c, rows, n, mx_softmax, mx_softmax_row), spill(c, fp, 2 * fp));
}

struct ork_twin_work ork_twin_cpu_silu_mul(const struct ork_twin_consts *c, uint64_t n)
{
    double fp = 12.0 * (double)n;
    return work(rows_ns(c, 1, n, mx_silu, mx_zero), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_residual(const struct ork_twin_consts *c, uint64_t n)
{
    double fp = 12.0 * (double)n;
    return work(rows_ns(c, 1, n, mx_residual, mx_zero), spill(c, fp, fp));
}

struct ork_twin_work ork_twin_cpu_kslice_sum(const struct ork_twin_consts *c, uint64_t n, uint32_t slices)
{
    double s = slices ? (double)slices : 1;
    struct mix m = { .ld = s, .vec = s - 1, .st = 1 };
    return work(rows_ns(c, 1, n, m, mx_zero), 4.0 * s * (double)n);  /* device buffers */
}

struct ork_twin_work ork_twin_cpu_gather(const struct ork_twin_consts *c, uint64_t bytes)
{
    return work(rows_ns(c, 1, (bytes + 3) / 4, mx_copy, mx_zero), (double)bytes);
}

/* W4A8's host halves (npu-weight-decompression.md §2; docs/twin.md "W4A8"). The split, per
 * 32 int8 activations of a token (two 16-byte vectors): h's nibble is q >> 4 (USHR, the low
 * 4 bits of the arithmetic shift), l's is (q & 15) - 8 = (q ^ 8) & 15 (EOR); each row packs
 * its 32 nibbles into 16 bytes, the even element low (UZP1, UZP2, SLI #4): 2 LD, 10 ALU, 2 ST
 * (one per physical row) [INF] (counted, not measured). */
static const struct mix mx_i4_split = { .ld = 2, .vec = 10, .st = 2 };
/* The reconstruction, per 4 int32 results and K-slice: the h and l partials of 4 columns are
 * one 16-byte load of the (N/8, M, 8) int16 layout (rows 2r, 2r + 1 adjacent), SSHLL #4 (16 h,
 * widened), SADDW (+ l), ADD into the sum (the first slice adds the correction); per 4 results
 * once: the correction's load and the int32 store [INF]. */
static const struct mix mx_i4_recon_slice = { .ld = 1, .vec = 3 };
static const struct mix mx_i4_recon_out = { .ld = 1, .st = 1 };

struct ork_twin_work ork_twin_cpu_i4_split(const struct ork_twin_consts *c, uint64_t rows,
                                           uint64_t k_padded)
{
    double blocks = ceil((double)k_padded / WBLOCK) * (double)rows;
    /* every written byte is the device buffer's, cleaned to DRAM by the MEM_SYNC that follows
     * (as the int8 copy-in, ork_twin_cpu_gather) */
    return work(mix_ns(c, mix_add(mx_zero, mx_i4_split, blocks)), (double)rows * (double)k_padded);
}

struct ork_twin_work ork_twin_cpu_i4_reconstruct(const struct ork_twin_consts *c, uint64_t n_out,
                                                 uint64_t n_cols, uint32_t slices)
{
    double s = slices ? (double)slices : 1;
    struct mix m = mix_add(mx_i4_recon_out, mx_i4_recon_slice, s);
    /* NPU-written partials: 2 rows x 2 bytes a result and slice; the correction (int32 a
     * column) misses too: a model's corrections exceed the L3 */
    return work(rows_ns(c, 1, n_out, m, mx_zero), 4.0 * s * (double)n_out + 4.0 * (double)n_cols);
}

double ork_twin_npu_share_bps(const struct ork_twin_consts *c, uint32_t cores)
{
    double k = cores ? (double)cores : c->npu_cores;
    double bw = c->npu_bw_all / k;
    return bw < c->npu_bw_core ? bw : c->npu_bw_core;
}

struct ork_twin_work ork_twin_cpu_sample(const struct ork_twin_consts *c, uint64_t vocab, uint32_t top_k)
{
    double v = (double)vocab;
    if (top_k == 0)     /* temperature softmax over the vocabulary, then a cumulative draw */
        return ork_twin_work_sum(ork_twin_cpu_softmax(c, 1, vocab),
                                 work(rows_ns(c, 1, vocab, mx_argmax, mx_zero), 0));
    double ns = rows_ns(c, 1, vocab, mx_argmax, mx_zero);
    if (top_k > 1) {
        /* a running threshold admits ~k ln(V/k) candidates, each a log2(k)-deep heap step of
         * ~4 scalar instructions; then softmax and a draw over the k survivors */
        double k = top_k, cand = k * log(v / k > 1 ? v / k : 1);
        struct mix heap = { .scalar = cand * (log2(k) + 1) * 4 };
        ns += mix_ns(c, heap) + ork_twin_cpu_softmax(c, 1, top_k).issue_ns;
    }
    return work(ns, 0);     /* V fp32 logits (<= 1 MiB for 151936) stay in the L3 */
}

struct ork_twin_work ork_twin_cpu_attention(const struct ork_twin_consts *c, const struct ork_twin_attn *a)
{
    double heads = a->n_heads ? a->n_heads : 1, kvh = a->n_kv_heads ? a->n_kv_heads : heads;
    double hd = a->head_dim, pairs = (double)a->pairs * heads;
    double rows = a->q_rows ? (double)a->q_rows : 1;
    /* each K/V element is loaded and widened once for every query head of its group and
     * every query row of a register tile */
    double reuse = heads / kvh * fmin(rows, c->cpu_gemm_tile_rows);
    bool f32 = a->kv_el_bytes >= 4;
    struct mix kv8 = { .ld = f32 ? 2 : 1, .fcvt = f32 ? 0 : 2 };  /* per 8 elements of K or V */
    struct mix per8 = mix_add((struct mix){ .fma = 2 }, kv8, 1.0 / reuse);
    struct mix m = mix_add(mx_zero, per8, 2.0 * pairs * hd / 8.0);           /* QK^T and PV */
    m = mix_add(m, (struct mix){ .vec = 3, .scalar = 1 }, pairs);            /* reduce, scale */
    m = mix_add(m, mx_softmax, pairs / LANES);
    m = mix_add(m, mx_softmax_row, rows * heads);
    double kv_bytes = 2.0 * (double)a->keys * kvh * hd * (double)a->kv_el_bytes;
    return work(mix_ns(c, m), kv_bytes);
}

/* Cycles per 32-weight block of one weight row for a call of `rows` X rows, from the NEON
 * kernels' cost table (tools/a76_cost.tsv, folded into the cpu_mm_* constants): the 16-row
 * interleaved kernels (ORK_LAYOUT_X16: Q8_0/Q4_0/Q4_K matrices of a multiple of 16 rows, rows
 * of at most 64 KiB, docs/kernels.md "Interleaved weights") run M = 1 as the decode stream and
 * M > 1 as full tiles (6 X rows for Q8_0/Q4_0, 4 for Q4_K) and one tile of the rows left,
 * charged as the smallest tile in the table that holds them (1 row: the stream); other
 * Q8_0/Q4_0 matrices the one-row dot per X row. 0: the type has no row in the table (the
 * instruction mixes below charge it). */
static double table_cycles(const struct ork_twin_consts *c, enum ork_twin_wtype t, double rows,
                           uint64_t k, uint64_t n)
{
    double m1, m2, m4, m6, tile;
    switch (t) {
    case ORK_TWIN_W_Q8_0:
        m1 = c->cpu_mm_q8_0_m1_cycles, m2 = c->cpu_mm_q8_0_m2_cycles;
        m4 = c->cpu_mm_q8_0_m4_cycles, m6 = c->cpu_mm_q8_0_m6_cycles, tile = X16_TILE_ROWS_Q8;
        break;
    case ORK_TWIN_W_Q4_0:
        m1 = c->cpu_mm_q4_0_m1_cycles, m2 = c->cpu_mm_q4_0_m2_cycles;
        m4 = c->cpu_mm_q4_0_m4_cycles, m6 = c->cpu_mm_q4_0_m6_cycles, tile = X16_TILE_ROWS_Q8;
        break;
    case ORK_TWIN_W_Q4_K:
        m1 = c->cpu_mm_q4_k_m1_cycles, m2 = m4 = m6 = c->cpu_mm_q4_k_m4_cycles;
        tile = X16_TILE_ROWS_Q4K;
        break;
    case ORK_TWIN_W_Q6_K:
        m1 = c->cpu_mm_q6_k_m1_cycles, m2 = c->cpu_mm_q6_k_m2_cycles;
        m4 = c->cpu_mm_q6_k_m4_cycles, m6 = c->cpu_mm_q6_k_m6_cycles, tile = X16_TILE_ROWS_Q8;
        break;
    default:
        return 0;
    }
    bool x16 = n % X16_ROWS == 0 && ork_twin_wtype_bytes(t, (double)k) <= X16_MAX_ROW_BYTES;
    if (!x16)
        return t == ORK_TWIN_W_Q4_K || t == ORK_TWIN_W_Q6_K ? 0 : rows * c->cpu_mm_rows_m1_cycles;
    if (rows <= 1)
        return m1;
    double full = floor(rows / tile), left = rows - tile * full;
    double part = left == 0 ? 0 : left <= 1 ? m1 : left <= 2 ? m2 : left <= 4 ? m4 : m6;
    return full * (tile == X16_TILE_ROWS_Q8 ? m6 : m4) + part;
}

struct ork_twin_work ork_twin_cpu_matmul(const struct ork_twin_consts *c, enum ork_twin_wtype t,
                                         uint64_t m, uint64_t k, uint64_t n)
{
    if ((unsigned)t >= ORK_TWIN_W_COUNT)
        t = ORK_TWIN_W_F32;
    double rows = m ? (double)m : 1, blocks = ceil((double)k / WBLOCK) * (double)n;
    bool fact = t == ORK_TWIN_W_F32 || t == ORK_TWIN_W_F16;
    double act = rows * (double)k * (fact ? 4.0 : 34.0 / 32.0), out = rows * (double)n * 4.0;
    double bytes = ork_twin_wtype_bytes(t, blocks * WBLOCK) + spill(c, act, act) + spill(c, out, out);
    double cyc = table_cycles(c, t, rows, k, n);
    if (cyc > 0) {
        /* the kernels end in one lane per weight row: a store per 4 outputs */
        struct mix st = { .st = 0.25 * rows * (double)n };
        return work(blocks * cyc / c->cpu_freq_hz * 1e9 + mix_ns(c, st), bytes);
    }
    double tiles = ceil(rows / c->cpu_gemm_tile_rows);
    struct mix mx = mix_add(mix_add(mx_zero, mm_unpack[t], blocks * tiles), mm_dot[t], blocks * rows);
    mx = mix_add(mx, mm_out, rows * (double)n);
    return work(mix_ns(c, mx), bytes);
}

struct ork_twin_work ork_twin_host_ioctl(const struct ork_twin_consts *c)
{
    return (struct ork_twin_work){ .fixed_ns = c->ioctl_ns };
}

struct ork_twin_work ork_twin_host_cache_sync(const struct ork_twin_consts *c, uint64_t bytes, bool to_device)
{
    double mib = (double)bytes / (1024.0 * 1024.0);
    return (struct ork_twin_work){ .fixed_ns = c->ioctl_ns, .issue_ns = mib * c->cache_sync_ns_per_mib,
                                   .bytes = to_device ? (double)bytes : 0 };  /* dirty write-back */
}

struct ork_twin_work ork_twin_host_futex(const struct ork_twin_consts *c)
{
    return (struct ork_twin_work){ .fixed_ns = c->futex_ns };
}

struct ork_twin_work ork_twin_host_wake(const struct ork_twin_consts *c)
{
    return (struct ork_twin_work){ .fixed_ns = c->thread_wake_ns };
}

struct ork_twin_work ork_twin_host_handoff(const struct ork_twin_consts *c)
{
    /* the producer's flag line moves to the consumer, the consumer's ack line comes back */
    return (struct ork_twin_work){ .fixed_ns = 2 * c->cpu_line_transfer_ns };
}

struct ork_twin_work ork_twin_host_barrier(const struct ork_twin_consts *c, uint32_t k)
{
    /* k arrivals serialised on one counter line, then the release line reaches every waiter */
    double ns = k > 1 ? ((double)k + 1) * c->cpu_line_transfer_ns : 0;
    return (struct ork_twin_work){ .fixed_ns = ns };
}

struct ork_twin_work ork_twin_npu_task(const struct ork_twin_consts *c, bool first, bool fp16,
                                       uint64_t macs, uint64_t weight_bytes, uint64_t out_bytes,
                                       uint32_t freq_mhz)
{
    /* anchors §8: t = t_launch|t_chain + (W + out) / BW + MACs / R_mac, additive;
     * MAC rates were measured at 1 GHz (npu_freq reference, anchors §8 "NPU clock") */
    double f = freq_mhz ? freq_mhz / ORK_TWIN_NPU_REF_FREQ_MHZ : 1.0;
    double rate = (fp16 ? c->npu_mac_fp16 : c->npu_mac_int8) * f;
    return (struct ork_twin_work){ .fixed_ns = first ? c->npu_launch_ns : c->npu_chain_ns,
                                   .issue_ns = (double)macs / rate * 1e9,
                                   .bytes = (double)weight_bytes + (double)out_bytes,
                                   .serial = true };
}
