/* readbw.c -- the read-only streaming kernel of the bandwidth probe (ork-tooling/readbw.h): the
 * kernels' read-sum loop (ork_kernels_read_sum, the one the matmul's read-ahead streams the next
 * weights with), under the probe's names. Not here: timing or threading (membw.c). */
#include <stddef.h>
#include <stdint.h>

#include <ork-kernels/kernels.h>
#include <ork-tooling/readbw.h>

uint64_t ork_cpu_read_sum(const void *p, size_t bytes)
{
    return ork_kernels_read_sum(p, bytes);
}

const char *ork_cpu_read_insn(void)
{
    return ork_kernels_read_insn();
}
