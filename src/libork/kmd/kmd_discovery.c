/* kmd_discovery.c -- device-node probing with distinct errors (kmd_discovery.h). */
#include "kmd_discovery.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ork/error.h>

void ork__kmd_probe_init(struct ork__kmd_probe *p, const char *backend, const char *driver)
{
    memset(p, 0, sizeof *p);
    p->backend = backend;
    p->driver = driver;
    p->fd = -1;
}

void ork__kmd_probe_fail(struct ork__kmd_probe *p, const char *path, int e)
{
    if (e == EACCES || e == EPERM) {
        if (!p->n_denied++)
            snprintf(p->denied, sizeof p->denied, "%s", path);
    }
}

void ork__kmd_probe_node(struct ork__kmd_probe *p, const char *path,
                         void (*name_of)(int fd, char *name, size_t cap))
{
    if (p->fd >= 0)
        return;
    snprintf(p->path, sizeof p->path, "%s", path);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        ork__kmd_probe_fail(p, path, errno);
        return;
    }
    p->n_tried++;
    char name[64];
    name_of(fd, name, sizeof name);
    if (strcmp(name, p->driver) == 0) {
        p->fd = fd;
        return;
    }
    snprintf(p->other, sizeof p->other, "%s is driven by '%s'", path, name[0] ? name : "?");
    close(fd);
}

int ork__kmd_probe_error(const struct ork__kmd_probe *p, const char *where)
{
    if (p->n_denied) {
        char group[64] = "?", mode[16] = "?";
        struct stat st;
        if (stat(p->denied, &st) == 0) {
            struct group *g = getgrgid(st.st_gid);
            if (g)
                snprintf(group, sizeof group, "%s", g->gr_name);
            else
                snprintf(group, sizeof group, "%u", (unsigned)st.st_gid);
            snprintf(mode, sizeof mode, "%04o", (unsigned)(st.st_mode & 07777));
        }
        const char *sub = strcmp(p->backend, "rocket") == 0 ? "accel" : "drm";
        return ork_errorf(ORK_EACCES, "%s: permission denied opening %s (group '%s', mode %s): "
                          "add your user to that group (sudo usermod -aG %s $USER, then log in "
                          "again), or install a udev rule such as "
                          "/etc/udev/rules.d/99-ork-npu.rules: SUBSYSTEM==\"%s\", "
                          "DRIVERS==\"%s\", MODE=\"0660\", GROUP=\"%s\"", p->backend,
                          p->denied, group, mode, group, sub, p->driver,
                          strcmp(group, "?") ? group : "render");
    }
    if (p->other[0] && p->n_tried == 1)
        return ork_errorf(ORK_ENOENT, "%s: %s, not %s", p->backend, p->other, p->driver);
    return ork_errorf(ORK_ENOENT, "no %s device found (no %s driven by %s)", p->backend, where,
                      p->driver);
}
