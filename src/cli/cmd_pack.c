/* cmd_pack.c -- `ork pack MODEL`: build (or check) the NPU-ready weights MODEL.orkpack beside a
 * GGUF model, the file `--device npu|sim` would otherwise build on first use. The format and
 * the checks live in src/engine/npu/orkpack.c; this file is argument handling only. */
#include "cli.h"

#include <ork-engine/orkpack.h>
#include <ork/error.h>

#include <stdio.h>
#include <string.h>

#define CMD "pack"

static void usage(FILE *out)
{
    fprintf(out, "usage: ork pack MODEL.gguf [options]\n\n"
                 "Build MODEL.orkpack, the NPU-ready int8 weights (per-output-channel scales)\n"
                 "of MODEL, unless a valid one exists. A stale, foreign, corrupt or older pack\n"
                 "is explained and rebuilt. See docs/orkpack.md.\n\n"
                 "options:\n"
                 "  -o, --output FILE   where to write the pack (default: MODEL.orkpack)\n"
                 "  --force             rebuild even if the pack is valid\n"
                 "  --check             only check: exit 0 if valid, 1 if not (nothing built)\n"
                 "  -q, --quiet         no progress bar\n");
}

int ork_cmd_pack(int argc, char **argv)
{
    const char *model = NULL, *out = NULL;
    bool force = false, quiet = false, check = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--force")) {
            force = true;
        } else if (!strcmp(a, "--check")) {
            check = true;
        } else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
            quiet = true;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, a, CMD);
            return ORK_EXIT_USAGE;
        } else if (!model) {
            model = a;
        } else {
            fprintf(stderr, "ork %s: one model only ('%s')\n", CMD, a);
            return ORK_EXIT_USAGE;
        }
    }
    if (!model) {
        fprintf(stderr, "ork %s: MODEL is required (see ork %s --help)\n", CMD, CMD);
        return ORK_EXIT_USAGE;
    }
    char path[4096];
    int ret;
    if (!out) {
        if ((ret = ork_orkpack_path_for(model, path, sizeof path)) < 0) {
            ork_cli_error(CMD, ret);
            return ORK_EXIT_ERROR;
        }
        out = path;
    }
    if (check) {
        /* read-only: the identity check needs the model's header only */
        ret = ork_orkpack_check_for_model(model, out);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            return ORK_EXIT_ERROR;
        }
        printf("%s: valid\n", out);
        return ORK_EXIT_OK;
    }
    enum ork_orkpack_problem found = ORK_ORKPACK_MISSING;
    ret = ork_orkpack_build_for_model(model, out, force, quiet, &found);
    if (ret < 0) {
        ork_cli_error(CMD, ret);
        return ORK_EXIT_ERROR;
    }
    if (found == ORK_ORKPACK_OK && !force)
        printf("%s: valid, kept\n", out);
    else
        printf("%s: built (%s before)\n", out, ork_orkpack_problem_name(found));
    return ORK_EXIT_OK;
}
