/* cmd_devices.c -- `ork devices`: what each NPU backend finds on this machine (libork's
 * ork_npu_probe): node, driver version, cores, IOMMU domains and status (ok / absent /
 * permission denied / unusable, with the reason), then what --device auto and npu pick. The
 * probing is libork's; this file prints. docs/board.md explains the output. */
#include "cli.h"

#include <ork/error.h>
#include <ork/npu.h>
#include <ork/text.h>

#include <stdio.h>
#include <string.h>

#define CMD "devices"

static const char *const backends[] = { "rknpu", "rocket", "sim", "sim-rocket" };
#define N_BACKENDS (sizeof backends / sizeof backends[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: ork devices [--json]\n\n"
                 "List each NPU backend: rknpu (vendor driver, /dev/dri), rocket (mainline accel\n"
                 "driver, /dev/accel), and the simulator behind each (sim, sim-rocket): device\n"
                 "node, driver version, cores, IOMMU domains and status (ok, absent, permission\n"
                 "denied, or unusable with the reason), then what --device auto picks. Exit 0\n"
                 "when the listing ran. See docs/board.md.\n\n"
                 "options:\n"
                 "  --json   one JSON object (for a report)\n");
}

static const char *status_name(int st)
{
    if (st == 0)
        return "ok";
    if (st == ORK_ENOENT)
        return "absent";
    if (st == ORK_EACCES)
        return "permission denied";
    return "unusable";
}

static void version_text(uint32_t v, char *buf, size_t cap)
{
    if (!v)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%u.%u.%u", v / 10000, v / 100 % 100, v % 100);
}

int ork_cmd_devices(int argc, char **argv)
{
    bool json = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = true;
        } else {
            fprintf(stderr, "ork %s: unknown option '%s' (see ork %s --help)\n", CMD, argv[i], CMD);
            return ORK_EXIT_USAGE;
        }
    }
    struct ork_npu_probe_info info[N_BACKENDS];
    const char *pick = NULL;
    for (size_t b = 0; b < N_BACKENDS; b++) {
        int ret = ork_npu_probe(backends[b], NULL, &info[b]);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            return ORK_EXIT_ERROR;
        }
        /* --device auto / npu: the first real backend that opens (rknpu, then rocket) */
        if (!pick && b < 2 && info[b].status == 0)
            pick = backends[b];
    }
    if (json) {
        printf("{\"devices\":[");
        for (size_t b = 0; b < N_BACKENDS; b++) {
            const struct ork_npu_probe_info *p = &info[b];
            printf("%s{\"backend\":", b ? "," : "");
            ork_json_put_quoted(stdout, p->backend);
            printf(",\"status\":");
            ork_json_put_quoted(stdout, status_name(p->status));
            printf(",\"node\":");
            ork_json_put_quoted(stdout, p->node);
            printf(",\"driver_version\":%u,\"cores\":%u,\"domains\":%u,\"message\":",
                   p->driver_version, p->n_cores, p->n_domains);
            ork_json_put_quoted(stdout, p->message);
            printf("}");
        }
        printf("],\"auto\":");
        ork_json_put_quoted(stdout, pick ? pick : "cpu");
        printf("}\n");
        return ORK_EXIT_OK;
    }
    printf("%-11s %-18s %-20s %-8s %5s %7s\n", "backend", "status", "node", "driver", "cores",
           "domains");
    for (size_t b = 0; b < N_BACKENDS; b++) {
        const struct ork_npu_probe_info *p = &info[b];
        char ver[32], cores[16] = "-", doms[16] = "-";
        version_text(p->driver_version, ver, sizeof ver);
        if (p->status == 0) {
            snprintf(cores, sizeof cores, "%u", p->n_cores);
            snprintf(doms, sizeof doms, "%u", p->n_domains);
        }
        const char *node = p->node[0] ? p->node : (b >= 2 && p->status == 0 ? "(simulator)" : "-");
        printf("%-11s %-18s %-20s %-8s %5s %7s\n", p->backend, status_name(p->status), node, ver,
               cores, doms);
        if (p->status != 0)
            printf("  %s\n", p->message);
    }
    if (pick)
        printf("--device auto and npu use: %s\n", pick);
    else
        printf("--device auto uses: the CPU (no usable NPU; --device npu fails; --device sim "
               "runs the simulator)\n");
    return ORK_EXIT_OK;
}
