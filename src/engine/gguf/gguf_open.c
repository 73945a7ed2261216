/* gguf_open.c -- putting a GGUF file in memory for the reader (gguf.c): a caller's buffer, a
 * mapping of the file, or the file read into private memory (on transparent huge pages where the
 * kernel gives them), and closing it. */
#include "gguf_priv.h"

#include <ork-engine/gguf.h>
#include <ork-kernels/types.h>
#include <ork/alloc.h>
#include <ork/error.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* --- open / close ---------------------------------------------------------------------------- */

void ork_gguf_close(struct ork_gguf *g)
{
    if (!g)
        return;
    ork__gguf_free_tables(g);
    if (g->map)
        munmap(g->map, g->map_len);
    ork_free(g);
}

static int open_buffer(const void *data, size_t size, void *map, struct ork_gguf **out)
{
    struct ork_gguf *g = ork_calloc(1, sizeof(*g));
    if (!g)
        return ork_errorf(ORK_ENOMEM, "gguf: out of memory");
    g->base = data;
    g->size = size;
    g->map = map;
    g->map_len = size;
    g->alignment = ORK_GGUF_DEFAULT_ALIGNMENT;
    g->hash_seed = ork__gguf_hash_seed(g);
    int ret = ork__gguf_parse(g);
    if (ret < 0) {
        g->map = NULL;      /* the caller owns the mapping until we succeed */
        ork_gguf_close(g);
        return ret;
    }
    *out = g;
    return 0;
}

int ork_gguf_open_mem(const void *data, size_t size, struct ork_gguf **out)
{
    if (!out || (!data && size))
        return ork_errorf(ORK_EINVAL, "gguf: open_mem: NULL argument");
    *out = NULL;
    static const uint8_t empty;
    return open_buffer(data ? data : &empty, size, NULL, out);
}

/* Reading a file into memory: anonymous pages aligned to and advised as transparent huge
 * pages (2 MiB on x86-64 and on AArch64 with 4 KiB pages), so a decode step's weight streams
 * cross no 4 KiB page walks; read in pieces of at most GGUF_READ_CHUNK. */
#define GGUF_HUGE_ALIGN ((size_t)2 << 20)
#define GGUF_READ_CHUNK ((size_t)1 << 30)

/* len bytes of anonymous memory starting on a GGUF_HUGE_ALIGN boundary (unmapped with
 * munmap(p, len)); NULL when refused. */
static void *anon_huge(size_t len)
{
    if (len > SIZE_MAX - GGUF_HUGE_ALIGN)
        return NULL;
    size_t span = len + GGUF_HUGE_ALIGN;
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + GGUF_HUGE_ALIGN - 1) & ~(uintptr_t)(GGUF_HUGE_ALIGN - 1);
    uint8_t *p = (uint8_t *)a;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t used = (len + page - 1) / page * page;
    if (p > raw)
        munmap(raw, (size_t)(p - raw));
    if (p + used < raw + span)
        munmap(p + used, (size_t)(raw + span - (p + used)));
#ifdef MADV_HUGEPAGE
    (void)madvise(p, used, MADV_HUGEPAGE);     /* a hint: refused means ordinary pages */
#endif
    return p;
}

/* Where the data section starts in memory when the file is read: a multiple of this, the cache
 * line and the widest vector, so the weights' vector loads do not straddle lines. Files put
 * their data section on a multiple of general.alignment (32 by default) from the file's start;
 * at an offset of 32 modulo 64 the read kernel streamed a 1.8 GB model's weights at 55-59 GB/s
 * at two threads where a fresh 64-aligned buffer of the same size read 74-76 (measured). */
#define GGUF_DATA_ALIGN 64

/* The file read into anonymous memory at `shift` bytes past a huge-page boundary: *region
 * (region_len = len + shift bytes, to unmap) and the file's first byte in *out; or an error. */
static int read_whole(int fd, const char *path, size_t len, size_t shift, void **region,
                      void **out)
{
    uint8_t *r = len <= SIZE_MAX - shift ? anon_huge(len + shift) : NULL;
    if (!r)
        return ork_errorf(ORK_ENOMEM, "gguf: no memory to read '%s' (%zu bytes); map it instead "
                          "(--mmap)", path, len);
    uint8_t *p = r + shift;
    for (size_t got = 0; got < len;) {
        size_t want = len - got < GGUF_READ_CHUNK ? len - got : GGUF_READ_CHUNK;
        ssize_t n = pread(fd, p + got, want, (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            int e = n < 0 ? errno : 0;
            munmap(r, len + shift);
            return ork_errorf(ORK_EIO, "gguf: reading '%s' at byte %zu of %zu: %s", path, got,
                              len, e ? strerror(e) : "unexpected end of file");
        }
        got += (size_t)n;
    }
    /* Left writable: making it read-only (mprotect) cost the first pass over the weights
     * 4-7x (146 against 36 ms over the layers of a 1.8 GB model, measured), and the reader only
     * hands out const pointers. */
    *region = r;
    *out = p;
    return 0;
}

/* Bytes to place the file past a GGUF_DATA_ALIGN boundary so that its data section starts on
 * one, in *shift: the header parsed from a mapping of the file (a few ms). A file that does
 * not parse gets 0 (the parse of the copy then reports the problem); running out of memory is
 * an error. */
static int data_shift(int fd, size_t len, size_t *shift)
{
    *shift = 0;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED)
        return 0;
    struct ork_gguf *h;
    int ret = open_buffer(m, len, NULL, &h);
    if (ret == 0) {
        *shift = (size_t)((GGUF_DATA_ALIGN - h->data_offset % GGUF_DATA_ALIGN) %
                          GGUF_DATA_ALIGN);
        ork_gguf_close(h);
    }
    munmap(m, len);
    if (ret == ORK_ENOMEM)
        return ret;
    ork_error_clear();
    return 0;
}

int ork_gguf_open_mode(const char *path, enum ork_gguf_mode mode, struct ork_gguf **out)
{
    if (!path || !out)
        return ork_errorf(ORK_EINVAL, "gguf: open: NULL argument");
    if (mode != ORK_GGUF_MMAP && mode != ORK_GGUF_READ)
        return ork_errorf(ORK_EINVAL, "gguf: open: unknown mode %d", (int)mode);
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ork_errorf(ORK_EIO, "gguf: cannot open '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ork_errorf(ORK_EIO, "gguf: cannot stat '%s': %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ork_errorf(ORK_EIO, "gguf: '%s' is not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return ork_errorf(ORK_EFORMAT, "gguf: '%s' is empty", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return ork_errorf(ORK_EIO, "gguf: '%s' is too large to map", path);
    }
    size_t len = (size_t)st.st_size, region_len = len;
    void *map = NULL, *region = NULL;
    if (mode == ORK_GGUF_READ) {
        size_t shift;
        int ret = data_shift(fd, len, &shift);
        if (ret == 0)
            ret = read_whole(fd, path, len, shift, &region, &map);
        close(fd);
        if (ret < 0)
            return ret;
        region_len = len + shift;
    } else {
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
        int e = errno;
        close(fd);
        if (map == MAP_FAILED)
            return ork_errorf(ORK_EIO, "gguf: cannot map '%s' (%zu bytes): %s", path, len,
                              strerror(e));
    }
    if (!region)
        region = map;
    int ret = open_buffer(map, len, region, out);
    if (ret < 0) {
        munmap(region, region_len);
        return ret;
    }
    (*out)->map_len = region_len;
    return 0;
}

int ork_gguf_open(const char *path, struct ork_gguf **out)
{
    return ork_gguf_open_mode(path, ORK_GGUF_MMAP, out);
}
