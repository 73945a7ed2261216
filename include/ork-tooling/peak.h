/* ork-tooling/peak.h -- the measured arithmetic peak of this CPU: how many f32 FMA flops and
 * int8 dot-product operations per second the vector units sustain when nothing but independent
 * register-only chains of one instruction run (no memory traffic). `ork bench --peak` sets
 * prefill results against it, as `--membw` sets decode results against memory bandwidth.
 *
 * Counting: an FMA on L lanes is 2 L flops; an int8 dot step that multiplies P byte pairs and
 * adds them into the accumulator is 2 P operations (the unit a matmul's 2 * M * N * K counts). */
#ifndef ORK_TOOLING_PEAK_H
#define ORK_TOOLING_PEAK_H

#ifdef __cplusplus
extern "C" {
#endif

struct ork_pool;

struct ork_cpu_peak {
    int threads;                /* threads that ran the loops (the pool's) */
    double f32_flops;           /* f32 FMA flops per second, all threads; 0: no vector FMA */
    double int8_ops;            /* int8 dot operations per second, all threads; 0: none */
    const char *f32_insn;       /* the instruction timed, e.g. "vfmadd231ps zmm", "fmla v.4s" */
    const char *int8_insn;      /* e.g. "vpdpbusd zmm", "vpmaddubsw+vpmaddwd ymm", "sdot v.4s" */
};

/* Time both loops on every thread of pool (NULL: the calling thread only) for about
 * `ms_each` milliseconds each (<= 0: 100 ms) with the widest instructions the kernels' path
 * (ork_kernels_path) may use; best of three. */
int ork_cpu_peak_measure(struct ork_pool *pool, int ms_each, struct ork_cpu_peak *out);

#ifdef __cplusplus
}
#endif
#endif
