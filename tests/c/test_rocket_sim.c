/* Kernel-level checks of the simulated rocket kernel + NPU, built by tests/rocket/test_sim_rk3576.py straight from
 * drivers/ (with the generated register headers and teflon_targets.h) under ASan/UBSan:
 *
 *   test_rocket_sim kick          the kick sequence each SoC's kernel writes, and what a core makes of the
 *                                 RK3588 and RK3576 TASK_CON words; prints "all checks passed"
 *   test_rocket_sim detect        teflon_detect_soc() ($TEFLON_SYSFS_ROOT points at a fake sysfs tree);
 *                                 prints "rc=<n> soc=<string>"
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"
#include "targets.h"
#include "sim_kernel.h"
#include "sim_npu.h"

static int failures;

#define CHECK(cond, ...)                                                                                  \
    do {                                                                                                  \
        if (!(cond)) {                                                                                    \
            failures++;                                                                                   \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                   \
            printf(__VA_ARGS__);                                                                          \
            printf("\n");                                                                                 \
        }                                                                                                 \
    } while (0)

/* One "buffer object" at IOVA 0x1000 holding a stream of just SYNC + OP_ENABLE: the PC accepts the kick,
 * fetches it and executes a task for which nothing was programmed. */
static uint64_t bo[64];
#define BO_IOVA 0x1000u

static uint8_t *lookup(void *ctx, uint64_t iova, uint64_t len)
{
    (void)ctx;
    if (iova < BO_IOVA || len > sizeof(bo) || iova - BO_IOVA > sizeof(bo) - len)
        return NULL;
    return (uint8_t *)bo + (iova - BO_IOVA);
}

/* Kick one task on a fresh core of `soc` with the kernel's sequence, TASK_CON replaced by task_con;
 * returns the NPU's error message (static buffer). */
static const char *kick_with(const char *soc, uint32_t task_con)
{
    static char msg[600];
    rkt_npu *npu = rkt_npu_create(rkt_gen_named(soc), &(struct teflon_sim_rules){0}, lookup, NULL);
    if (!npu) {
        snprintf(msg, sizeof(msg), "rkt_npu_create(%s) failed", soc);
        return msg;
    }
    struct rkt_mmio seq[RKT_KICK_WRITES];
    const int n = rkt_kick_sequence(rkt_gen_named(soc), 0, (struct rkt_regcmd){BO_IOVA, 2}, seq);
    int rc = 0;
    rkt_npu_job_begin(npu);
    for (int i = 0; i < n && !rc; i++)
        rc = rkt_npu_mmio_write(npu, seq[i].off, seq[i].off == RKT_PC_TASK_CON ? task_con : seq[i].val);
    snprintf(msg, sizeof(msg), "%s", rc ? rkt_npu_error(npu) : "ok");
    rkt_npu_destroy(npu);
    return msg;
}

static uint32_t kernel_word(const char *soc, uint32_t off, unsigned core)
{
    struct rkt_mmio seq[RKT_KICK_WRITES];
    const int n = rkt_kick_sequence(rkt_gen_named(soc), core, (struct rkt_regcmd){BO_IOVA, 139 + 4}, seq);
    uint32_t v = 0xDEADBEEF;
    for (int i = 0; i < n; i++)
        if (seq[i].off == off)
            v = seq[i].val; /* the last write of that register */
    return v;
}

static int test_kick(void)
{
    bo[0] = 0x0041000000000000ull; /* SYNC */
    bo[1] = 0x00810000001D0008ull; /* OP_ENABLE CNA+CORE+DPU+DPU_RDMA */

    /* the kernels' words */
    /* cores teflon runs at once: rk3576's two corrupt each other's concurrent jobs (docs/hardware/rocket-rk3576.md) */
    CHECK(teflon_target_named("rk3588")->cores == 3 && teflon_target_named("rk3576")->cores == 1, "core counts");
    CHECK(rkt_gen_named("rk3576")->polled && !rkt_gen_named("rk3588")->polled, "completion: RK3576 polled");
    CHECK(kernel_word("rk3588", RKT_PC_TASK_CON, 0) == 0x7001, "rk3588 TASK_CON 0x%x",
          kernel_word("rk3588", RKT_PC_TASK_CON, 0));
    CHECK(kernel_word("rk3576", RKT_PC_TASK_CON, 0) == 0x70001, "rk3576 TASK_CON 0x%x",
          kernel_word("rk3576", RKT_PC_TASK_CON, 0));
    for (int s = 0; s < 2; s++) {
        const char *soc = s ? "rk3576" : "rk3588";
        CHECK(kernel_word(soc, RKT_PC_INTERRUPT_MASK, 0) == 0xF00, "%s INT_MASK (DPU and PPU completion)", soc);
        CHECK(kernel_word(soc, RKT_PC_TASK_DMA_BASE_ADDR, 0) == 0, "%s task DMA base", soc);
        CHECK(kernel_word(soc, RKT_PC_REGISTER_AMOUNTS, 0) == 71, "%s amount for 143 words", soc);
        CHECK(kernel_word(soc, RKT_CNA_S_POINTER, 1) == 0x1000000E, "%s core 1 S_POINTER", soc);
    }
    CHECK(rkt_gen_named("rk3562") == NULL && teflon_target_named("rk3562") == NULL, "unknown SoC");
    /* rk3568: PC amount scale 1 (words - 1) [VEND pc_data_amount_scale], the rocket one-task kick word */
    CHECK(rkt_gen_named("rk3568") != NULL && teflon_target_named("rk3568")->drivable, "rk3568 drivable");
    CHECK(kernel_word("rk3568", RKT_PC_REGISTER_AMOUNTS, 0) == 142, "rk3568 amount for 143 words");
    CHECK(kernel_word("rk3568", RKT_PC_TASK_CON, 0) == 0x7001, "rk3568 TASK_CON");

    /* RK3576: TASK_NUMBER is 16 bits; the RK3588 word asks for 28673 tasks */
    const char *m = kick_with("rk3576", 0x7001);
    CHECK(strstr(m, "PC_TASK_CON = 0x00007001 asks for 28673 tasks") && strstr(m, "0x70001"), "rk3576 0x7001: %s", m);
    m = kick_with("rk3576", 0x70001);
    CHECK(!strstr(m, "TASK_CON") && strstr(m, "never written in this job"), "rk3576 0x70001 must reach execution: %s", m);
    m = kick_with("rk3576", 0x70002);
    CHECK(strstr(m, "asks for 2 tasks"), "rk3576 two tasks per kick: %s", m);

    /* RK3588: unchanged; the RK3576 word sets bits outside its TASK_CON fields */
    m = kick_with("rk3588", 0x7001);
    CHECK(!strstr(m, "TASK_CON") && strstr(m, "never written in this job"), "rk3588 0x7001 must reach execution: %s", m);
    m = kick_with("rk3588", 0x70001);
    CHECK(strstr(m, "MMIO write PC_TASK_CON = 0x00070001 sets bits 0x00070000 outside its defined fields"),
          "rk3588 0x70001: %s", m);
    CHECK(rkt_npu_create(rkt_gen_named("rk3562"), &(struct teflon_sim_rules){0}, lookup, NULL) == NULL, "no NPU for an unknown SoC");

    if (!failures)
        printf("all checks passed\n");
    return failures != 0;
}

static int test_detect(void)
{
    char soc[64];
    const int rc = teflon_detect_soc(soc, sizeof(soc));
    printf("rc=%d soc=%s\n", rc, soc);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "kick") == 0)
        return test_kick();
    if (argc == 2 && strcmp(argv[1], "detect") == 0)
        return test_detect();
    fprintf(stderr, "usage: %s kick|detect\n", argv[0]);
    return 2;
}
