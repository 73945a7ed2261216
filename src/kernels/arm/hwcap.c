/* arm/hwcap.c -- the AArch64 capabilities the kernel paths depend on, decoded from the Linux
 * auxiliary vector's AT_HWCAP / AT_HWCAP2 words, and which paths they allow. dispatch.c reads
 * the words with getauxval on AArch64 and asks here; the decoding is plain integer logic with
 * no NEON, so unlike the other files of arm/ it is built on every architecture, and
 * tests/unit/test_kernels_hwcap.c checks the mapping from given bits (a Cortex-A76's, a
 * Neoverse N2's, ...) on any host, not only from the CPU it runs on. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kern_priv.h"

/* Bits of AT_HWCAP and AT_HWCAP2 (Linux arch/arm64/include/uapi/asm/hwcap.h). */
#define HWCAP_FPHP (1ul << 9)       /* scalar FP16 arithmetic (FEAT_FP16) */
#define HWCAP_ASIMDHP (1ul << 10)   /* Advanced SIMD FP16 arithmetic (FEAT_FP16) */
#define HWCAP_ASIMDDP (1ul << 20)   /* SDOT / UDOT (FEAT_DotProd) */
#define HWCAP_ASIMDFHM (1ul << 23)  /* FMLAL / FMLSL (FEAT_FHM) */
#define HWCAP2_I8MM (1ul << 13)     /* SMMLA / UMMLA / USMMLA / USDOT (FEAT_I8MM) */

static const struct {
    unsigned cap;
    const char *name;           /* as /proc/cpuinfo's "Features" line spells it */
} cap_names[] = {
    { ORK__ACAP_ASIMDDP, "asimddp" }, { ORK__ACAP_FPHP, "fphp" },
    { ORK__ACAP_ASIMDHP, "asimdhp" }, { ORK__ACAP_ASIMDFHM, "asimdfhm" },
    { ORK__ACAP_I8MM, "i8mm" },
};

unsigned ork__arm_caps(unsigned long hwcap, unsigned long hwcap2)
{
    unsigned c = 0;
    c |= (hwcap & HWCAP_ASIMDDP) ? ORK__ACAP_ASIMDDP : 0u;
    c |= (hwcap & HWCAP_FPHP) ? ORK__ACAP_FPHP : 0u;
    c |= (hwcap & HWCAP_ASIMDHP) ? ORK__ACAP_ASIMDHP : 0u;
    c |= (hwcap & HWCAP_ASIMDFHM) ? ORK__ACAP_ASIMDFHM : 0u;
    c |= (hwcap2 & HWCAP2_I8MM) ? ORK__ACAP_I8MM : 0u;
    return c;
}

bool ork__arm_path_ok(enum kisa k, unsigned caps)
{
    switch (k) {
    case KISA_SCALAR:
    case KISA_NEON:             /* Advanced SIMD is baseline AArch64 */
        return true;
    case KISA_NEON_DOT:
        return (caps & ORK__ACAP_ASIMDDP) != 0;
    case KISA_NEON_I8MM:        /* the dotprod path's kernels plus smmla tiles */
        return (caps & ORK__ACAP_ASIMDDP) && (caps & ORK__ACAP_I8MM);
    default:
        return false;
    }
}

enum kisa ork__arm_best(unsigned caps)
{
    enum kisa best = KISA_SCALAR;
    for (int k = 0; k < KISA_COUNT; k++)
        if (ork__arm_path_ok((enum kisa)k, caps))
            best = (enum kisa)k;
    return best;
}

size_t ork__arm_caps_str(unsigned caps, char *buf, size_t size)
{
    size_t n = 0;
    if (size)
        buf[0] = '\0';
    for (size_t i = 0; i < sizeof cap_names / sizeof cap_names[0]; i++) {
        if (!(caps & cap_names[i].cap))
            continue;
        int w = snprintf(buf + (n < size ? n : size), n < size ? size - n : 0, "%s%s",
                         n ? " " : "", cap_names[i].name);
        n += w > 0 ? (size_t)w : 0;
    }
    return n;
}
