/* cmd_perplexity.c -- placeholder until the subcommand lands; replaced by its implementation. */
#include "cli.h"

#include <stdio.h>

int ork_cmd_perplexity(int argc, char **argv)
{
    (void)argc;
    fprintf(stderr, "ork %s: not available in this build\n", argv[0]);
    return ORK_EXIT_ERROR;
}
