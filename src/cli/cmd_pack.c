/* cmd_pack.c -- `ork pack MODEL`: build (or check) the NPU-ready weights MODEL.orkpack beside a
 * GGUF model, the file `--device npu|sim` would otherwise build on first use. The format and
 * the checks live in src/engine/npu/orkpack.c. `--device D` names the NPU backend the pack is
 * for: the bytes are the same on every backend (the hardware's tiling, docs/orkpack.md), so D
 * is probed (libork's ork_npu_probe: a device that is absent or denied is an error naming it)
 * and the pack's weights are placed into D's IOMMU domains, as the executor places them
 * (layer by layer), to say how many D must offer; fewer is refused. */
#include "cli.h"

#include <ork-engine/engine.h>
#include <ork-engine/orkpack.h>
#include <ork/error.h>
#include <ork/npu.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "pack"
#define MIB (1024.0 * 1024.0)
/* Per-domain guard when a backend does not say: the project's 3900 MiB (spec §13). */
#define DEFAULT_DOMAIN_BYTES ((uint64_t)3900 << 20)
/* rknpu 0.9.8 = 908: the first SUBMIT layout with an IOMMU domain id (spec §10.3). */
#define DRV_0_9_8 908u

static void usage(FILE *out)
{
    fprintf(out, "usage: ork pack MODEL.gguf [options]\n\n"
                 "Build MODEL.orkpack, the NPU-ready int8 weights (per-output-channel scales)\n"
                 "of MODEL, unless a valid one exists. A stale, foreign, corrupt or older pack\n"
                 "is explained and rebuilt. See docs/orkpack.md.\n\n"
                 "options:\n"
                 "  -o, --output FILE   where to write the pack (default: MODEL.orkpack)\n"
                 "  --device DEV        the NPU backend it is for: auto (default: the NPU\n"
                 "                      present, else any), npu (the best present), rknpu,\n"
                 "                      rocket, sim or sim-rocket. The pack is the same for\n"
                 "                      every backend; DEV must be usable, and the weights are\n"
                 "                      placed into its IOMMU domains (printed; a model needing\n"
                 "                      more domains than DEV offers is refused, e.g. rknpu\n"
                 "                      older than 0.9.8 offers one)\n"
                 "  --npu-domain-bytes N  bytes per IOMMU domain for that placement (default:\n"
                 "                      the device's, 3900 MiB; as the engine's option)\n"
                 "  --npu-caps FILE     the board's capability record (`ork selftest\n"
                 "                      --confirm-forms`): --npu-weights dcomp and w4a8 need it\n"
                 "                      there\n"
                 "  --force             rebuild even if the pack is valid\n"
                 "  --check             only check: exit 0 if valid, 1 if not (nothing built)\n"
                 "  -q, --quiet         no progress bar\n");
    ork_cli_npu_weights_help(out);
}

/* --npu-weights-calib: the pack is written by a load that calibrates (docs/dcomp.md
 * "Calibrated quantisation"): the model runs on dev over the text, then the pack is rebuilt
 * from the calibrated codes (always: a calibration is not kept between runs). */
static int pack_calibrated(const char *model, const char *out,
                           const struct ork_npu_weights_opts *wo, const char *caps,
                           const char *dev, bool quiet)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = dev;
    mp.load = ORK_LOAD_MMAP;
    mp.no_repack = true;
    mp.npu_pack_path = out;
    mp.npu_capabilities = caps;
    mp.npu_weights = *wo;
    if (quiet)
        mp.npu_flags |= ORK_NPU_EXEC_QUIET;
    struct ork_model *m;
    int ret = ork_model_load(model, &mp, &m);
    if (ret == 0)
        ork_model_free(m);
    return ret;
}

/* The backend `--device` names, probed: 0 with *info filled (status 0), -1 when "auto" finds
 * no NPU (any backend will do), or an exit code after printing why DEV cannot be used. */
static int resolve_device(const char *dev, struct ork_npu_probe_info *info)
{
    static const char *const real[] = { "rknpu", "rocket" };
    if (!strcmp(dev, "cpu")) {
        fprintf(stderr, "ork %s: --device cpu: the CPU reads the GGUF itself; a pack is for an "
                "NPU backend (npu, rknpu, rocket, sim, sim-rocket)\n", CMD);
        return ORK_EXIT_USAGE;
    }
    if (!strcmp(dev, "auto") || !strcmp(dev, "npu")) {
        char why[2][600];
        for (int i = 0; i < 2; i++) {
            if (ork_npu_probe(real[i], NULL, info) < 0) {
                ork_cli_error(CMD, ORK_EINVAL);
                return ORK_EXIT_ERROR;
            }
            if (info->status == 0)
                return 0;
            snprintf(why[i], sizeof why[i], "%s", info->message);
        }
        if (!strcmp(dev, "auto"))
            return -1;
        fprintf(stderr, "ork %s: --device npu: no usable NPU (rknpu: %s; rocket: %s)\n", CMD,
                why[0], why[1]);
        return ORK_EXIT_ERROR;
    }
    if (ork_npu_probe(dev, NULL, info) < 0) {
        fprintf(stderr, "ork %s: invalid value '%s' for --device: must be auto, npu, rknpu, "
                "rocket, sim or sim-rocket\n", CMD, dev);
        return ORK_EXIT_USAGE;
    }
    if (info->status != 0) {
        fprintf(stderr, "ork %s: device %s is not usable: %s\n", CMD, dev, info->message);
        return ORK_EXIT_ERROR;
    }
    return 0;
}

/* Layer of a pack tensor ("blk.L.*"); -1 for the rest (the head, placed last). */
static long tensor_layer(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    char *end;
    long l = strtol(name + 4, &end, 10);
    return end != name + 4 && *end == '.' ? l : -1;
}

/* Place the pack's matrices into domains of `dom_bytes` layer by layer, as the executor does
 * (a layer does not straddle two domains): each matrix counts its device bytes with its M = 1
 * plan's buffers (ork_npu_weights_estimate_bytes), a lower bound of what the executor makes.
 * Prints the placement; returns an exit code. */
static int report_placement(const char *pack, const struct ork_npu_probe_info *info,
                            uint64_t dom_bytes)
{
    struct ork_orkpack *pk = NULL;
    int ret = ork_orkpack_open(pack, NULL, NULL, &pk, NULL);
    if (ret < 0) {
        ork_cli_error(CMD, ret);
        return ORK_EXIT_ERROR;
    }
    uint32_t n = ork_orkpack_n_tensors(pk), domains = 1, mats = 0;
    uint64_t used = 0, total = 0, layer_need = 0;
    long layer = LONG_MIN;
    int rc = ORK_EXIT_OK;
    for (uint32_t i = 0; i <= n && rc == ORK_EXIT_OK; i++) {
        struct ork_orkpack_tensor t = { 0 };
        long l = LONG_MAX;               /* past the end: flush the last layer */
        if (i < n) {
            if ((ret = ork_orkpack_tensor_at(pk, i, &t)) < 0) {
                ork_cli_error(CMD, ret);
                rc = ORK_EXIT_ERROR;
                break;
            }
            if (!t.q_bytes)
                continue;                /* a tensor the NPU does not take */
            l = tensor_layer(t.name);
        }
        if (l != layer && layer_need) {
            if (layer_need > dom_bytes) {
                fprintf(stderr, "ork %s: %s: layer %ld needs %.2f MiB of device memory, more "
                        "than one IOMMU domain of %.2f MiB holds: %s cannot run this model (the "
                        "pack itself is valid)\n", CMD, pack, layer, (double)layer_need / MIB,
                        (double)dom_bytes / MIB, info->backend);
                rc = ORK_EXIT_ERROR;
                break;
            }
            if (used && used + layer_need > dom_bytes) {
                domains++;
                used = 0;
            }
            used += layer_need;
            layer_need = 0;
        }
        layer = l;
        if (i < n) {
            uint64_t b = ork_npu_weights_estimate_bytes(ORK_NPU_I8, t.n, t.k, 1);
            layer_need += b > t.q_bytes ? b : t.q_bytes;
            total += t.q_bytes;
            mats++;
        }
    }
    ork_orkpack_close(pk);
    if (rc != ORK_EXIT_OK)
        return rc;
    printf("placement on %s: %u matrices, %.2f MiB of NPU weights, at least %u IOMMU domain%s "
           "of %.2f MiB (%s offers %u)\n", info->backend, mats, (double)total / MIB, domains,
           domains == 1 ? "" : "s", (double)dom_bytes / MIB, info->backend, info->n_domains);
    if (domains > info->n_domains) {
        fprintf(stderr, "ork %s: %s: the model needs at least %u IOMMU domains; %s offers %u "
                "(the pack itself is valid)%s\n", CMD, pack, domains, info->backend,
                info->n_domains,
                info->n_domains == 1 && info->driver_version && info->driver_version < DRV_0_9_8
                    ? " (rknpu older than 0.9.8 cannot name a domain, docs/hardware.md §10.3: "
                      "update the driver, or use a smaller model)"
                    : "");
        return ORK_EXIT_ERROR;
    }
    return ORK_EXIT_OK;
}

int ork_cmd_pack(int argc, char **argv)
{
    const char *model = NULL, *out = NULL, *device = NULL, *caps = NULL;
    uint64_t dom_bytes = 0;
    bool force = false, quiet = false, check = false;
    struct ork_npu_weights_opts wo = { 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rw = ork_cli_npu_weights_opt(CMD, argc, argv, &i, &wo);
        if (rw < 0)
            return ORK_EXIT_USAGE;
        if (rw > 0)
            continue;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (!(out = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--device")) {
            if (!(device = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--npu-caps")) {
            if (!(caps = ork_cli_value(CMD, argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(a, "--npu-domain-bytes")) {
            const char *v = ork_cli_value(CMD, argc, argv, &i);
            if (!v || !ork_cli_parse_u64(CMD, a, v, &dom_bytes))
                return ORK_EXIT_USAGE;
            if (dom_bytes == 0) {
                fprintf(stderr, "ork %s: invalid value '0' for %s: must be > 0\n", CMD, a);
                return ORK_EXIT_USAGE;
            }
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
    /* the device first: an unusable one fails before any work */
    struct ork_npu_probe_info info = { .struct_size = sizeof info };
    int dev_rc = resolve_device(device ? device : "auto", &info);
    if (dev_rc > 0)
        return dev_rc;
    const bool placed = dev_rc == 0;
    if (!dom_bytes)
        dom_bytes = info.domain_bytes ? info.domain_bytes : DEFAULT_DOMAIN_BYTES;
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
        if (wo.calib_path)  /* a pack of calibrated codes records it (ORK_NPU_WENC_CALIBRATED) */
            wo.flags |= ORK_NPU_WENC_CALIBRATED;
        ret = ork_orkpack_check_for_model(model, out, &wo);
        if (ret < 0) {
            ork_cli_error(CMD, ret);
            return ORK_EXIT_ERROR;
        }
        printf("%s: valid\n", out);
        return placed ? report_placement(out, &info, dom_bytes) : ORK_EXIT_OK;
    }
    enum ork_orkpack_problem found = ORK_ORKPACK_MISSING;
    if (wo.calib_path)      /* on the NPU present (a named backend: that one), else the sim */
        ret = pack_calibrated(model, out, &wo, caps,
                              placed ? (device && strcmp(device, "auto") ? device : "npu")
                                     : "sim", quiet);
    else
        ret = ork_orkpack_build_for_model(model, out, &wo, caps, force, quiet, &found);
    if (ret < 0) {
        ork_cli_error(CMD, ret);
        return ORK_EXIT_ERROR;
    }
    if (wo.calib_path)
        printf("%s: built from the codes calibrated on %s\n", out, wo.calib_path);
    else if (found == ORK_ORKPACK_OK && !force)
        printf("%s: valid, kept\n", out);
    else
        printf("%s: built (%s before)\n", out, ork_orkpack_problem_name(found));
    return placed ? report_placement(out, &info, dom_bytes) : ORK_EXIT_OK;
}
