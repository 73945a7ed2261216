/* ork-tooling/readbw.h -- the read-only streaming kernel that measures how fast this CPU can
 * pull memory in (the access pattern of a matmul streaming its weights, without the
 * arithmetic): a sum of every 64-bit word, with the widest loads of the kernels' path and
 * enough independent accumulators that the loop is bound by memory, not by the adds.
 * src/tooling/membw.c times it for the "read" bandwidth and the decode roofline of `ork bench`.
 * Not here: timing or threading (membw.c splits the array over a pool and times it). */
#ifndef ORK_TOOLING_READBW_H
#define ORK_TOOLING_READBW_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Sum modulo 2^64 of the native-order 64-bit words at p, p + 8, ..., p + bytes - 1 (the last
 * bytes % 8 bytes zero-extended to one more word); p needs no alignment. Every path
 * (ork_kernels_path) gives the same value; the caller keeps it live so that the loads stay. */
uint64_t ork_cpu_read_sum(const void *p, size_t bytes);

/* The load instruction the current path's read kernel streams with, e.g. "vmovdqu64 zmm",
 * "vmovdqu ymm", "ld1 v.16b", "scalar". */
const char *ork_cpu_read_insn(void);

#ifdef __cplusplus
}
#endif
#endif
