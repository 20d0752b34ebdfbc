/* The bytes of one ethosu task (a teflon_task of a Program job): a small teflon header, then the command words
 * exactly as they go to DRM_IOCTL_ETHOSU_CMDSTREAM_BO_CREATE (no Vela COP1 driver-action header).
 *
 * A job of the ethosu family names its BOs in the family-neutral lists (teflon_job in_bos, then out_bos; a BO
 * the job both reads and writes is listed once, as written). The kernel instead takes one BO per NPU region
 * (drm_ethosu_job.region_bo_handles[8]) and an SRAM size for region 2, so the task says which listed BO backs
 * which region. All fields are little-endian u32:
 *
 *   word 0        ETHOSU_TASK_MAGIC ("TEU1")
 *   word 1        sram_size: bytes of the NPU's SRAM the job uses as region 2 (0: none; then region 2 may be a BO)
 *   words 2..9    region r (0..7): index into the job's BO list (in_bos followed by out_bos), or
 *                 ETHOSU_TASK_NO_BO when the stream does not use region r
 *   words 10..    the command stream words (cmd0 / cmd1 + payload), ETHOSU_TASK_HEADER_WORDS words in
 *
 * The Python side writes it with teflon.ethosu.task (same constants).
 */
#ifndef ETHOSU_TASK_H
#define ETHOSU_TASK_H

#define ETHOSU_TASK_MAGIC 0x31554554u /* "TEU1" little-endian */
#define ETHOSU_TASK_NO_BO 0xffffffffu
#define ETHOSU_MAX_REGIONS 8          /* drm_ethosu_job.region_bo_handles[8] (include/uapi/drm/ethosu_accel.h) */
#define ETHOSU_TASK_HEADER_WORDS (2 + ETHOSU_MAX_REGIONS)

#endif
