/* ork/debug.h -- the one debug variable, ORK_DEBUG=flag,flag.
 *
 * Debug flags are for logging and for bypassing an optimisation to isolate a bug; tuning
 * knobs never live here (they are options in structs and CLI flags). ORK_DEBUG=help lists the
 * flags. The table is in src/libork/debug.c; add a flag there with its one-line description. */
#ifndef ORK_DEBUG_H
#define ORK_DEBUG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum ork_debug_flag_bits {
    ORK_DBG_REGS      = 1u << 0,  /* logging: pretty-print every regcmd program before submit */
    ORK_DBG_SUBMIT    = 1u << 1,  /* logging: one line per submit (tasks, cores, time) */
    ORK_DBG_SIM       = 1u << 2,  /* logging: simulator task walk and hazard detail */
    ORK_DBG_GGUF      = 1u << 3,  /* logging: GGUF parse detail */
    ORK_DBG_TOKENIZER = 1u << 4,  /* logging: pre-tokenizer splits and merges */
    ORK_DBG_MODEL     = 1u << 5,  /* logging: model load decisions */
    ORK_DBG_SYNC      = 1u << 6,  /* bypass: wait for every submit before returning */
    ORK_DBG_SCALAR    = 1u << 7,  /* bypass: force the scalar reference CPU kernels */
    ORK_DBG_PHASES    = 1u << 8,  /* logging: forward-pass time by phase, per session */
};
/* The logging flags: any of them lets info lines through (ork_logf). */
#define ORK_DBG_LOGGING (ORK_DBG_REGS | ORK_DBG_SUBMIT | ORK_DBG_SIM | ORK_DBG_GGUF |          \
                         ORK_DBG_TOKENIZER | ORK_DBG_MODEL | ORK_DBG_PHASES)

struct ork_debug_flag {
    const char *name;
    uint32_t bit;
    const char *help;
};

/* Parsed once from ORK_DEBUG on first use. Unknown names are warned about and ignored. */
uint32_t ork_debug_flags(void);
static inline bool ork_debug(uint32_t bit) { return (ork_debug_flags() & bit) != 0; }
/* The flag table (terminated by a NULL name) and a printer for ORK_DEBUG=help. */
const struct ork_debug_flag *ork_debug_table(void);
void ork_debug_print_help(FILE *out);
/* True when ORK_DEBUG contains "help" (the CLI prints the table and exits). */
bool ork_debug_help_requested(void);

#ifdef __cplusplus
}
#endif
#endif
