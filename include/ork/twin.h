/* ork/twin.h -- the board twin: the RK3588's time on one model clock (docs/twin.md).
 *
 * Three parts, usable on their own:
 *   1. ONE table of constants (struct ork_twin_consts), each with a name, unit, default and
 *      source; every constant can be overridden in code or from a JSON calibration file.
 *   2. Cost functions that turn the operation counts of a CPU phase (elements, bytes, MACs,
 *      keys, vocabulary...) into work = {fixed latency, issue-bound time, DRAM bytes} on a
 *      Cortex-A76 at the table's clock, and the NPU per-task work of the simulator's formula.
 *   3. A timeline (struct ork_twin): the step's ops (CPU phases on k A76 cores, NPU tasks on
 *      one NPU core, host ioctls), each with its work, its dependencies and its resource, are
 *      simulated event by event with DRAM shared max-min fair between every running stream.
 *
 * What it is not: it executes nothing and reads no clock. The host computes values; the twin
 * accounts the board's time, so its numbers are bit-identical from run to run on any host.
 * Ownership: a twin owns its ops (a growable arena reused by every step); op labels are
 * borrowed and must stay valid until the next ork_twin_step_begin. Not thread-safe: one twin
 * per thread of accounting (the engine's one executor thread). */
#ifndef ORK_TWIN_H
#define ORK_TWIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Resource limits of the timeline (the RK3588 has 4 A76 + 4 A55 and 3 NPU cores). */
#define ORK_TWIN_MAX_CPU 8
#define ORK_TWIN_MAX_NPU 3
/* The NPU clock the npu_mac_* rates were measured at: the vendor kernel's 1 GHz (anchors §8
 * "NPU clock"); MAC terms scale by f / this. Shared with the simulator's timing model. */
#define ORK_TWIN_NPU_REF_FREQ_MHZ 1000.0

/* ---- 1. constants ------------------------------------------------------------------------
 * X(name, unit, default, kind, source). kind: ORK_TWIN_K_POS (finite, > 0), ORK_TWIN_K_NONNEG
 * (finite, >= 0), ORK_TWIN_K_CPUS / ORK_TWIN_K_NPUS (whole number in 1..ORK_TWIN_MAX_*).
 * Sources: "anchors §N" = ../shared/spec/performance-anchors.md, "spec §N" = rk3588-npu.md,
 * "SWOG" = Arm Cortex-A76 Software Optimization Guide (PJDOC-466751330-7215), "[INF]" = our
 * derivation, written out in docs/twin.md; "tools/a76_cost.tsv" = the NEON kernels' llvm-mca
 * cost table, folded in at build time (cmake/twin_a76_cost.cmake defines the ORK_TWIN_A76_*
 * values where the table is expanded, src/twin/twin_consts.c). */
#define ORK_TWIN_CONSTS(X)                                                                      \
    X(cpu_cores, "cores", 4, CPUS,                                                              \
      "RK3588 A76 cluster (cpu4-7); the A55s are not modelled: llama-bench -t 4 uses big cores "\
      "only and A55s drag the barrier (anchors 'Standard oRKLLM conditions', §7)")              \
    X(cpu_freq_hz, "Hz", 2.4e9, POS, "A76 at 2.4 GHz, governor performance (anchors conventions)") \
    X(cpu_issue_width, "instr/cycle", 4, POS, "A76 decodes and renames 4 instructions per cycle (SWOG §2)") \
    X(cpu_vec_per_cycle, "instr/cycle", 2, POS,                                                 \
      "ASIMD integer/logic/FP add-mul: two 128-bit pipes V0 V1 (SWOG §3 ASIMD tables)")          \
    X(cpu_fma_per_cycle, "instr/cycle", 2, POS, "128-bit FMLA (4 fp32 FMA) on V0 and V1 (SWOG §3)") \
    X(cpu_sdot_per_cycle, "instr/cycle", 2, POS,                                                \
      "128-bit SDOT (16 int8 MAC) on V0 and V1 (SWOG §3 ASIMD dot product)")                    \
    X(cpu_fcvt_per_cycle, "instr/cycle", 1, POS,                                                \
      "ASIMD conversions (SCVTF, FCVTAS, FCVTL/FCVTN f16<->f32) on one pipe (SWOG §3) [verify]") \
    X(cpu_exp_cycles, "cycles/vector", 7, POS,                                                  \
      "[INF] one 4-lane expf: range reduction, degree-5 polynomial, exponent insert = ~14 ASIMD " \
      "ops on 2 pipes")                                                                          \
    X(cpu_load_per_cycle, "instr/cycle", 2, POS, "two load pipes, 128-bit LDR Q each (SWOG §2-3)") \
    X(cpu_store_per_cycle, "instr/cycle", 1, POS, "one 128-bit store per cycle (SWOG §3)")       \
    X(cpu_bw_core, "B/s", 19.3e9, POS,                                                          \
      "STREAM copy, one thread, Rock 5B (anchors §1, EntityFX/anybench #39)")                   \
    X(cpu_bw_all, "B/s", 22.0e9, POS,                                                           \
      "STREAM copy, all threads, Rock 5B (anchors §1); 17-22 GB/s Turing RK1; GEMV 24.4 upper")  \
    X(cpu_l2_bytes, "B", 524288, POS, "512 KiB private L2 per A76 (RK3588 datasheet, CPU)")     \
    X(cpu_l3_bytes, "B", 3145728, POS, "3 MiB L3 shared by the cluster (RK3588 datasheet, DSU)") \
    X(cpu_gemm_tile_rows, "rows", 4, POS,                                                       \
      "NEON GEMM reuses one unpacked weight block for 4 activation rows (docs/kernels.md)")     \
    X(cpu_mm_q8_0_m1_cycles, "cycles/block", ORK_TWIN_A76_Q8_0_M1, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q8_0_M1_SRC ", llvm-mca")                              \
    X(cpu_mm_q8_0_m2_cycles, "cycles/block", ORK_TWIN_A76_Q8_0_M2, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q8_0_M2_SRC ", llvm-mca")                              \
    X(cpu_mm_q8_0_m4_cycles, "cycles/block", ORK_TWIN_A76_Q8_0_M4, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q8_0_M4_SRC ", llvm-mca")                              \
    X(cpu_mm_q8_0_m6_cycles, "cycles/block", ORK_TWIN_A76_Q8_0_M6, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q8_0_M6_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_0_m1_cycles, "cycles/block", ORK_TWIN_A76_Q4_0_M1, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_0_M1_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_0_m2_cycles, "cycles/block", ORK_TWIN_A76_Q4_0_M2, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_0_M2_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_0_m4_cycles, "cycles/block", ORK_TWIN_A76_Q4_0_M4, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_0_M4_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_0_m6_cycles, "cycles/block", ORK_TWIN_A76_Q4_0_M6, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_0_M6_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_k_m1_cycles, "cycles/block", ORK_TWIN_A76_Q4_K_M1, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_K_M1_SRC ", llvm-mca")                              \
    X(cpu_mm_q4_k_m4_cycles, "cycles/block", ORK_TWIN_A76_Q4_K_M4, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q4_K_M4_SRC ", llvm-mca; also for 2-3 rows")         \
    X(cpu_mm_q6_k_m1_cycles, "cycles/block", ORK_TWIN_A76_Q6_K_M1, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q6_K_M1_SRC ", llvm-mca")                              \
    X(cpu_mm_q6_k_m2_cycles, "cycles/block", ORK_TWIN_A76_Q6_K_M2, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q6_K_M2_SRC ", llvm-mca")                              \
    X(cpu_mm_q6_k_m4_cycles, "cycles/block", ORK_TWIN_A76_Q6_K_M4, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q6_K_M4_SRC ", llvm-mca")                              \
    X(cpu_mm_q6_k_m6_cycles, "cycles/block", ORK_TWIN_A76_Q6_K_M6, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_Q6_K_M6_SRC ", llvm-mca")                              \
    X(cpu_mm_rows_m1_cycles, "cycles/block", ORK_TWIN_A76_ROWS_M1, POS,                        \
      "tools/a76_cost.tsv: " ORK_TWIN_A76_ROWS_M1_SRC ", llvm-mca; Q8_0/Q4_0 matrices not "     \
      "interleaved by 16 rows, per X row")                                                      \
    X(cpu_line_transfer_ns, "ns", 60, NONNEG,                                                   \
      "[INF] core-to-core cache-line transfer through the DSU L3, ~140 cycles; unmeasured")     \
    X(ioctl_ns, "ns", 4500, NONNEG,                                                             \
      "[INF] 167 us floor - 44 % host synthesis - 80 us raw round trip = ~14 us over 3 ioctls " \
      "(anchors §2, §3.1)")                                                                      \
    X(futex_ns, "ns", 2000, NONNEG, "[INF] FUTEX_WAKE/WAIT syscall cost on the calling core; unmeasured") \
    X(thread_wake_ns, "ns", 25000, NONNEG,                                                      \
      "sleeping worker wake-up: half of the ~50 us per-matmul sleep/wake residual (2 hand-offs) " \
      "(anchors §2 'Thread hand-off', §4)")                                                      \
    X(cache_sync_ns_per_mib, "ns/MiB", 27000, NONNEG,                                           \
      "[INF] 16384 DC CVAC/CIVAC line operations per MiB at ~4 cycles, 2.4 GHz; unmeasured")    \
    X(npu_cores, "cores", 3, NPUS, "three NPU cores (spec §1.1)")                               \
    X(npu_mac_int8, "MAC/s", 0.6e12, POS,                                                       \
      "effective int8 MAC rate per core, range 0.4-0.8 (anchors §8 R_mac, §3.1-3.2 slopes)")    \
    X(npu_mac_fp16, "MAC/s", 0.3e12, POS, "half of int8 by the 1024:512 peak ratio (anchors §8, inferred)") \
    X(npu_bw_core, "B/s", 11.0e9, POS,                                                          \
      "single-core int8 weight stream (anchors §1, §8 BW_core_max; K-delta of §3.1: 10.3)")     \
    X(npu_bw_all, "B/s", 28.5e9, POS, "all NPU cores streaming, int8 (anchors §1, §8; range 28-31)") \
    X(npu_dcomp_gbps, "GB/s", 11.0, POS,                                                        \
      "[INF] guess: the CNA weight decompressor's int8 output per core, unmeasured "             \
      "(npu-weight-decompression.md §5 (a)); set to the raw weight DMA it feeds, npu_bw_core")  \
    X(npu_launch_ns, "ns", 55000, NONNEG,                                                       \
      "submit to PC start to completion IRQ to waiter: M-sweep intercept 52-56 us (anchors §3.1, §8)") \
    X(npu_chain_ns, "ns", 18000, NONNEG, "each extra PC-chained program (anchors §2, §8; spec §8.3)") \
    X(npu_domain_switch_ns, "ns", 100000, NONNEG,                                               \
      "[INF] half of the ~200 us per-op multi-domain overhead (anchors §2, §8); unmeasured")    \
    X(host_submit_floor_ns, "ns", 167000, NONNEG,                                               \
      "the open runtime's host cost per submit, for baseline reproductions only (anchors §2)")  \
    X(dram_bw_total, "B/s", 31.0e9, POS,                                                        \
      "DRAM shared by every stream: top of the 28-31 GB/s RKLLM-implied rate (anchors §1, §8), " \
      "92 % of the 33.8 GB/s LPDDR4X theoretical")

enum ork_twin_const_kind { ORK_TWIN_K_POS, ORK_TWIN_K_NONNEG, ORK_TWIN_K_CPUS, ORK_TWIN_K_NPUS };

struct ork_twin_consts {
#define ORK_TWIN_FIELD_(name, unit, def, kind, src) double name;
    ORK_TWIN_CONSTS(ORK_TWIN_FIELD_)
#undef ORK_TWIN_FIELD_
};

struct ork_twin_const_info {
    const char *name, *unit, *source;
    double def;
    enum ork_twin_const_kind kind;
    size_t offset;                  /* of the double in struct ork_twin_consts */
};

/* The table (static storage) and its length. */
const struct ork_twin_const_info *ork_twin_consts_table(size_t *n);
void ork_twin_consts_default(struct ork_twin_consts *c);
/* By name; ORK_ENOENT for an unknown name, ORK_ERANGE for a value its kind refuses. */
int ork_twin_consts_get(const struct ork_twin_consts *c, const char *name, double *v);
int ork_twin_consts_set(struct ork_twin_consts *c, const char *name, double v);
/* 0 when every constant is acceptable, else ORK_ERANGE naming the first that is not. */
int ork_twin_consts_check(const struct ork_twin_consts *c);

/* ---- 2. calibration file -----------------------------------------------------------------
 * {"format": "ork-twin-calibration", "version": 1, "source": "...", "constants": {name: value}}
 * Load starts from *c (callers pass defaults): keys missing from "constants" keep their value;
 * unknown or duplicate keys, wrong types, negative, zero-where-positive, NaN or infinite values
 * fail with ORK_EFORMAT/ORK_ERANGE naming the key, and leave *c untouched. Save writes every
 * constant with %.17g, so save -> load reproduces the table bit for bit. */
int ork_twin_calib_parse(const char *json, size_t len, struct ork_twin_consts *c);
int ork_twin_calib_load(const char *path, struct ork_twin_consts *c);
/* *out is ork_malloc'ed text (free with ork_free); `source` may be NULL. */
int ork_twin_calib_format(const struct ork_twin_consts *c, const char *source, char **out);
int ork_twin_calib_save(const char *path, const struct ork_twin_consts *c, const char *source);

/* Capabilities: the submit forms a board has confirmed, in the same file's "capabilities"
 * object: {"source": "...", "one_job_0x7": "confirmed" | "failed" | "untested"}. libork uses a
 * form that the spec marks [CAP]/[INF] only when it is confirmed here (ork_npu_opts
 * .capabilities; docs/npu.md "Submit forms"); `ork selftest --confirm-forms` tests the forms on
 * the board and records them. */
enum ork_twin_form {
    ORK_TWIN_FORM_ONE_JOB = 1u << 0,    /* one job, core_mask 0x7, subcore_task[2..4] (§9 [CAP]) */
    ORK_TWIN_FORM_DCOMP = 1u << 1,      /* the CNA weight decompressor, bit-exact
                                         * (npu-weight-decompression.md §1): "dcomp" */
    ORK_TWIN_FORM_WIDE_K = 1u << 2,     /* int8 M > 1 programs of K in (4096, 8192] by the
                                         * published rules (npu-weight-decompression.md §4.3) */
    ORK_TWIN_FORM_W4A8 = 1u << 3,       /* int4 x int4 -> int16 programs, bit-exact
                                         * (npu-weight-decompression.md §2): "w4a8" */
};
struct ork_twin_caps {
    uint32_t struct_size;
    uint32_t confirmed;                 /* ORK_TWIN_FORM_* bits recorded as "confirmed" */
    char source[160];                   /* who confirmed them, on what ("" when not given) */
};
/* Load the capabilities of a calibration file (a file without the object confirms nothing).
 * Unknown forms or values fail with ORK_EFORMAT naming them. */
int ork_twin_caps_load(const char *path, struct ork_twin_caps *out);
/* Write caps into the file's "capabilities" object (created when absent; other keys kept):
 * confirmed forms as "confirmed", the other `tested` bits as "failed", the rest "untested". */
int ork_twin_caps_save(const char *path, const struct ork_twin_caps *caps, uint32_t tested);

/* ---- 3. work and cost functions ----------------------------------------------------------
 * fixed_ns runs first and moves no bytes (launch, syscall, wake). The body is issue_ns of
 * single-core issue-bound time (split evenly over the op's cores) and `bytes` of DRAM traffic:
 * overlapped (CPU: the slower of the two bounds) or, with `serial`, the DRAM stream followed by
 * the compute (the NPU's additive per-task model, anchors §8). */
struct ork_twin_work {
    double fixed_ns;
    double issue_ns;
    double bytes;
    bool serial;
};

/* Weight and cache types the CPU matmul model knows (bytes per 32 weights in docs/twin.md). */
enum ork_twin_wtype {
    ORK_TWIN_W_F32, ORK_TWIN_W_F16, ORK_TWIN_W_Q8_0, ORK_TWIN_W_Q4_0, ORK_TWIN_W_Q4_K,
    ORK_TWIN_W_Q6_K, ORK_TWIN_W_COUNT
};
const char *ork_twin_wtype_name(enum ork_twin_wtype t);
/* Bytes of n weights of type t (n a multiple of 32; K-quants per 256 counted pro rata). */
double ork_twin_wtype_bytes(enum ork_twin_wtype t, double n);

struct ork_twin_work ork_twin_work_sum(struct ork_twin_work a, struct ork_twin_work b);

/* CPU phases. `rows` = independent vectors (tokens), `n` = elements per row. */
struct ork_twin_work ork_twin_cpu_embed(const struct ork_twin_consts *c, enum ork_twin_wtype t,
                                        uint64_t rows, uint64_t dim);
struct ork_twin_work ork_twin_cpu_rmsnorm(const struct ork_twin_consts *c, uint64_t rows, uint64_t n);
struct ork_twin_work ork_twin_cpu_quantize(const struct ork_twin_consts *c, uint64_t rows, uint64_t n);
/* NPU output (in_el_bytes: 4 int32, 2 int16/fp16) to fp32 with per-row and per-column scales. */
struct ork_twin_work ork_twin_cpu_dequant(const struct ork_twin_consts *c, uint64_t n, uint32_t in_el_bytes);
struct ork_twin_work ork_twin_cpu_bias(const struct ork_twin_consts *c, uint64_t n);
struct ork_twin_work ork_twin_cpu_rope(const struct ork_twin_consts *c, uint64_t n);
struct ork_twin_work ork_twin_cpu_kv_append(const struct ork_twin_consts *c, uint64_t n, uint32_t kv_el_bytes);
struct ork_twin_work ork_twin_cpu_softmax(const struct ork_twin_consts *c, uint64_t rows, uint64_t n);
struct ork_twin_work ork_twin_cpu_silu_mul(const struct ork_twin_consts *c, uint64_t n);
struct ork_twin_work ork_twin_cpu_residual(const struct ork_twin_consts *c, uint64_t n);
struct ork_twin_work ork_twin_cpu_kslice_sum(const struct ork_twin_consts *c, uint64_t n, uint32_t slices);
struct ork_twin_work ork_twin_cpu_gather(const struct ork_twin_consts *c, uint64_t bytes);
/* W4A8 (npu-weight-decompression.md §2; docs/twin.md "W4A8"): the host's split of `rows` int8
 * activation rows, k_padded each, into two int4 rows a token (h = q >> 4, l = (q & 15) - 8,
 * two nibbles a byte: rows * k_padded bytes written to the device buffer), and the
 * reconstruction of n_out int32 results from `slices` K-slices of int16 partials (two rows a
 * token: 16 h.B + l.B + the per-column correction 8 sum B of n_cols columns, read per call). */
struct ork_twin_work ork_twin_cpu_i4_split(const struct ork_twin_consts *c, uint64_t rows,
                                           uint64_t k_padded);
struct ork_twin_work ork_twin_cpu_i4_reconstruct(const struct ork_twin_consts *c, uint64_t n_out,
                                                 uint64_t n_cols, uint32_t slices);
/* A core's DRAM share when `cores` NPU cores stream at once: min(npu_bw_core, npu_bw_all /
 * cores) in B/s (the simulator's and the twin's rule; cores 0 = npu_cores). A DCOMP block takes
 * max(stream / share, int8 / (npu_dcomp_gbps 1e9)) against raw int8's int8 / share, so DCOMP
 * can never be faster than raw when npu_dcomp_gbps 1e9 <= the share. */
double ork_twin_npu_share_bps(const struct ork_twin_consts *c, uint32_t cores);
/* top_k = 1: greedy argmax; k > 1: threshold selection then softmax and a draw over k;
 * 0: temperature softmax over the whole vocabulary. */
struct ork_twin_work ork_twin_cpu_sample(const struct ork_twin_consts *c, uint64_t vocab, uint32_t top_k);

/* Attention for one layer: `q_rows` query rows, `pairs` = (query, key) pairs summed over the
 * rows (decode: L; causal prefill of M rows after P: M*P + M*(M+1)/2), `keys` = distinct keys
 * read (P + M), heads / kv_heads / head_dim, KV element bytes. Scores, softmax and the
 * weighted sum of V. */
struct ork_twin_attn {
    uint64_t q_rows, pairs, keys;
    uint32_t n_heads, n_kv_heads, head_dim, kv_el_bytes;
};
struct ork_twin_work ork_twin_cpu_attention(const struct ork_twin_consts *c, const struct ork_twin_attn *a);

/* NEON matmul, M activation rows x (K x N) weights of type t (dotprod on Q8_0 activations for
 * the quantised types, FMLA for F16/F32). */
struct ork_twin_work ork_twin_cpu_matmul(const struct ork_twin_consts *c, enum ork_twin_wtype t,
                                         uint64_t m, uint64_t k, uint64_t n);

/* Host costs: one ioctl; a MEM_SYNC of `bytes` (to_device cleans dirty lines: they are DRAM
 * writes); a FUTEX syscall; a sleeping thread's wake latency (use with ORK_TWIN_OP_IDLE on the
 * woken core); a spinning hand-off (two cache-line transfers); a k-core barrier. */
struct ork_twin_work ork_twin_host_ioctl(const struct ork_twin_consts *c);
struct ork_twin_work ork_twin_host_cache_sync(const struct ork_twin_consts *c, uint64_t bytes, bool to_device);
struct ork_twin_work ork_twin_host_futex(const struct ork_twin_consts *c);
struct ork_twin_work ork_twin_host_wake(const struct ork_twin_consts *c);
struct ork_twin_work ork_twin_host_handoff(const struct ork_twin_consts *c);
struct ork_twin_work ork_twin_host_barrier(const struct ork_twin_consts *c, uint32_t k);

/* One NPU program on one core (first: pays npu_launch_ns, else npu_chain_ns), serial body:
 * weight + output bytes at the core's DRAM share, then MACs at the per-core rate scaled by
 * freq_mhz (0 = 1000). */
struct ork_twin_work ork_twin_npu_task(const struct ork_twin_consts *c, bool first, bool fp16,
                                       uint64_t macs, uint64_t weight_bytes, uint64_t out_bytes,
                                       uint32_t freq_mhz);

/* ---- 4. the timeline ---------------------------------------------------------------------- */
enum ork_twin_phase {
#define ORK_TWIN_PHASES(X)                                                                      \
    X(OTHER, "other") X(EMBED, "embed") X(RMSNORM, "rmsnorm") X(QUANT, "quant")                 \
    X(DEQUANT, "dequant") X(BIAS, "bias") X(ROPE, "rope") X(KV_APPEND, "kv_append")             \
    X(ATTENTION, "attention") X(SOFTMAX, "softmax") X(SILU_MUL, "silu_mul")                     \
    X(RESIDUAL, "residual") X(KSLICE, "kslice_sum") X(GATHER, "gather")                         \
    X(CPU_MATMUL, "cpu_matmul") X(LM_HEAD, "lm_head") X(SAMPLE, "sample") X(IOCTL, "ioctl")     \
    X(CACHE_SYNC, "cache_sync") X(WAKE, "wake") X(HANDOFF, "handoff") X(NPU_MATMUL, "npu_matmul") \
    X(DOMAIN_SWITCH, "domain_switch") X(SPIN, "spin")                                           \
    X(I4_SPLIT, "i4_split") X(I4_RECON, "i4_recon") X(ROTATE, "rotate")
#define ORK_TWIN_PHASE_ENUM_(id, name) ORK_TWIN_PHASE_##id,
    ORK_TWIN_PHASES(ORK_TWIN_PHASE_ENUM_)
#undef ORK_TWIN_PHASE_ENUM_
    ORK_TWIN_PHASE_COUNT
};
const char *ork_twin_phase_name(enum ork_twin_phase p);

enum ork_twin_res { ORK_TWIN_CPU, ORK_TWIN_NPU };

#define ORK_TWIN_OP_IDLE 0x1u   /* holds its cores (ordering) but is not counted as busy */
/* A spinning thread (CPU, one core): it busy-polls its core for at most work.fixed_ns (its spin
 * window) and ends earlier when an op that names it with ORK_TWIN_OP_RELEASE becomes ready, or
 * when every op of the step that is not a spin has ended (the poll goes on into the next step:
 * ork_twin_op_times says how long it ran). Its core counts as busy; it is not CPU work, so it
 * counts neither in cpu_active_ns nor in the hidden time. While spins hold cores, a k-core op
 * (k > 1) runs on k less the cores they hold (at least one). */
#define ORK_TWIN_OP_SPIN 0x2u
/* With spin.op: end that spin when this op becomes ready and run on its core (a hand-off). */
#define ORK_TWIN_OP_RELEASE 0x4u

/* An op whose cost depends on a spinning thread: when the op becomes ready, if the spin op
 * (spin.op - 1) is still polling (or has not started yet), the op runs its own work; if the
 * spin window has expired (the thread went to sleep) it runs `cold` with cold_flags and
 * cold_phase instead (e.g. the wake-up of a sleeping thread, ORK_TWIN_OP_IDLE). */
struct ork_twin_spin_ref {
    uint32_t op;                 /* the spin op's id + 1; 0 = none */
    struct ork_twin_work cold;
    uint32_t cold_flags;
    enum ork_twin_phase cold_phase;
};

struct ork_twin_op_desc {
    enum ork_twin_res res;
    uint32_t core_mask;          /* cores it may take (bit i = core i); 0 = any */
    uint32_t n_cores;            /* CPU: cores it runs on (>= 1; > 1 adds a k-core barrier); NPU: 1 */
    enum ork_twin_phase phase;
    uint32_t flags;              /* ORK_TWIN_OP_* */
    struct ork_twin_work work;
    const char *label;           /* trace name; NULL = phase name; borrowed until step_begin */
    struct ork_twin_spin_ref spin;  /* zero: none */
};

struct ork_twin_result {
    double end_ns;                              /* the step's makespan on the model clock */
    double cpu_busy_ns[ORK_TWIN_MAX_CPU];       /* per A76 core (IDLE ops excluded) */
    double npu_busy_ns[ORK_TWIN_MAX_NPU];
    double cpu_active_ns, npu_active_ns;        /* time with >= 1 CPU (NPU) op running */
    double hidden_ns;                           /* CPU-active time that overlapped NPU-active */
    double hidden_share;                        /* hidden_ns / cpu_active_ns (0 when none) */
    double dram_bytes, dram_util;               /* bytes; bytes / (end * dram_bw_total) */
    double phase_ns[ORK_TWIN_PHASE_COUNT];      /* wall time of the phase's ops, summed */
    double phase_core_ns[ORK_TWIN_PHASE_COUNT]; /* the same times their cores */
    uint32_t n_ops;
};

struct ork_twin;

/* The twin copies *c (NULL = defaults); ORK_ERANGE when a constant is refused. */
int ork_twin_create(const struct ork_twin_consts *c, struct ork_twin **out);
void ork_twin_destroy(struct ork_twin *tw);
const struct ork_twin_consts *ork_twin_consts_of(const struct ork_twin *tw);

/* Clear the ops of the previous step (keeps the arena: no allocation once it has grown). */
void ork_twin_step_begin(struct ork_twin *tw);
/* Add an op that starts once every op in deps[0..n_deps) is done and its resource is free.
 * Returns its id (>= 0, ids count from 0 per step) or a negative ORK_E* code. deps must name
 * earlier ops. */
int ork_twin_op_add(struct ork_twin *tw, const struct ork_twin_op_desc *d, const int *deps,
                    uint32_t n_deps);
/* Shorthand: a CPU phase on `n_cores` of any cores after one dependency (dep < 0: none). */
int ork_twin_cpu_op(struct ork_twin *tw, enum ork_twin_phase p, uint32_t n_cores,
                    struct ork_twin_work w, int dep);
/* Simulate the step; *out gets the totals. Deterministic: same ops -> identical doubles. */
int ork_twin_step_run(struct ork_twin *tw, struct ork_twin_result *out);
/* Start/end (ns) of op `id` of the last run step. */
int ork_twin_op_times(const struct ork_twin *tw, int id, double *start_ns, double *end_ns);
/* Chrome/Perfetto trace-event JSON of the last run step: one track per A76 core and per NPU
 * core, complete events in µs on the model clock. */
int ork_twin_trace_write(const struct ork_twin *tw, FILE *f);
int ork_twin_trace_save(const struct ork_twin *tw, const char *path);
/* Several steps in one trace: _open writes the header and the tracks, _step the ops of the last
 * run step shifted by offset_ns (steps back to back: the sum of the earlier steps' end_ns),
 * _close the end. ork_twin_trace_write is _open, _step(0), _close. */
int ork_twin_trace_open(const struct ork_twin *tw, FILE *f);
int ork_twin_trace_step(const struct ork_twin *tw, FILE *f, double offset_ns);
int ork_twin_trace_close(FILE *f);

/* Sum b into acc (end times add, as steps run back to back; shares are recomputed). */
void ork_twin_result_accumulate(struct ork_twin_result *acc, const struct ork_twin_result *b,
                                const struct ork_twin_consts *c);

/* ---- 5. a CPU-only transformer forward ---------------------------------------------------
 * The shapes of a Llama/Qwen decoder; ork_twin_cpu_forward adds the ops of one forward batch
 * of `n_tokens` after `n_past` cached tokens, every phase on `n_threads` A76 cores in order.
 * n_logits rows go through the LM head (1 for a prompt batch, n_tokens for decode);
 * sample_top_k < 0 skips sampling. Returns the id of the last op or a negative code. */
struct ork_twin_llm {
    uint32_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn, vocab;
    bool qk_norm, bias_qkv;
    enum ork_twin_wtype wtype, out_wtype, embd_wtype;
    uint32_t kv_el_bytes;
};
int ork_twin_cpu_forward(struct ork_twin *tw, const struct ork_twin_llm *m, uint32_t n_tokens,
                         uint32_t n_past, uint32_t n_logits, uint32_t n_threads, int sample_top_k);

#ifdef __cplusplus
}
#endif
#endif
