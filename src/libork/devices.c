/* devices.c -- ork_npu_probe(): open one backend as ork_npu_open() would, record what it
 * reports (node, driver version, cores, IOMMU domains) or why it cannot be used, and close it.
 * For `ork devices` and a board owner's first look; discovery itself is kmd/kmd_discovery.c. */
#include "ork_priv.h"

#include <ork/error.h>
#include <ork/npu.h>
#include <ork/sim.h>

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Device nodes the kernel drivers expose (DRM card/render nodes for rknpu, accel for rocket). */
static bool is_npu_node(const char *p)
{
    return !strncmp(p, "/dev/dri/", 9) || !strncmp(p, "/dev/accel/", 11);
}

/* The NPU node among this process's open files that was not open before (fds_before marks
 * them): the one the backend just opened. "" when none (the simulator). */
static void opened_node(const unsigned char *fds_before, size_t n_before, char *node, size_t cap)
{
    node[0] = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int fd = 0;
        if (sscanf(e->d_name, "%d", &fd) != 1 || fd < 0)
            continue;
        if ((size_t)fd < n_before && fds_before[fd])
            continue;
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = 0;
        if (is_npu_node(target)) {
            snprintf(node, cap, "%s", target);
            break;
        }
    }
    closedir(d);
}

#define PROBE_MAX_FDS 4096      /* fds tracked before the open (more are never NPU nodes here) */

static void mark_open_fds(unsigned char *fds, size_t cap)
{
    memset(fds, 0, cap);
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        int fd;
        if (sscanf(e->d_name, "%d", &fd) == 1 && fd >= 0 && (size_t)fd < cap)
            fds[fd] = 1;
    }
    closedir(d);
}

int ork_npu_probe(const char *backend, const void *sim_opts, struct ork_npu_probe_info *out)
{
    static const char *const names[] = { "rknpu", "rocket", "sim", "sim-rocket" };
    if (!backend || !out)
        return ork_errorf(ORK_EINVAL, "npu probe: backend and out are required");
    bool known = false;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        known = known || !strcmp(backend, names[i]);
    if (!known)
        return ork_errorf(ORK_EINVAL, "npu probe: unknown backend '%s' (rknpu, rocket, sim, "
                          "sim-rocket)", backend);
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    snprintf(out->backend, sizeof out->backend, "%s", backend);
    static unsigned char fds[PROBE_MAX_FDS];   /* probes run from one thread (the CLI) */
    mark_open_fds(fds, sizeof fds);
    struct ork_npu_opts o = { .struct_size = sizeof o, .device = backend,
                              .sim = (const struct ork_sim_opts *)sim_opts };
    struct ork_npu *npu = NULL;
    int ret = ork_npu_open(&o, &npu);
    if (ret < 0) {
        out->status = ret;
        snprintf(out->message, sizeof out->message, "%s", ork_error_describe(ret));
        ork_error_clear();
        return 0;
    }
    opened_node(fds, sizeof fds, out->node, sizeof out->node);
    uint64_t v;
    if (npu->kmd->query) {
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_DRV_VERSION, &v) == 0)
            out->driver_version = (uint32_t)v;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_N_CORES, &v) == 0)
            out->n_cores = (uint32_t)v;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_N_DOMAINS, &v) == 0)
            out->n_domains = (uint32_t)v;
        if (npu->kmd->query(npu->kctx, ORK_KMD_CAP_DOMAIN_BYTES, &v) == 0)
            out->domain_bytes = v;
    }
    if (!out->n_cores)
        out->n_cores = npu->n_cores;
    ork_npu_close(npu);
    return 0;
}
