/* test_spec_load.h -- the model loader of the speculative-decoding tests (test_speculative.c,
 * test_spec_rows.c): device "cpu" or "sim", the simulator without a pack file and quiet. */
#ifndef ORK_TEST_SPEC_LOAD_H
#define ORK_TEST_SPEC_LOAD_H

#include <ork/error.h>
#include <ork-engine/engine.h>

#include <stdio.h>

/* The model at path on device, or NULL (the error printed). */
static inline struct ork_model *spec_load(const char *path, const char *device)
{
    struct ork_model_params mp;
    ork_model_params_default(&mp);
    mp.device = device;
    mp.npu_flags = ORK_NPU_EXEC_NO_PACK | ORK_NPU_EXEC_QUIET;
    struct ork_model *m = NULL;
    if (ork_model_load(path, &mp, &m) < 0) {
        fprintf(stderr, "load %s (%s): %s\n", path, device, ork_error_message());
        return NULL;
    }
    return m;
}

#endif
