/* alloc.c -- counted, fault-injectable allocation wrappers. */
#include <ork/alloc.h>

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t n_allocs;
static atomic_uint_fast64_t fail_at;     /* 0: never; else fail when n_allocs reaches it */

static int should_fail(void)
{
    uint64_t k = atomic_fetch_add(&n_allocs, 1) + 1;
    uint64_t f = atomic_load(&fail_at);
    return f != 0 && k == f;
}

void *ork_malloc(size_t size)
{
    return should_fail() ? NULL : malloc(size ? size : 1);
}

void *ork_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *ork_realloc(void *p, size_t size)
{
    return should_fail() ? NULL : realloc(p, size ? size : 1);
}

void *ork_aligned_alloc(size_t align, size_t size)
{
    if (should_fail())
        return NULL;
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, align, size ? size : 1) == 0 ? p : NULL;
}

char *ork_strdup(const char *s)
{
    return ork_strndup(s, strlen(s));
}

char *ork_strndup(const char *s, size_t n)
{
    char *d = ork_malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

void ork_free(void *p)
{
    free(p);
}

uint64_t ork_alloc_count(void)
{
    return atomic_load(&n_allocs);
}

void ork_alloc_fail_after(uint64_t n)
{
    atomic_store(&fail_at, n ? atomic_load(&n_allocs) + n : 0);
}
