/* test_sim_bo.c -- buffer objects in the simulated rknpu driver (spec §10.3, §13): top-down
 * page-granular IOVAs per domain, independent domains, reuse of freed ranges, the per-domain
 * mapping guard (DOMAIN_FULL), mmap through MEM_MAP offsets, MEM_SYNC/MEM_DESTROY validation and
 * strict-mode MISSING_SYNC (§14.3: separate CPU and device copies). */
#include <ork/error.h>

#include "ork_test.h"
#include "test_sim_prog.h"
#include "uapi/rknpu_uapi.h"
#include "sim/sim.h"

static void test_iova_top_down(void)
{
    struct tp_dev d;
    REQUIRE(tp_open(&d, NULL) == 0);
    struct ork_kbo a, b, c, x;
    REQUIRE(tp_bo(&d, 100, 0, &a) == 0);
    REQUIRE(tp_bo(&d, 4096, 0, &b) == 0);
    REQUIRE(tp_bo(&d, 3 * 4096 + 1, 0, &c) == 0);
    CHECK_EQ_INT(a.iova, 0xffffe000u);                        /* §13: 0xffffe000, 0xffffd000 */
    CHECK_EQ_INT(b.iova, 0xffffd000u);
    CHECK_EQ_INT(c.iova, 0xffffd000u - 4 * 4096);             /* 4 pages below */
    CHECK_EQ_INT(a.domain, 0);
    /* another domain is its own window: same addresses again */
    REQUIRE(tp_bo(&d, 4096, 3, &x) == 0);
    CHECK_EQ_INT(x.iova, 0xffffe000u);
    CHECK_EQ_INT(x.domain, 3);
    /* host mappings are distinct and writable */
    memset(a.map, 0x11, 100);
    memset(x.map, 0x22, 4096);
    CHECK_EQ_INT(((uint8_t *)a.map)[99], 0x11);
    CHECK(a.map != x.map && a.map != b.map);
    /* freeing the top buffer makes its range the highest free gap again */
    d.ops->bo_destroy(d.ctx, &a);
    CHECK(a.map == NULL && a.handle == 0);
    struct ork_kbo a2;
    REQUIRE(tp_bo(&d, 4096, 0, &a2) == 0);
    CHECK_EQ_INT(a2.iova, 0xffffe000u);
    /* a buffer that does not fit the gap goes below everything */
    d.ops->bo_destroy(d.ctx, &b);
    struct ork_kbo big;
    REQUIRE(tp_bo(&d, 2 * 4096, 0, &big) == 0);
    CHECK(big.iova < c.iova);
    struct ork_sim_counters cnt;
    ork__sim_counters(ork__kmd_sim_get(d.ops, d.ctx), &cnt);
    CHECK_EQ_INT(cnt.bos, 4);                                  /* c, x, a2, big */
    CHECK_EQ_INT(cnt.bo_bytes, 4 * 4096 + 4096 + 4096 + 2 * 4096);
    d.ops->bo_destroy(d.ctx, &c);
    d.ops->bo_destroy(d.ctx, &x);
    d.ops->bo_destroy(d.ctx, &a2);
    d.ops->bo_destroy(d.ctx, &big);
    d.ops->bo_destroy(d.ctx, &big);                            /* safe on a zeroed struct */
    d.ops->close(d.ctx);
}

static void test_domain_limit(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .domain_limit = 1u << 20 };
    struct tp_dev d;
    REQUIRE(tp_open(&d, &so) == 0);
    struct ork_kbo a, b, c, e;
    CHECK_EQ_INT(tp_bo(&d, 512 << 10, 0, &a), 0);
    CHECK_EQ_INT(tp_bo(&d, 512 << 10, 0, &b), 0);
    CHECK_EQ_INT(tp_bo(&d, 4096, 0, &c), ORK_ENOMEM);
    CHECK(strstr(ork_error_message(), "DOMAIN_FULL") != NULL);
    CHECK_EQ_INT(tp_bo(&d, 4096, 1, &e), 0);                   /* domain 1 is separate */
    CHECK_EQ_INT(tp_bo(&d, 4096, 16, &c), ORK_EINVAL);         /* 16 domains: 0..15 */
    uint64_t q = 0;
    CHECK_EQ_INT(d.ops->query(d.ctx, ORK_KMD_CAP_DOMAIN_BYTES, &q), 0);
    CHECK_EQ_INT(q, 1u << 20);
    d.ops->bo_destroy(d.ctx, &b);
    CHECK_EQ_INT(tp_bo(&d, 4096, 0, &c), 0);                   /* room again */
    d.ops->bo_destroy(d.ctx, &a);
    d.ops->bo_destroy(d.ctx, &c);
    d.ops->bo_destroy(d.ctx, &e);
    /* the default guard is 3900 MiB (§13): 3 GiB fits (no host memory is touched) */
    struct tp_dev d2;
    REQUIRE(tp_open(&d2, NULL) == 0);
    struct ork_kbo g, h;
    CHECK_EQ_INT(tp_bo(&d2, 3ull << 30, 0, &g), 0);
    CHECK_EQ_INT(tp_bo(&d2, 1ull << 30, 0, &h), ORK_ENOMEM);
    d2.ops->bo_destroy(d2.ctx, &g);
    d2.ops->close(d2.ctx);
    d.ops->close(d.ctx);
}

/* Raw memory ioctls: bad handles, cookies and ranges are refused as the kernel would. */
static void test_raw_mem_ioctls(void)
{
    struct tp_dev d;
    REQUIRE(tp_open(&d, NULL) == 0);
    struct ork_sim *sim = ork__kmd_sim_get(d.ops, d.ctx);
    REQUIRE(sim);
    struct rknpu_mem_create mc = { .flags = RKNPU_MEM_FLAGS_DATA, .size = 8192,
                                   .iommu_domain_id = 0 };
    REQUIRE(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_CREATE, &mc) == 0);
    CHECK(mc.handle != 0);
    CHECK(mc.dma_addr != 0 && mc.dma_addr <= 0xffffffffu && (mc.dma_addr & 4095) == 0);
    struct rknpu_mem_map mm = { .handle = mc.handle };
    REQUIRE(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_MAP, &mm) == 0);
    CHECK(ork__sim_mmap(sim, mm.offset, 8192) != NULL);
    CHECK(ork__sim_mmap(sim, mm.offset, 8192 * 2) == NULL);   /* larger than the BO */
    CHECK(ork__sim_mmap(sim, mm.offset + 4096, 4096) == NULL);
    struct rknpu_mem_sync ms = { .flags = RKNPU_MEM_SYNC_TO_DEVICE, .obj_addr = mc.obj_addr,
                                 .offset = 4096, .size = 8192 };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_SYNC, &ms), ORK_EINVAL);
    ms.size = 4096;
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_SYNC, &ms), 0);
    ms.obj_addr += 1;
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_SYNC, &ms), ORK_EINVAL);
    struct rknpu_mem_destroy md = { .handle = mc.handle, .obj_addr = mc.obj_addr + 4096 };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_DESTROY, &md), ORK_EINVAL);
    md.obj_addr = mc.obj_addr;
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_DESTROY, &md), 0);
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_MEM_DESTROY, &md), ORK_EINVAL);
    /* the misc-device request numbers are served too (§10.2) */
    struct rknpu_action act = { .flags = RKNPU_GET_DRV_VERSION };
    CHECK_EQ_INT(ork__sim_ioctl(sim, RKNPU_MISC_IOCTL(RKNPU_CMD_ACTION, rknpu_action), &act), 0);
    CHECK_EQ_INT(act.value, 908);
    /* a request with a wrong size is no rknpu command */
    CHECK_EQ_INT(ork__sim_ioctl(sim, ORK_IOC(3, 'd', 0x42, 40), &mc), ORK_EINVAL);
    d.ops->close(d.ctx);
}

static void test_actions(void)
{
    struct tp_dev d;
    REQUIRE(tp_open(&d, NULL) == 0);
    uint32_t v = 0;
    CHECK_EQ_INT(d.ops->action(d.ctx, ORK_KMD_ACT_GET_HW_VERSION, &v), 0);
    CHECK_EQ_INT(v, 0x46495245u);
    CHECK_EQ_INT(d.ops->action(d.ctx, ORK_KMD_ACT_GET_DRV_VERSION, &v), 0);
    CHECK_EQ_INT(v, 908);
    CHECK_EQ_INT(d.ops->action(d.ctx, ORK_KMD_ACT_GET_FREQ, &v), 0);
    CHECK_EQ_INT(v, 1000);                                     /* MHz (§1.2) */
    uint64_t q = 0;
    CHECK_EQ_INT(d.ops->query(d.ctx, ORK_KMD_CAP_N_CORES, &q), 0);
    CHECK_EQ_INT(q, 3);
    CHECK_EQ_INT(d.ops->query(d.ctx, ORK_KMD_CAP_SIM, &q), 0);
    CHECK_EQ_INT(q, 1);
    CHECK_EQ_INT(d.ops->query(d.ctx, ORK_KMD_CAP_PC_CHAIN, &q), 0);
    CHECK_EQ_INT(q, 1);
    struct ork_sim *sim = ork__kmd_sim_get(d.ops, d.ctx);
    struct rknpu_action a = { .flags = RKNPU_SET_FREQ, .value = 100000000 };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_ACTION, &a), ORK_EINVAL);  /* < 300 MHz */
    a = (struct rknpu_action){ .flags = RKNPU_SET_FREQ, .value = 600000000 };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_ACTION, &a), 0);
    CHECK_EQ_INT(d.ops->action(d.ctx, ORK_KMD_ACT_GET_FREQ, &v), 0);
    CHECK_EQ_INT(v, 600);
    a = (struct rknpu_action){ .flags = RKNPU_SET_IOMMU_DOMAIN_ID, .value = 2 };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_ACTION, &a), 0);
    a = (struct rknpu_action){ .flags = RKNPU_GET_IOMMU_DOMAIN_ID };
    CHECK_EQ_INT(ork__sim_ioctl(sim, DRM_IOCTL_RKNPU_ACTION, &a), 0);
    CHECK_EQ_INT(a.value, 2);
    struct ork_sim_counters c;
    ork__sim_counters(sim, &c);
    CHECK_EQ_INT(c.domain_switches, 1);
    CHECK(c.resets >= 1);                                      /* ACT_RESET at open (§10.7) */
    d.ops->close(d.ctx);
}

/* Strict mode keeps separate CPU and device copies of cacheable buffers (MISSING_SYNC, §14.3):
 * a CPU write without MEM_SYNC TO_DEVICE is not seen by the NPU, and NPU output is not seen by
 * the CPU before FROM_DEVICE. */
static void test_strict_missing_sync(void)
{
    struct ork_sim_opts so = { .struct_size = sizeof so, .strict = true };
    struct tp_dev d;
    REQUIRE(tp_open(&d, &so) == 0);
    struct ork_kbo prog, a, b, c;
    REQUIRE(tp_bo(&d, 1024, 0, &prog) == 0 && tp_bo(&d, 4 * 64, 0, &a) == 0 &&
            tp_bo(&d, 64 * 32, 0, &b) == 0 && tp_bo(&d, 4 * 32 * 4, 0, &c) == 0);
    tp_fill(a.map, b.map, 4, 64, 32, 9);
    struct tp_shape sh = { 4, 64, 32, 0, a.iova, b.iova, c.iova };
    tp_build(prog.map, &sh, 0, 0);
    tp_sync_to(&d, &prog);
    tp_sync_to(&d, &b);                                        /* A deliberately not synced */
    struct ork_ktask t = tp_task(prog.iova, 0);
    struct ork_kjob j = { .tasks = &t, .n_tasks = 1, .core_mask = 1, .range = { { 0, 1 } } };
    CHECK_EQ_INT(d.ops->submit(d.ctx, &j), 0);
    struct ork_sim_counters cnt;
    ork__sim_counters(ork__kmd_sim_get(d.ops, d.ctx), &cnt);
    CHECK(cnt.missing_sync >= 1);
    /* the device computed with stale (zero) A: C is all zero once synced back */
    tp_sync_from(&d, &c);
    int nonzero = 0;
    for (int i = 0; i < 4 * 32; i++)
        nonzero += ((int32_t *)c.map)[i] != 0;
    CHECK_EQ_INT(nonzero, 0);
    /* with the sync: correct, but only visible to the CPU after FROM_DEVICE */
    tp_sync_to(&d, &a);
    memset(c.map, 0x7f, c.size);
    CHECK_EQ_INT(d.ops->submit(d.ctx, &j), 0);
    CHECK_EQ_INT(((uint32_t *)c.map)[0], 0x7f7f7f7f);          /* stale CPU copy */
    tp_sync_from(&d, &c);
    int bad = 0;
    for (uint32_t m = 0; m < 4; m++)
        for (uint32_t n = 0; n < 32; n++)
            bad += ((int32_t *)c.map)[m * 32 + n] != tp_ref(a.map, b.map, 64, 32, m, n);
    CHECK_EQ_INT(bad, 0);
    d.ops->bo_destroy(d.ctx, &prog);
    d.ops->bo_destroy(d.ctx, &a);
    d.ops->bo_destroy(d.ctx, &b);
    d.ops->bo_destroy(d.ctx, &c);
    d.ops->close(d.ctx);
}

int main(void)
{
    RUN(test_iova_top_down);
    RUN(test_domain_limit);
    RUN(test_raw_mem_ioctls);
    RUN(test_actions);
    RUN(test_strict_missing_sync);
    return ork_test_done();
}
