/* ork/alloc.h -- every heap allocation in ork goes through these, so that tests can inject
 * out-of-memory failures and count allocations (e.g. "no allocation in the decode loop"). */
#ifndef ORK_ALLOC_H
#define ORK_ALLOC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void *ork_malloc(size_t size);
void *ork_calloc(size_t n, size_t size);           /* overflow-checked */
void *ork_realloc(void *p, size_t size);
void *ork_aligned_alloc(size_t align, size_t size); /* free with ork_free */
char *ork_strdup(const char *s);
char *ork_strndup(const char *s, size_t n);
void  ork_free(void *p);

/* Allocation counters (monotonic, all threads). */
uint64_t ork_alloc_count(void);
/* Test hook: make the n-th allocation from now fail (0 disables). */
void ork_alloc_fail_after(uint64_t n);

#ifdef __cplusplus
}
#endif
#endif
