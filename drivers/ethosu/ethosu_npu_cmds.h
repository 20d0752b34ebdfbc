/* The U65 command set as the simulated NPU decodes it: opcodes, whether a payload word follows (cmd1), and
 * which param bits a command defines. Source: the U55/U65 register definitions of Vela 5.2.0
 * (ethosu/vela/ethos_u55_regs/ethos_u55_regs.py, ARCH_VER 1.0.6: the cmd0/cmd1 enums and the npu_*_t field
 * layouts), with the field names of Vela's --verbose-register-command-stream; the stride extension bits as
 * Linux drivers/accel/ethosu/ethosu_gem.c reads them (docs/hardware/ethosu-sim.md, "Command set").
 */
#ifndef ETHOSU_NPU_CMDS_H
#define ETHOSU_NPU_CMDS_H

#include <stdint.h>

/* Opcode = bits 0..9 of the command word; bit 14 marks a cmd1 (one payload word follows); bits 16..31 are
 * the param. The register file is indexed by the 10-bit opcode. */
#define ETHOSU_NPU_OPCODES 1024
#define ETHOSU_NPU_CMD1_BIT (1u << 14)

/* Operations (cmd0 opcodes below 0x100). */
#define ETHOSU_OP_STOP 0x000
#define ETHOSU_OP_IRQ 0x001
#define ETHOSU_OP_CONV 0x002
#define ETHOSU_OP_DEPTHWISE 0x003
#define ETHOSU_OP_POOL 0x005
#define ETHOSU_OP_ELEMENTWISE 0x006
#define ETHOSU_OP_DMA_START 0x010
#define ETHOSU_OP_DMA_WAIT 0x011
#define ETHOSU_OP_KERNEL_WAIT 0x012
#define ETHOSU_OP_PMU_MASK 0x013

/* cmd0 registers. */
#define ETHOSU_IFM_PAD_TOP 0x100
#define ETHOSU_IFM_PAD_LEFT 0x101
#define ETHOSU_IFM_PAD_RIGHT 0x102
#define ETHOSU_IFM_PAD_BOTTOM 0x103
#define ETHOSU_IFM_DEPTH_M1 0x104
#define ETHOSU_IFM_PRECISION 0x105
#define ETHOSU_IFM_UPSCALE 0x107
#define ETHOSU_IFM_ZERO_POINT 0x109
#define ETHOSU_IFM_WIDTH0_M1 0x10A
#define ETHOSU_IFM_HEIGHT0_M1 0x10B
#define ETHOSU_IFM_HEIGHT1_M1 0x10C
#define ETHOSU_IFM_IB_END 0x10D
#define ETHOSU_IFM_REGION 0x10F
#define ETHOSU_OFM_WIDTH_M1 0x111
#define ETHOSU_OFM_HEIGHT_M1 0x112
#define ETHOSU_OFM_DEPTH_M1 0x113
#define ETHOSU_OFM_PRECISION 0x114
#define ETHOSU_OFM_BLK_WIDTH_M1 0x115
#define ETHOSU_OFM_BLK_HEIGHT_M1 0x116
#define ETHOSU_OFM_BLK_DEPTH_M1 0x117
#define ETHOSU_OFM_ZERO_POINT 0x118
#define ETHOSU_OFM_WIDTH0_M1 0x11A
#define ETHOSU_OFM_HEIGHT0_M1 0x11B
#define ETHOSU_OFM_HEIGHT1_M1 0x11C
#define ETHOSU_OFM_REGION 0x11F
#define ETHOSU_KERNEL_WIDTH_M1 0x120
#define ETHOSU_KERNEL_HEIGHT_M1 0x121
#define ETHOSU_KERNEL_STRIDE 0x122
#define ETHOSU_PARALLEL_MODE 0x123
#define ETHOSU_ACC_FORMAT 0x124
#define ETHOSU_ACTIVATION 0x125
#define ETHOSU_ACTIVATION_MIN 0x126
#define ETHOSU_ACTIVATION_MAX 0x127
#define ETHOSU_WEIGHT_REGION 0x128
#define ETHOSU_SCALE_REGION 0x129
#define ETHOSU_AB_START 0x12D
#define ETHOSU_BLOCKDEP 0x12F
#define ETHOSU_DMA0_SRC_REGION 0x130
#define ETHOSU_DMA0_DST_REGION 0x131
#define ETHOSU_DMA0_SIZE0 0x132
#define ETHOSU_DMA0_SIZE1 0x133
#define ETHOSU_IFM2_BROADCAST 0x180
#define ETHOSU_IFM2_SCALAR 0x181
#define ETHOSU_IFM2_PRECISION 0x185
#define ETHOSU_IFM2_ZERO_POINT 0x189
#define ETHOSU_IFM2_WIDTH0_M1 0x18A
#define ETHOSU_IFM2_HEIGHT0_M1 0x18B
#define ETHOSU_IFM2_HEIGHT1_M1 0x18C
#define ETHOSU_IFM2_IB_START 0x18D
#define ETHOSU_IFM2_REGION 0x18F

/* cmd1 registers (the opcode field carries them from 0x000; the cmd1 bit tells them from the operations). */
#define ETHOSU_IFM_BASE0 0x000
#define ETHOSU_IFM_BASE1 0x001
#define ETHOSU_IFM_BASE2 0x002
#define ETHOSU_IFM_BASE3 0x003
#define ETHOSU_IFM_STRIDE_X 0x004
#define ETHOSU_IFM_STRIDE_Y 0x005
#define ETHOSU_IFM_STRIDE_C 0x006
#define ETHOSU_OFM_BASE0 0x010
#define ETHOSU_OFM_BASE1 0x011
#define ETHOSU_OFM_BASE2 0x012
#define ETHOSU_OFM_BASE3 0x013
#define ETHOSU_OFM_STRIDE_X 0x014
#define ETHOSU_OFM_STRIDE_Y 0x015
#define ETHOSU_OFM_STRIDE_C 0x016
#define ETHOSU_WEIGHT_BASE 0x020
#define ETHOSU_WEIGHT_LENGTH 0x021
#define ETHOSU_SCALE_BASE 0x022
#define ETHOSU_SCALE_LENGTH 0x023
#define ETHOSU_OFM_SCALE 0x024
#define ETHOSU_OPA_SCALE 0x025
#define ETHOSU_OPB_SCALE 0x026
#define ETHOSU_DMA0_SRC 0x030
#define ETHOSU_DMA0_DST 0x031
#define ETHOSU_DMA0_LEN 0x032
#define ETHOSU_DMA0_SKIP0 0x033
#define ETHOSU_DMA0_SKIP1 0x034
#define ETHOSU_IFM2_BASE0 0x080
#define ETHOSU_IFM2_BASE1 0x081
#define ETHOSU_IFM2_BASE2 0x082
#define ETHOSU_IFM2_BASE3 0x083
#define ETHOSU_IFM2_STRIDE_X 0x084
#define ETHOSU_IFM2_STRIDE_Y 0x085
#define ETHOSU_IFM2_STRIDE_C 0x086
#define ETHOSU_WEIGHT1_BASE 0x090
#define ETHOSU_WEIGHT1_LENGTH 0x091
#define ETHOSU_SCALE1_BASE 0x092
#define ETHOSU_SCALE1_LENGTH 0x093

/* Field extraction: bits [shift, shift + width) of v. */
#define ETHOSU_FLD(v, shift, width) ((unsigned)(((v) >> (shift)) & ((1u << (width)) - 1u)))

/* IFM/IFM2_PRECISION: type bit 0 (signed), precision bits 2..3 (B8, B16, B32), format bits 6..7 (NHWC,
 * NHCWB16), IFM only: scale_mode bits 8..9, round_mode bits 14..15. */
#define ETHOSU_PREC_TYPE(v) ETHOSU_FLD(v, 0, 1)
#define ETHOSU_IFM_PREC_BITS(v) ETHOSU_FLD(v, 2, 2)
#define ETHOSU_PREC_FORMAT(v) ETHOSU_FLD(v, 6, 2)
#define ETHOSU_IFM_PREC_SCALE_MODE(v) ETHOSU_FLD(v, 8, 2)
#define ETHOSU_IFM_PREC_ROUND(v) ETHOSU_FLD(v, 14, 2)
/* OFM_PRECISION: type bit 0, precision bits 1..2, format bits 6..7, scale_mode bit 8 (1 = global OFM_SCALE),
 * round_mode bits 14..15. */
#define ETHOSU_OFM_PREC_BITS(v) ETHOSU_FLD(v, 1, 2)
#define ETHOSU_OFM_PREC_GLOBAL(v) ETHOSU_FLD(v, 8, 1)
#define ETHOSU_OFM_PREC_ROUND(v) ETHOSU_FLD(v, 14, 2)
/* KERNEL_STRIDE: stride_x_lsb 0, stride_y_lsb 1, weight_order 2, dilation_x 3, dilation_y 4,
 * decomposition 5, stride_x_msb 6, stride_y_msb 9. */
#define ETHOSU_KS_STRIDE_X(v) (ETHOSU_FLD(v, 0, 1) + 2u * ETHOSU_FLD(v, 6, 1) + 1u)
#define ETHOSU_KS_STRIDE_Y(v) (ETHOSU_FLD(v, 1, 1) + 2u * ETHOSU_FLD(v, 9, 1) + 1u)
#define ETHOSU_KS_PART_KERNEL(v) ETHOSU_FLD(v, 2, 1)
#define ETHOSU_KS_DILATION_X(v) (ETHOSU_FLD(v, 3, 1) + 1u)
#define ETHOSU_KS_DILATION_Y(v) (ETHOSU_FLD(v, 4, 1) + 1u)
#define ETHOSU_KS_DECOMPOSITION(v) ETHOSU_FLD(v, 5, 1)
/* ACTIVATION: function bits 0..11 (0 none/ReLU by clamp, 3 tanh, 4 sigmoid, 16..23 TABLE_0..7), clip range
 * bits 12..15 (0 OFM precision, 2 force uint8, 3 force int8, 5 force int16). */
#define ETHOSU_ACT_FUNCTION(v) ETHOSU_FLD(v, 0, 12)
#define ETHOSU_ACT_CLIP(v) ETHOSU_FLD(v, 12, 4)
/* IFM2_BROADCAST: H 0, W 1, C 2, operand_order 6 (IFM2 is operand A), scalar 7. */
#define ETHOSU_BC_H(v) ETHOSU_FLD(v, 0, 1)
#define ETHOSU_BC_W(v) ETHOSU_FLD(v, 1, 1)
#define ETHOSU_BC_C(v) ETHOSU_FLD(v, 2, 1)
#define ETHOSU_BC_ORDER(v) ETHOSU_FLD(v, 6, 1)
#define ETHOSU_BC_SCALAR(v) ETHOSU_FLD(v, 7, 1)
/* DMA0_SRC/DST_REGION: region 0..7, internal (SHRAM) bit 8, stride_mode bits 9..10. */
#define ETHOSU_DMA_REGION(v) ETHOSU_FLD(v, 0, 8)
#define ETHOSU_DMA_INTERNAL(v) ETHOSU_FLD(v, 8, 1)
#define ETHOSU_DMA_STRIDE_MODE(v) ETHOSU_FLD(v, 9, 2)

/* One row per command the U65 defines: the opcode, whether it is a cmd1, and the param bits it defines (a
 * set bit outside them is a command error). NULL name ends the table. */
struct ethosu_npu_cmd_def {
    uint16_t opcode;
    uint8_t cmd1;
    uint16_t param_mask;
    const char *name;
};
extern const struct ethosu_npu_cmd_def ethosu_npu_cmd_defs[];

#endif
