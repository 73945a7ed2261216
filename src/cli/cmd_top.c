/* cmd_top.c -- `ork top [--interval MS] [--count N] [--csv] [--load-file PATH]`: live per-core NPU
 * load from the kernel's `load` file (spec §12.1: /sys/kernel/debug/rknpu/load, or /proc/rknpu/
 * load with the procfs option), else the newest load file an `ork` process on the simulator
 * writes (DIR/sim-load.PID, DIR = $XDG_RUNTIME_DIR/ork or /tmp/ork-UID: the rule of
 * src/engine/npu/placement.c), and per-CPU load from /proc/stat, sampled every MS milliseconds.
 * The NPU figures are the driver's own 1 s window; the CPU figures cover the interval. A load
 * file that stopped changing (a regular file not rewritten for TOP_STALE_MS, or whose writer
 * exited) is marked stale. Reads files only; never opens the NPU. */
#include "cli.h"

#include <ork/sim.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOP_MAX_NPU 3           /* RK3588 NPU cores (spec §1.1) */
#define TOP_MAX_CPU 64
#define TOP_DEFAULT_INTERVAL_MS 1000
#define TOP_MAX_INTERVAL_MS 3600000
/* A regular load file not rewritten for this long has stopped changing: three of the driver's
 * 1 s load windows (spec §12.1). The simulator rewrites its file whenever the text changes. */
#define TOP_STALE_MS 3000
#define TOP_SIM_LOAD_PREFIX "sim-load."     /* placement.c SIM_LOAD_NAME "." PID */

static const char *const default_load_files[] = {
    "/sys/kernel/debug/rknpu/load",     /* debugfs (spec §12.1) */
    "/proc/rknpu/load",                 /* the procfs build option (spec §12.1) */
};

struct cpu_times {
    int n;
    unsigned long long busy[TOP_MAX_CPU], total[TOP_MAX_CPU];
};

static int read_cpu_times(struct cpu_times *t)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    char line[512];
    t->n = 0;
    while (fgets(line, sizeof line, f) && t->n < TOP_MAX_CPU) {
        int id;
        unsigned long long v[8] = { 0 };
        if (strncmp(line, "cpu", 3) != 0 || line[3] < '0' || line[3] > '9')
            continue;
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &id, &v[0], &v[1],
                   &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]) < 5)
            continue;
        /* user nice system idle iowait irq softirq steal: idle + iowait are not busy */
        unsigned long long total = 0;
        for (int i = 0; i < 8; i++)
            total += v[i];
        t->busy[t->n] = total - v[3] - v[4];
        t->total[t->n] = total;
        t->n++;
    }
    fclose(f);
    return t->n > 0 ? 0 : -1;
}

static int read_npu_load(const char *path, int *pct)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char text[256];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    return ork_sim_load_parse(text, pct, TOP_MAX_NPU);
}

/* The simulator's load directory (placement.c's rule). */
static void sim_load_dir(char *buf, size_t cap)
{
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg)
        snprintf(buf, cap, "%s/ork", xdg);
    else
        snprintf(buf, cap, "/tmp/ork-%u", (unsigned)getuid());
}

/* The most recently written DIR/sim-load.PID into path; false when there is none. */
static bool newest_sim_load(char *path, size_t cap)
{
    char dir[512];
    sim_load_dir(dir, sizeof dir);
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *e;
    struct timespec best = { 0, 0 };
    bool found = false;
    while ((e = readdir(d))) {
        size_t lp = strlen(TOP_SIM_LOAD_PREFIX), ln = strlen(e->d_name);
        if (strncmp(e->d_name, TOP_SIM_LOAD_PREFIX, lp) || ln <= lp ||
            strspn(e->d_name + lp, "0123456789") != ln - lp)
            continue;       /* not the file itself (e.g. its .tmp while being replaced) */
        char p[1024];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (!found || st.st_mtim.tv_sec > best.tv_sec ||
            (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec)) {
            best = st.st_mtim;
            snprintf(path, cap, "%s", p);
            found = true;
        }
    }
    closedir(d);
    return found;
}

/* How stale the load file is: 0 = live (or a kernel file, whose mtime says nothing); else the
 * seconds since it last changed, or -1 when its writer (sim-load.PID) has exited. */
static long long load_staleness(const char *path)
{
    if (!strncmp(path, "/sys/", 5) || !strncmp(path, "/proc/", 6))
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t lp = strlen(TOP_SIM_LOAD_PREFIX);
    if (!strncmp(base, TOP_SIM_LOAD_PREFIX, lp) && base[lp]) {
        char *end;
        long pid = strtol(base + lp, &end, 10);
        if (!*end && pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH)
            return -1;
    }
    struct stat st;
    struct timespec now;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || clock_gettime(CLOCK_REALTIME, &now))
        return 0;
    long long age_ms = (long long)(now.tv_sec - st.st_mtim.tv_sec) * 1000 +
                       (now.tv_nsec - st.st_mtim.tv_nsec) / 1000000;
    return age_ms >= TOP_STALE_MS ? age_ms / 1000 : 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: ork top [--interval MS] [--count N] [--csv] [--load-file PATH]\n"
            "  live per-core NPU load (the driver's load file) and per-CPU load (/proc/stat)\n"
            "  --interval MS     sample period (default %d)\n"
            "  --count N         samples to print, then exit (default 0 = until interrupted)\n"
            "  --csv             one comma-separated row per sample, for logs\n"
            "  --load-file PATH  the NPU load file (default %s, else %s,\n"
            "                    else the newest $XDG_RUNTIME_DIR/ork/sim-load.PID (or\n"
            "                    /tmp/ork-UID/sim-load.PID) written by an ork run, serve or bench\n"
            "                    on the simulator); a file that stopped changing (%d ms) or\n"
            "                    whose writer exited is marked stale\n",
            TOP_DEFAULT_INTERVAL_MS, default_load_files[0], default_load_files[1], TOP_STALE_MS);
}

int ork_cmd_top(int argc, char **argv)
{
    long long interval = TOP_DEFAULT_INTERVAL_MS, count = 0;
    bool csv = false;
    const char *load = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return ORK_EXIT_OK;
        } else if (!strcmp(argv[i], "--csv")) {
            csv = true;
        } else if (!strcmp(argv[i], "--interval")) {
            if (!(v = ork_cli_value("top", argc, argv, &i)) ||
                !ork_cli_parse_int("top", "--interval", v, 1, TOP_MAX_INTERVAL_MS, &interval))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--count")) {
            if (!(v = ork_cli_value("top", argc, argv, &i)) ||
                !ork_cli_parse_int("top", "--count", v, 0, 1000000000, &count))
                return ORK_EXIT_USAGE;
        } else if (!strcmp(argv[i], "--load-file")) {
            if (!(load = ork_cli_value("top", argc, argv, &i)))
                return ORK_EXIT_USAGE;
        } else {
            fprintf(stderr, "ork top: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return ORK_EXIT_USAGE;
        }
    }
    int npu[TOP_MAX_NPU];
    char sim_path[1024];
    if (load) {
        errno = 0;
        if (read_npu_load(load, npu) < 0) {
            fprintf(stderr, "ork top: cannot read an NPU load line from %s: %s\n", load,
                    errno ? strerror(errno) : "not in the driver's load format");
            return ORK_EXIT_ERROR;
        }
    } else {
        for (size_t i = 0; i < sizeof default_load_files / sizeof *default_load_files; i++)
            if (read_npu_load(default_load_files[i], npu) >= 0) {
                load = default_load_files[i];
                break;
            }
        if (!load && newest_sim_load(sim_path, sizeof sim_path) &&
            read_npu_load(sim_path, npu) >= 0)
            load = sim_path;
        if (!load) {
            char dir[512];
            sim_load_dir(dir, sizeof dir);
            fprintf(stderr, "ork top: no NPU load file found (tried %s, %s; debugfs may need "
                    "root; and no %s/" TOP_SIM_LOAD_PREFIX "PID of an ork on the simulator); "
                    "use --load-file PATH\n", default_load_files[0], default_load_files[1], dir);
            return ORK_EXIT_ERROR;
        }
        if (!csv)
            printf("NPU load from %s\n", load);
    }
    struct cpu_times prev, cur;
    if (read_cpu_times(&prev) < 0) {
        fprintf(stderr, "ork top: cannot read /proc/stat\n");
        return ORK_EXIT_ERROR;
    }
    if (csv) {
        printf("time_ms");
        for (int i = 0; i < TOP_MAX_NPU; i++)
            printf(",npu%d", i);
        for (int i = 0; i < prev.n; i++)
            printf(",cpu%d", i);
        printf(",npu_stale\n");
    }
    fflush(stdout);
    for (long long s = 0; count == 0 || s < count; s++) {
        sleep_ms((long)interval);
        int n = read_npu_load(load, npu);
        if (n < 0) {
            fprintf(stderr, "ork top: %s stopped being readable\n", load);
            return ORK_EXIT_ERROR;
        }
        for (int i = n; i < TOP_MAX_NPU; i++)
            npu[i] = -1;
        if (read_cpu_times(&cur) < 0) {
            fprintf(stderr, "ork top: cannot read /proc/stat\n");
            return ORK_EXIT_ERROR;
        }
        long long t = (s + 1) * interval;
        if (csv)
            printf("%lld", t);
        else
            printf("%7.1fs  NPU", (double)t / 1000.0);
        for (int i = 0; i < TOP_MAX_NPU; i++) {
            if (csv)
                npu[i] < 0 ? printf(",") : printf(",%d", npu[i]);
            else if (npu[i] >= 0)
                printf(" core%d %3d%%", i, npu[i]);
        }
        long long stale = load_staleness(load);
        if (!csv && stale > 0)
            printf(" (stale: unchanged for %lld s)", stale);
        else if (!csv && stale < 0)
            printf(" (stale: its writer exited)");
        if (!csv)
            printf("  | CPU");
        for (int i = 0; i < cur.n && i < prev.n; i++) {
            unsigned long long dt = cur.total[i] - prev.total[i];
            unsigned long long db = cur.busy[i] - prev.busy[i];
            int pct = dt ? (int)(100.0 * (double)db / (double)dt + 0.5) : 0;
            if (csv)
                printf(",%d", pct);
            else
                printf(" %d:%3d%%", i, pct);
        }
        printf(csv ? ",%d\n" : "\n", stale != 0);
        fflush(stdout);
        prev = cur;
    }
    return ORK_EXIT_OK;
}
