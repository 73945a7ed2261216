/* ork-tooling/selftest.h -- the selftest ladder a board owner runs once (docs/cli.md
 * "selftest"): discovery, then every submit form the engine can use, each bit-exact against
 * the CPU with one verdict line, a wedge caught by libork's bounded waits and recovered by a
 * reset, a re-warm and one retry. The report prints as lines and as JSON for posting.
 * Everything goes through the public libork API (<ork/npu.h>, <ork/sched.h>). */
#ifndef ORK_TOOLING_SELFTEST_H
#define ORK_TOOLING_SELFTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct ork_sim_opts;

struct ork_selftest_opts {
    uint32_t struct_size;
    const char *device;              /* ork_npu_open device ("auto", "rknpu", "sim", ...) */
    const struct ork_sim_opts *sim;  /* simulator options (tests: faults, discovery fakes) */
    const char *capabilities;        /* capability record to honour (ork_npu_opts.capabilities) */
    bool confirm_forms;              /* test the [CAP] forms too, and record the verdicts */
    const char *capabilities_out;    /* with confirm_forms: the file to record them in */
    FILE *out;                       /* verdict lines as they are decided; NULL = none */
    uint32_t wait_timeout_ms;        /* ork_npu_opts.wait_timeout_ms (0: the default) */
    bool blocking_submits;           /* ork_npu_opts.blocking_submits */
};

#define ORK_SELFTEST_MAX_STEPS 16

enum ork_selftest_verdict {
    ORK_SELFTEST_PASS = 0,           /* ran and matched the CPU bit for bit */
    ORK_SELFTEST_PASS_RETRY,         /* failed once (timeout), passed after reset + retry */
    ORK_SELFTEST_FAIL,               /* wrong results or an error */
    ORK_SELFTEST_NOT_CONFIRMED,      /* a [CAP] form without a capability: not used, not run */
    ORK_SELFTEST_REFUSED,            /* the device cannot offer it (e.g. driver < 0.9.8) */
};

struct ork_selftest_step {
    char name[32];                   /* "discovery", "per-core", "multi-core", "one-job", ... */
    enum ork_selftest_verdict verdict;
    char detail[384];
    double ms;
};

struct ork_selftest_report {
    char backend[16];
    uint32_t n_steps;
    struct ork_selftest_step steps[ORK_SELFTEST_MAX_STEPS];
    uint32_t n_failed;
};

/* Run the ladder. Returns 0 when it ran (read n_failed), or the discovery error (the report
 * then holds the failed discovery step). */
int ork_selftest_ladder(const struct ork_selftest_opts *o, struct ork_selftest_report *r);
const char *ork_selftest_verdict_name(enum ork_selftest_verdict v);
/* The report as one JSON object (for `ork selftest --json`). */
void ork_selftest_report_json(const struct ork_selftest_report *r, FILE *f);

#endif
