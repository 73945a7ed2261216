/* twin_calib.c -- the calibration file: JSON holding the twin's constants (docs/twin.md,
 * "Calibration file"). Parse is strict -- every problem is an error naming the key -- and
 * atomic: the caller's table changes only when the whole file is accepted. Format writes every
 * constant as raw %.17g text, so a save -> load round trip is bit-exact for every double. */
#include <ork/alloc.h>
#include <ork/error.h>

#include "twin_priv.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define TWIN_CALIB_FORMAT "ork-twin-calibration"
#define TWIN_CALIB_VERSION 1
/* A calibration file is a few KiB; refuse anything absurd before reading it into memory. */
#define TWIN_CALIB_MAX_BYTES (1u << 20)

static int check_header(const cJSON *root)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    if (!fmt)
        return ork_errorf(ORK_EFORMAT, "twin calibration: missing key 'format'");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, TWIN_CALIB_FORMAT) != 0)
        return ork_errorf(ORK_EFORMAT, "twin calibration: key 'format' must be the string \"%s\"",
                          TWIN_CALIB_FORMAT);
    if (!ver)
        return ork_errorf(ORK_EFORMAT, "twin calibration: missing key 'version'");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != TWIN_CALIB_VERSION)
        return ork_errorf(ORK_EFORMAT, "twin calibration: key 'version' must be %d",
                          TWIN_CALIB_VERSION);
    return 0;
}

/* Top-level keys: format, version, source (string), constants (object), capabilities (object,
 * ork_twin_caps_*); nothing else, once. */
static int check_top_keys(const cJSON *root)
{
    static const char *const known[] = { "format", "version", "source", "constants",
                                         "capabilities" };
    for (const cJSON *it = root->child; it; it = it->next) {
        size_t k = 0;
        while (k < sizeof known / sizeof known[0] && strcmp(known[k], it->string) != 0)
            k++;
        if (k == sizeof known / sizeof known[0])
            return ork_errorf(ORK_EFORMAT, "twin calibration: unknown key '%s'", it->string);
        if (cJSON_GetObjectItemCaseSensitive(root, it->string) != it)
            return ork_errorf(ORK_EFORMAT, "twin calibration: duplicate key '%s'", it->string);
    }
    const cJSON *src = cJSON_GetObjectItemCaseSensitive(root, "source");
    if (src && !cJSON_IsString(src))
        return ork_errorf(ORK_EFORMAT, "twin calibration: key 'source' must be a string");
    return 0;
}

static int apply_constants(const cJSON *obj, struct ork_twin_consts *c)
{
    if (!cJSON_IsObject(obj))
        return ork_errorf(ORK_EFORMAT, "twin calibration: key 'constants' must be an object");
    for (const cJSON *it = obj->child; it; it = it->next) {
        const struct ork_twin_const_info *e = ork__twin_const_find(it->string);
        if (!e)
            return ork_errorf(ORK_EFORMAT, "twin calibration: unknown constant '%s'", it->string);
        if (cJSON_GetObjectItemCaseSensitive(obj, it->string) != it)
            return ork_errorf(ORK_EFORMAT, "twin calibration: duplicate constant '%s'",
                              it->string);
        if (!cJSON_IsNumber(it))
            return ork_errorf(ORK_EFORMAT, "twin calibration: constant '%s' must be a number (%s)",
                              it->string, e->unit);
        int ret = ork__twin_const_validate(e, it->valuedouble);
        if (ret < 0)
            return ret;
        double v = it->valuedouble;
        memcpy((char *)c + e->offset, &v, sizeof v);
    }
    return 0;
}

int ork_twin_calib_parse(const char *json, size_t len, struct ork_twin_consts *c)
{
    if (!json || !c)
        return ork_errorf(ORK_EINVAL, "twin calibration: NULL argument");
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root)
        return ork_errorf(ORK_EFORMAT, "twin calibration: not valid JSON (near byte %td)",
                          cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json : (ptrdiff_t)0);
    struct ork_twin_consts tmp = *c;    /* commit only a fully accepted file */
    int ret;
    if (!cJSON_IsObject(root)) {
        ret = ork_errorf(ORK_EFORMAT, "twin calibration: the top level must be an object");
        goto out;
    }
    if ((ret = check_top_keys(root)) < 0 || (ret = check_header(root)) < 0)
        goto out;
    const cJSON *consts = cJSON_GetObjectItemCaseSensitive(root, "constants");
    if (consts && (ret = apply_constants(consts, &tmp)) < 0)
        goto out;
    *c = tmp;
    ret = 0;
out:
    cJSON_Delete(root);
    return ret;
}

int ork_twin_calib_load(const char *path, struct ork_twin_consts *c)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ork_errorf(ORK_EIO, "twin calibration '%s': %s", path, strerror(errno));
    int ret;
    char *buf = ork_malloc(TWIN_CALIB_MAX_BYTES + 1);
    if (!buf) {
        ret = ORK_ENOMEM;
        goto err_close;
    }
    size_t n = fread(buf, 1, TWIN_CALIB_MAX_BYTES + 1, f);
    if (ferror(f)) {
        ret = ork_errorf(ORK_EIO, "twin calibration '%s': read error", path);
        goto err_free;
    }
    if (n > TWIN_CALIB_MAX_BYTES) {
        ret = ork_errorf(ORK_EFORMAT, "twin calibration '%s': larger than %u bytes", path,
                         TWIN_CALIB_MAX_BYTES);
        goto err_free;
    }
    ret = ork_twin_calib_parse(buf, n, c);
    if (ret < 0) {
        char msg[256];  /* copy first: the message buffer is the one ork_errorf rewrites */
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        ork_errorf(ret, "%s: %s", path, msg);
    }
err_free:
    ork_free(buf);
err_close:
    fclose(f);
    return ret;
}

int ork_twin_calib_format(const struct ork_twin_consts *c, const char *source, char **out)
{
    int ret = ork_twin_consts_check(c);
    if (ret < 0)
        return ret;
    ret = ORK_ENOMEM;
    cJSON *root = cJSON_CreateObject(), *consts;
    if (!root || !cJSON_AddStringToObject(root, "format", TWIN_CALIB_FORMAT) ||
        !cJSON_AddNumberToObject(root, "version", TWIN_CALIB_VERSION) ||
        (source && !cJSON_AddStringToObject(root, "source", source)) ||
        !(consts = cJSON_AddObjectToObject(root, "constants")))
        goto out;
    size_t n;
    const struct ork_twin_const_info *t = ork_twin_consts_table(&n);
    for (size_t i = 0; i < n; i++) {
        char num[40];
        double v;
        memcpy(&v, (const char *)c + t[i].offset, sizeof v);
        snprintf(num, sizeof num, "%.17g", v);
        if (!cJSON_AddRawToObject(consts, t[i].name, num))
            goto out;
    }
    char *text = cJSON_Print(root);
    if (!text)
        goto out;
    *out = ork_strdup(text);
    cJSON_free(text);
    ret = *out ? 0 : ORK_ENOMEM;
out:
    cJSON_Delete(root);
    return ret;
}

int ork_twin_calib_save(const char *path, const struct ork_twin_consts *c, const char *source)
{
    char *text = NULL;
    int ret = ork_twin_calib_format(c, source, &text);
    if (ret < 0)
        return ret;
    FILE *f = fopen(path, "wb");
    if (!f) {
        ret = ork_errorf(ORK_EIO, "twin calibration '%s': %s", path, strerror(errno));
        goto out;
    }
    size_t len = strlen(text);
    if (fwrite(text, 1, len, f) != len || fputc('\n', f) == EOF)
        ret = ork_errorf(ORK_EIO, "twin calibration '%s': write error", path);
    if (fclose(f) != 0 && ret == 0)
        ret = ork_errorf(ORK_EIO, "twin calibration '%s': %s", path, strerror(errno));
out:
    ork_free(text);
    return ret;
}

/* ---- capabilities: submit forms a board has confirmed (docs/npu.md "Submit forms") --------- */

/* Form names in the "capabilities" object, by ORK_TWIN_FORM_* bit. */
static const char *const caps_form_names[] = { "one_job_0x7", "dcomp", "wide_k_m_tile", "w4a8" };
#define CAPS_N_FORMS (sizeof caps_form_names / sizeof caps_form_names[0])
#define CAPS_CONFIRMED "confirmed"

static int caps_apply(const cJSON *obj, struct ork_twin_caps *out)
{
    struct ork_twin_caps tmp = { .struct_size = sizeof tmp };
    if (!cJSON_IsObject(obj))
        return ork_errorf(ORK_EFORMAT, "capabilities: key 'capabilities' must be an object");
    for (const cJSON *it = obj->child; it; it = it->next) {
        if (!strcmp(it->string, "source")) {
            if (!cJSON_IsString(it))
                return ork_errorf(ORK_EFORMAT, "capabilities: 'source' must be a string");
            snprintf(tmp.source, sizeof tmp.source, "%s", it->valuestring);
            continue;
        }
        size_t k = 0;
        while (k < CAPS_N_FORMS && strcmp(caps_form_names[k], it->string) != 0)
            k++;
        if (k == CAPS_N_FORMS)
            return ork_errorf(ORK_EFORMAT, "capabilities: unknown form '%s' (known: one_job_0x7, "
                              "dcomp, wide_k_m_tile, w4a8)", it->string);
        if (!cJSON_IsString(it))
            return ork_errorf(ORK_EFORMAT, "capabilities: form '%s' must be a string "
                              "(\"confirmed\", \"failed\" or \"untested\")", it->string);
        if (!strcmp(it->valuestring, CAPS_CONFIRMED))
            tmp.confirmed |= 1u << k;
        else if (strcmp(it->valuestring, "failed") && strcmp(it->valuestring, "untested"))
            return ork_errorf(ORK_EFORMAT, "capabilities: form '%s' is \"%s\", expected "
                              "\"confirmed\", \"failed\" or \"untested\"", it->string,
                              it->valuestring);
    }
    *out = tmp;
    return 0;
}

int ork_twin_caps_load(const char *path, struct ork_twin_caps *out)
{
    if (!path || !out)
        return ork_errorf(ORK_EINVAL, "capabilities: NULL argument");
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ork_errorf(ORK_EIO, "capabilities '%s': %s", path, strerror(errno));
    int ret = 0;
    cJSON *root = NULL;
    char *buf = ork_malloc(TWIN_CALIB_MAX_BYTES + 1);
    if (!buf) {
        ret = ORK_ENOMEM;
        goto out;
    }
    size_t n = fread(buf, 1, TWIN_CALIB_MAX_BYTES + 1, f);
    if (ferror(f) || n > TWIN_CALIB_MAX_BYTES) {
        ret = ork_errorf(ORK_EFORMAT, "capabilities '%s': unreadable or larger than %u bytes",
                         path, TWIN_CALIB_MAX_BYTES);
        goto out;
    }
    root = cJSON_ParseWithLength(buf, n);
    if (!root || !cJSON_IsObject(root)) {
        ret = ork_errorf(ORK_EFORMAT, "capabilities '%s': not a JSON object", path);
        goto out;
    }
    if ((ret = check_top_keys(root)) < 0 || (ret = check_header(root)) < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        ret = ork_errorf(ret, "capabilities '%s': %s", path, msg);
        goto out;
    }
    const cJSON *caps = cJSON_GetObjectItemCaseSensitive(root, "capabilities");
    if (caps && (ret = caps_apply(caps, out)) < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", ork_error_message());
        ret = ork_errorf(ret, "%s: %s", path, msg);
    }
out:
    cJSON_Delete(root);
    ork_free(buf);
    fclose(f);
    return ret;
}

int ork_twin_caps_save(const char *path, const struct ork_twin_caps *caps, uint32_t tested)
{
    if (!path || !caps)
        return ork_errorf(ORK_EINVAL, "capabilities: NULL argument");
    /* keep what the file already holds (constants, source): only "capabilities" is replaced */
    cJSON *root = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        char *buf = ork_malloc(TWIN_CALIB_MAX_BYTES + 1);
        size_t n = buf ? fread(buf, 1, TWIN_CALIB_MAX_BYTES, f) : 0;
        if (buf)
            root = cJSON_ParseWithLength(buf, n);
        ork_free(buf);
        fclose(f);
        if (root && (!cJSON_IsObject(root) || check_header(root) < 0)) {
            cJSON_Delete(root);
            return ork_errorf(ORK_EFORMAT, "capabilities '%s': exists and is not a twin "
                              "calibration file; not overwritten", path);
        }
    }
    int ret = ORK_ENOMEM;
    if (!root && (!(root = cJSON_CreateObject()) ||
                  !cJSON_AddStringToObject(root, "format", TWIN_CALIB_FORMAT) ||
                  !cJSON_AddNumberToObject(root, "version", TWIN_CALIB_VERSION)))
        goto out;
    cJSON_DeleteItemFromObjectCaseSensitive(root, "capabilities");
    cJSON *obj = cJSON_AddObjectToObject(root, "capabilities");
    if (!obj || (caps->source[0] && !cJSON_AddStringToObject(obj, "source", caps->source)))
        goto out;
    for (size_t k = 0; k < CAPS_N_FORMS; k++) {
        const char *v = (caps->confirmed >> k) & 1u ? CAPS_CONFIRMED
                        : (tested >> k) & 1u        ? "failed" : "untested";
        if (!cJSON_AddStringToObject(obj, caps_form_names[k], v))
            goto out;
    }
    char *text = cJSON_Print(root);
    if (!text)
        goto out;
    ret = 0;
    f = fopen(path, "wb");
    if (!f)
        ret = ork_errorf(ORK_EIO, "capabilities '%s': %s", path, strerror(errno));
    else if (fprintf(f, "%s\n", text) < 0 || fclose(f) != 0)
        ret = ork_errorf(ORK_EIO, "capabilities '%s': write error", path);
    cJSON_free(text);
out:
    cJSON_Delete(root);
    return ret;
}
