/* cli.h -- shared pieces of the ork command-line program (src/cli/ only).
 *
 * Each subcommand is `int ork_cmd_<name>(int argc, char **argv)` in cmd_<name>.c, where argv[0]
 * is the subcommand name. It returns the process exit status (0 ok, 1 runtime error, 2 usage
 * error) after printing any error to stderr; only main() calls exit. `--help` on every
 * subcommand prints its usage to stdout and returns 0. */
#ifndef ORK_CLI_H
#define ORK_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ork-engine/engine.h>

/* A macro's value as a string literal (for --help texts). */
#define ORK_STR_(x) #x
#define ORK_STR(x) ORK_STR_(x)

#define ORK_EXIT_OK 0
#define ORK_EXIT_ERROR 1
#define ORK_EXIT_USAGE 2

int ork_cmd_run(int argc, char **argv);
int ork_cmd_chat(int argc, char **argv);
int ork_cmd_perplexity(int argc, char **argv);
int ork_cmd_info(int argc, char **argv);
int ork_cmd_regdump(int argc, char **argv);
int ork_cmd_selftest(int argc, char **argv);
int ork_cmd_serve(int argc, char **argv);
int ork_cmd_gguf(int argc, char **argv);
int ork_cmd_bench(int argc, char **argv);
int ork_cmd_top(int argc, char **argv);
int ork_cmd_pack(int argc, char **argv);
int ork_cmd_devices(int argc, char **argv);

/* Largest --npu-wait-ms: ten minutes, far past any job (a wedged core is seen at 61 s, spec
 * §8.6), so only a typo is refused. */
#define ORK_CLI_NPU_WAIT_MS_MAX 600000

/* Strict number parsing for option values: the whole string must parse and fit. On failure
 * they print "ork <cmd>: invalid value 'x' for OPT: reason" and return false. */
bool ork_cli_parse_int(const char *cmd, const char *opt, const char *s, long long lo, long long hi,
                       long long *out);
bool ork_cli_parse_float(const char *cmd, const char *opt, const char *s, double lo, double hi,
                         double *out);
bool ork_cli_parse_u64(const char *cmd, const char *opt, const char *s, uint64_t *out);
/* --kv-type: "f32" or "f16". */
bool ork_cli_parse_kv_type(const char *cmd, const char *s, enum ork_kv_type *out);

/* --npu-weights int8|dcomp|dcomp:L, --npu-weights-max-err E, --npu-weights-raw,
 * --npu-weights-clip into *wo (docs/dcomp.md): 1 consumed (and *i advanced past a value), 0
 * not one of them, -1 a bad value (printed, naming the value and the choices). The help lines
 * of the four. */
int ork_cli_npu_weights_opt(const char *cmd, int argc, char **argv, int *i,
                            struct ork_npu_weights_opts *wo);
void ork_cli_npu_weights_help(FILE *out);

/* For option loops: returns the value following argv[*i] (advancing *i), or prints
 * "ork <cmd>: OPT needs a value" and returns NULL. */
const char *ork_cli_value(const char *cmd, int argc, char **argv, int *i);

/* The long-option normaliser every command goes through (main.c): each "--name=value" argument
 * before a "--" becomes the two arguments "--name" "value" (a name is "--" then letters, digits
 * and '-'; other text with '=' is left whole). *out_argv is argv itself when nothing was split,
 * else a malloc'd copy (NULL-terminated) to release with ork_cli_split_eq_free(*out_argv,
 * argv). Returns 0 or ORK_ENOMEM. */
int ork_cli_split_eq(int argc, char **argv, char ***out_argv, int *out_argc);
void ork_cli_split_eq_free(char **nv, char **argv);

/* Print "ork <cmd>: <message from the library, or strerror(code)>" to stderr. */
void ork_cli_error(const char *cmd, int code);

#endif
