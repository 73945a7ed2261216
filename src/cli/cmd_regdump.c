/* cmd_regdump.c -- `ork regdump FILE`: print an NPU regcmd program buffer (raw little-endian
 * 64-bit entries, spec §2.1) symbolically, one line per entry, through the register database's
 * pretty-printer; entries with unknown targets or registers, or a target that does not match
 * the register's block (spec §2.2), are flagged with "!!". Only decoding: no validation of the
 * matmul rules (that is the simulator's job). */
#include "cli.h"

#include <ork/alloc.h>
#include <ork/error.h>
#include <ork/regs.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define ENTRY_BYTES 8u   /* one u64 per register write (spec §2.1) */

static void usage(FILE *out)
{
    fprintf(out,
            "usage: ork regdump [--help] FILE\n"
            "\n"
            "Print an RK3588 NPU regcmd program buffer symbolically: FILE holds raw\n"
            "little-endian 64-bit entries (target << 48 | value << 16 | register). One line\n"
            "per entry: index, raw entry, target id, register name, value and fields.\n"
            "Entries with an unknown target or register, or a target that does not match the\n"
            "register's block, end in \"!! <reason>\". A line \"-- end of task\" follows each\n"
            "OPERATION_ENABLE trailer entry. FILE may be - for standard input.\n");
}

int ork_cmd_regdump(int argc, char **argv)
{
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return ORK_EXIT_OK;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ork regdump: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ORK_EXIT_USAGE;
        }
        if (path) {
            fprintf(stderr, "ork regdump: one FILE expected, got '%s' and '%s'\n", path, argv[i]);
            return ORK_EXIT_USAGE;
        }
        path = argv[i];
    }
    if (!path) {
        fprintf(stderr, "ork regdump: missing FILE\n");
        usage(stderr);
        return ORK_EXIT_USAGE;
    }

    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "ork regdump: cannot open '%s': %s\n", path, strerror(errno));
        return ORK_EXIT_ERROR;
    }
    int status = ORK_EXIT_OK;
    uint8_t e[ENTRY_BYTES];
    uint64_t n = 0, flagged = 0;
    char line[512];
    size_t got;
    while ((got = fread(e, 1, sizeof e, f)) == sizeof e) {
        uint64_t v = ork_regcmd_load(e);
        enum ork_regcmd_kind k = ork_regcmd_classify(v);
        ork_regcmd_format(line, sizeof line, v);
        printf("%5llu  %016llx  %s\n", (unsigned long long)n, (unsigned long long)v, line);
        if (k == ORK_REGCMD_UNKNOWN_TARGET || k == ORK_REGCMD_UNKNOWN_REG ||
            k == ORK_REGCMD_TARGET_MISMATCH)
            flagged++;
        if (k == ORK_REGCMD_OP_ENABLE)
            printf("-- end of task\n");
        n++;
    }
    if (ferror(f)) {
        fprintf(stderr, "ork regdump: read error on '%s': %s\n", path, strerror(errno));
        status = ORK_EXIT_ERROR;
    } else if (got) {
        fprintf(stderr, "ork regdump: '%s': %zu trailing bytes after %llu entries: the size is "
                "not a multiple of %u bytes (one 64-bit entry each)\n", path, got,
                (unsigned long long)n, ENTRY_BYTES);
        status = ORK_EXIT_ERROR;
    } else if (n == 0) {
        fprintf(stderr, "ork regdump: '%s' is empty (no 64-bit entries)\n", path);
        status = ORK_EXIT_ERROR;
    } else {
        printf("%llu entries, %llu flagged\n", (unsigned long long)n,
               (unsigned long long)flagged);
    }
    if (f != stdin)
        fclose(f);
    return status;
}
