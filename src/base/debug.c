/* debug.c -- ORK_DEBUG parsing and the flag table (logging and bypass flags only). */
#include <ork/debug.h>
#include <ork/log.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const struct ork_debug_flag flags[] = {
    { "regs",      ORK_DBG_REGS,      "logging: pretty-print every regcmd program before submit" },
    { "submit",    ORK_DBG_SUBMIT,    "logging: one line per NPU submit" },
    { "sim",       ORK_DBG_SIM,       "logging: simulator task walk and hazard detail" },
    { "gguf",      ORK_DBG_GGUF,      "logging: GGUF parse detail" },
    { "tokenizer", ORK_DBG_TOKENIZER, "logging: pre-tokenizer splits and merges" },
    { "model",     ORK_DBG_MODEL,     "logging: model load decisions" },
    { "sync",      ORK_DBG_SYNC,      "bypass: wait for every NPU submit before returning" },
    { "scalar",    ORK_DBG_SCALAR,    "bypass: use the scalar reference CPU kernels" },
    { "phases",    ORK_DBG_PHASES,    "logging: forward-pass wall time split into matmuls, "
                                      "attention and the rest, per token (when a session ends)" },
    { NULL, 0, NULL },
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint32_t parsed;
static bool help;

static void parse(void)
{
    const char *env = getenv("ORK_DEBUG");
    if (!env)
        return;
    const char *p = env;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == 4 && strncmp(p, "help", 4) == 0) {
            help = true;
        } else if (n > 0) {
            const struct ork_debug_flag *f = flags;
            while (f->name && !(strlen(f->name) == n && strncmp(f->name, p, n) == 0))
                f++;
            if (f->name)
                parsed |= f->bit;
            else
                ORK_LOGW("ORK_DEBUG: unknown flag '%.*s' (ORK_DEBUG=help lists them)", (int)n, p);
        }
        p += n;
        if (*p == ',')
            p++;
    }
}

uint32_t ork_debug_flags(void)
{
    pthread_once(&once, parse);
    return parsed;
}

bool ork_debug_help_requested(void)
{
    pthread_once(&once, parse);
    return help;
}

const struct ork_debug_flag *ork_debug_table(void)
{
    return flags;
}

void ork_debug_print_help(FILE *out)
{
    fprintf(out, "ORK_DEBUG=flag[,flag...] -- debug flags:\n");
    for (const struct ork_debug_flag *f = flags; f->name; f++)
        fprintf(out, "  %-10s %s\n", f->name, f->help);
}
