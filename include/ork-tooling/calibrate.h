/* ork-tooling/calibrate.h -- `ork selftest --calibrate`: measure the board twin's constants
 * (include/ork/twin.h) on the device at hand and say, for every constant, what was measured,
 * how, and what it replaced (docs/twin.md "Calibration").
 *
 * NPU probes run through libork on an open device and are timed on its clock: the wall clock
 * (CLOCK_MONOTONIC) on a board, the simulator's model clock on `sim`, so that on the simulator
 * the same probes give back the constants the simulator runs on. CPU probes time the real
 * ork-kernels (RMSNorm, Q8_0 quantisation, softmax, SiLU x up, a Q8_0 GEMV over 32 MiB) on
 * this CPU; they mean something only on the board's A76 cores, so the selftest runs them on a
 * board and not on the simulator. Not here: argument handling (src/cli/cmd_selftest.c) or the
 * file format (ork_twin_calib_save). */
#ifndef ORK_TOOLING_CALIBRATE_H
#define ORK_TOOLING_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <ork/twin.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ork_npu;

/* Measured values are written with ORK_CALIB_DIGITS significant digits: a board's repeated
 * probes scatter by more than 1e-4 (anchors §7: run-to-run spread of several percent), and the
 * simulator's model clock (whole ns) resolves the probes to ~1e-5, so 4 digits keep what is
 * resolved and give back the simulator's table exactly. */
#define ORK_CALIB_DIGITS 4

/* One line of the report per twin constant. */
struct ork_calib_entry {
    const char *name, *unit;     /* the twin constant (static storage) */
    double before;               /* the value it replaced (the table passed in) */
    double raw;                  /* measured, before rounding (= before when not measured) */
    double value;                /* written: raw to ORK_CALIB_DIGITS digits, or before */
    bool measured;
    char how[200];               /* the probe and derivation, or why it was not measured */
};

#define ORK_CALIB_MAX_ENTRIES 64

struct ork_calib_report {
    struct ork_calib_entry e[ORK_CALIB_MAX_ENTRIES];
    uint32_t n;                  /* = the twin table's length */
    char source[512];            /* device, kernel, date, command: the file's "source" */
};

struct ork_calib_opts {
    uint32_t struct_size;        /* sizeof(struct ork_calib_opts); 0 = defaults */
    uint32_t reps;               /* runs per probe, the median kept; 0 = 5 (1 on the sim) */
    int cpu;                     /* CPU kernel probes: -1 never, 1 always, 0 = on a board only */
    uint32_t cpu_threads;        /* threads for the all-core probe; 0 = the twin's cpu_cores */
};

/* Measure into *c (which the caller fills first, normally with ork_twin_consts_default):
 * measured constants are replaced, the others keep their value; *r gets a line per constant.
 * On failure *c is unchanged and the message names the probe. */
int ork_calib_run(struct ork_npu *npu, const struct ork_calib_opts *o, struct ork_twin_consts *c,
                  struct ork_calib_report *r);

/* Print the report: measured constants (value, what it replaced, how), then "not measured". */
void ork_calib_report_print(const struct ork_calib_report *r, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
