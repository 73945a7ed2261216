/* kmd_discovery.h -- finding a kernel driver's device node, with a distinct error for each way
 * it can fail, shared by the rknpu and rocket backends (and by the sim's faked nodes, so the
 * messages a test sees are the ones a board owner gets):
 *   absent            ORK_ENOENT   "no rknpu device found (no /dev/dri/card* driven by rknpu)"
 *   permission denied ORK_EACCES   names the node, its group and mode, the usermod command and
 *                                  a udev rule
 *   other driver      ORK_ENOENT   "/dev/dri/card0 is driven by 'panfrost', not rknpu"
 * A node that cannot be opened for lack of permission never reads as "no device found". */
#ifndef ORK_KMD_DISCOVERY_H
#define ORK_KMD_DISCOVERY_H

#include <stddef.h>

struct ork__kmd_probe {
    const char *backend;         /* "rknpu", "rocket" */
    const char *driver;          /* DRM driver name wanted */
    int fd;                      /* the node found, or -1 */
    char path[512];              /* its path (or the last one tried) */
    int n_tried;                 /* nodes opened and checked */
    int n_denied;                /* nodes that could not be opened: EACCES / EPERM */
    char denied[512];            /* the first of them */
    char other[512];             /* "<node> is driven by '<name>'" of the last foreign node */
};

void ork__kmd_probe_init(struct ork__kmd_probe *p, const char *backend, const char *driver);
/* Try one node: open it, read its driver name with `name_of`, keep it when it matches. */
void ork__kmd_probe_node(struct ork__kmd_probe *p, const char *path,
                         void (*name_of)(int fd, char *name, size_t cap));
/* Record a node that failed to open with errno `e` (the real probe and the sim's fakes). */
void ork__kmd_probe_fail(struct ork__kmd_probe *p, const char *path, int e);
/* The error for a probe that found nothing: ORK_EACCES when a node was denied, else
 * ORK_ENOENT; `where` names what was searched ("/dev/dri/card*"). Message recorded. */
int ork__kmd_probe_error(const struct ork__kmd_probe *p, const char *where);

#endif
