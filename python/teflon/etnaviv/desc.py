"""The etnaviv NN and TP job descriptors as data (teflon.hw.descriptor tables).

NN: 34 u32 words (136 bytes), one per NN job. TP: 31 u32 words (124 bytes), one per TP core a job uses.
Bit positions and field names: ../shared/docs/etnaviv.md §2.1 (NN) and §5.1 (TP), which restate Mesa's
`etna_nn_params` / `etna_tp_params` layouts (commit 16e15ee2, etnaviv_ml_nn.c / etnaviv_ml_tp.c); every layout
was checked against the 101+101 golden descriptors of ../shared/golden/etnaviv-v7 and -v8 (tests/etnaviv).
Field names are Mesa's where it has one; `unusedN` words Mesa leaves 0 are not declared, so a descriptor setting
them is refused by `DescTable.check` and by the simulator.

v7 and v8 share the NN layout except for the fields only v8 uses (`depthwise`, the high post-multiplier bits and
the two negative-offset flags of word 18); v7's table leaves them out, so a v7 descriptor setting them is an error.
The TP layout is the same on both.

Bounds (`bounds=(min, max)`): the values a field may hold beyond fitting its bits. They are the compile-time
program check's rules (teflon.etnaviv.check) and, through the generated header, the simulator's, so the two
refuse exactly the same descriptors. Sources, per field:
- sizes, kernel sizes, kernels_per_core, TP tile sizes >= 1: an empty image, kernel or tile is no job
  (etnaviv.md §2.1, §5.1; Mesa never writes 0);
- out_image_tile_x_size <= 64: MAX_TILE_WIDTH (etnaviv.md §6 step 1);
- image/kernel_caching_mode <= 2: 3 is not a defined mode (etnaviv.md §2.1 word 8); v8 runs with both off
  (etnaviv.md §2.4, Mesa's v8 path), so its bound is 0..0;
- in_image_border_const <= 255: the border is an input value, and inputs are uint8 (etnaviv.md §4 "Bias / zero
  points");
- post_shift: the right shift of the requantization (etnaviv.md §4) stays at most 62 bits, where a 64-bit
  product of a 32-bit accumulator and the 16-bit (v7) / 24-bit (v8) mantissa has been measured and modelled;
  v8 shifts by post_shift + 23, so its field bound is 0..39, v7's 0..62. A larger shift (tiny scales, e.g.
  1e-12) has no characterised behaviour (the HWDB's NEGATIVE_POST_SHIFT_FIX hints at shift handling that
  differs between cores): such a layer stays on the CPU.
"""

from __future__ import annotations

# Absolute import: teflon.hw.gen_c_header loads this module from the source tree at build time.
from teflon.hw.descriptor import DescField, DescTable, fld

NN_WORDS = 34
TP_WORDS = 31

_NN_COMMON: tuple[DescField, ...] = (
    fld("layer_type", 0, 0, 0),
    fld("no_z_offset", 0, 1, 1),
    fld("kernel_xy_size", 0, 2, 5, bounds=(1, 15)),
    fld("kernel_z_size", 0, 6, 19, (5, 26, 31), bounds=(1, 0xFFFFF)),  # bits 14..19 in word 5 (kernel_z_size2)
    fld("kernels_per_core", 0, 20, 26, bounds=(1, 127)),
    fld("pooling", 0, 27, 28, note="0 none, 1 max, 2 avg, 3 first pixel"),
    fld("pooling_xy_size", 0, 29, 29),
    fld("prelu", 0, 30, 30, allowed=(0,)),
    fld("nn_layer_flush", 0, 31, 31),
    fld("kernel_data_type", 1, 0, 1, (15, 19, 19), allowed=(0,)),
    fld("in_image_data_type", 1, 2, 3, (15, 20, 20), allowed=(0,)),
    fld("out_image_data_type", 1, 4, 5, (15, 21, 21), allowed=(0,)),
    fld("in_image_x_size", 1, 6, 18, bounds=(1, 0x1FFF)),
    fld("in_image_y_size", 1, 19, 31, bounds=(1, 0x1FFF)),
    fld("in_image_x_offset", 2, 0, 2, (4, 16, 16), signed=True),
    fld("in_image_y_offset", 2, 3, 5, (4, 17, 17), signed=True),
    fld("brick_mode", 2, 7, 7, allowed=(0,)),
    fld("brick_distance", 2, 8, 23, allowed=(0,)),
    fld("relu", 2, 24, 24),
    fld("no_flush", 3, 3, 3),
    fld("out_image_x_size", 3, 6, 18, bounds=(1, 0x1FFF)),
    fld("out_image_y_size", 3, 19, 31, bounds=(1, 0x1FFF)),
    fld("out_image_z_size", 4, 0, 13, bounds=(1, 0x3FFF)),
    fld("rounding_mode", 4, 14, 15, allowed=(1,)),
    fld("out_image_tile_x_size", 4, 18, 24, bounds=(1, 64)),
    fld("out_image_tile_y_size", 4, 25, 31, bounds=(1, 127)),
    fld("kernel_address", 5, 0, 25, note="coefficient buffer address >> 6"),
    fld("in_image_address", 6, 0, 31),
    fld("out_image_address", 7, 0, 31),
    fld("partial_cache_data_unit", 8, 4, 5, allowed=(0,)),
    fld("kernel_pattern_msb", 8, 6, 11),
    fld("kernel_y_size", 8, 12, 15, bounds=(1, 15)),
    fld("out_image_y_stride", 8, 16, 31),
    fld("kernel_pattern_low", 9, 0, 31),
    fld("kernel_pattern_high", 10, 0, 31),
    fld("kernel_cache_start_address", 11, 0, 31),
    fld("kernel_cache_end_address", 12, 0, 31),
    fld("image_cache_start_address", 13, 0, 31),
    fld("image_cache_end_address", 14, 0, 31),
    fld("in_image_border_mode", 15, 0, 1, allowed=(0,)),
    fld("in_image_border_const", 15, 2, 17, bounds=(0, 255)),
    fld("in_image_x_stride", 16, 0, 15),
    fld("in_image_y_stride", 16, 16, 31),
    fld("out_image_x_stride", 17, 0, 15),
    fld("out_image_circular_buf_size", 18, 0, 25, allowed=(0,)),
    # 0 only: neither chip is shown to have per-channel post multipliers and their stream layout is not public
    # (docs/hardware/etnaviv-per-channel.md); per-channel layers run as one job per requantization run instead
    fld("per_channel_post_mul", 18, 26, 26, allowed=(0,)),
    fld("out_image_circular_buf_end_addr_plus_1", 19, 0, 25, allowed=(0x3FFFFFF,)),
    fld("in_image_circular_buf_size", 20, 0, 25, allowed=(0,)),
    fld("in_image_circular_buf_end_addr_plus_1", 21, 0, 25, allowed=(0x3FFFFFF,)),
    fld("coef_zero_point", 22, 0, 7),
    fld("out_zero_point", 22, 8, 15),
    fld("kernel_direct_stream_from_vip_sram", 22, 16, 16, allowed=(0,)),
    # Words 28..30: constants Mesa copies from the vendor's streams; meaning unknown (etnaviv.md §2.1).
    fld("further3", 28, 0, 31, allowed=(0x03FFFFFF,)),
    fld("further4", 29, 0, 31, allowed=(0x7F800000,)),
    fld("further5", 30, 0, 31, allowed=(0xFF800000,)),
)

# post_multiplier / post_shift: low bits in word 2, the rest in words 15 and 17 (and 22 on v8), etnaviv.md §4.
_POST_V7 = (
    fld("post_multiplier", 2, 26, 26, (15, 22, 27), (17, 24, 31)),
    fld("post_shift", 2, 27, 31, (15, 28, 29), bounds=(0, 62)),
    fld("image_caching_mode", 8, 0, 1, bounds=(0, 2)),
    fld("kernel_caching_mode", 8, 2, 3, bounds=(0, 2)),
)
_POST_V8 = (
    fld("post_multiplier", 2, 26, 26, (15, 22, 27), (17, 24, 31), (22, 18, 25)),
    fld("post_shift", 2, 27, 31, (15, 28, 29), bounds=(0, 62 - 23)),
    fld("image_caching_mode", 8, 0, 1, bounds=(0, 0)),
    fld("kernel_caching_mode", 8, 2, 3, bounds=(0, 0)),
    fld("depthwise", 22, 17, 17),
    # Set by Mesa's v8 path together with a negative input offset; meaning unknown (etnaviv.md §2.3).
    fld("neg_offset_flag_a", 18, 29, 29),
    fld("neg_offset_flag_b", 18, 30, 30),
)

NN_V7 = DescTable("ETNA_NN_V7", NN_WORDS, _NN_COMMON + _POST_V7)
NN_V8 = DescTable("ETNA_NN_V8", NN_WORDS, _NN_COMMON + _POST_V8)


def _pairs(word: int, lo_name: str, hi_name: str, signed: bool = False) -> tuple[DescField, DescField]:
    return fld(lo_name, word, 0, 15, signed=signed), fld(hi_name, word, 16, 31, signed=signed)


TP = DescTable("ETNA_TP", TP_WORDS, (
    fld("in_image_x_size", 0, 0, 15, bounds=(1, 0xFFFF)),
    fld("in_image_y_size", 1, 0, 15, bounds=(1, 0xFFFF)),
    fld("in_image_z_size", 1, 16, 31, bounds=(1, 0xFFFF)),
    fld("in_image_stride", 2, 0, 15),
    fld("in_image_slice", 3, 0, 31),
    *_pairs(4, "in_window_x_start", "in_window_y_start", signed=True),
    *_pairs(5, "in_window_x_end", "in_window_y_end", signed=True),
    fld("in_tile_sequence", 6, 0, 1),
    fld("in_tile_global_mem", 6, 2, 2),
    fld("in_image_global_mem", 6, 3, 3),
    fld("alu_i2f_enable", 6, 4, 4),
    fld("alu_square_enable", 6, 5, 5),
    fld("alu_horz_processing", 6, 6, 8),
    fld("alu_horz_proc_count", 6, 9, 14),
    fld("alu_horz_proc_stride", 6, 15, 15),
    fld("alu_vert_processing", 6, 16, 17),
    fld("alu_vert_proc_count", 6, 19, 24),
    fld("alu_vert_proc_stride", 6, 25, 25),
    fld("alu_nms_enable", 6, 26, 26),
    fld("alu_pwl_enable", 6, 27, 27),
    fld("alu_mult_enable", 6, 28, 28),
    fld("alu_f2i_enable", 6, 29, 29),
    fld("alu_load_pwl_lut", 6, 30, 30),
    fld("alu_load_pwl_lut_global_mem", 6, 31, 31),
    fld("in_tile_list_address", 7, 0, 31),
    fld("in_tile_x_size", 8, 0, 15, bounds=(1, 0xFFFF)),
    fld("in_tile_y_size", 8, 16, 31, bounds=(1, 0xFFFF)),
    *_pairs(9, "in_tile_x_inc", "in_tile_y_inc"),
    fld("in_image_base_address", 10, 0, 31),
    fld("alu_load_pwl_lut_address", 11, 0, 31),
    fld("out_tile_skip_at_border", 12, 0, 0),
    fld("out_image_global_mem", 12, 1, 1),
    fld("out_loop_1_reset", 12, 2, 2),
    fld("out_loop_2_reset", 12, 3, 3),
    fld("out_loop_3_reset", 12, 4, 4),
    fld("out_brick_mode", 12, 5, 5),
    fld("alu_z_filter_mode", 12, 6, 6),
    fld("in_window_z_start_overfetch", 12, 8, 9),
    fld("in_window_z_end_overfetch", 12, 11, 12),
    fld("alu_square_preshift", 12, 14, 17),
    fld("in_image_data_type", 12, 18, 20),
    fld("out_image_data_type", 12, 21, 23),
    fld("alu_pwl_sign_support", 12, 28, 28),
    fld("alu_relu_enable", 12, 29, 29),
    fld("no_flush", 12, 30, 30),
    fld("last", 12, 31, 31),
    fld("out_image_base_address", 13, 0, 31),
    fld("out_loop_0_inc", 14, 0, 31),
    fld("out_loop_1_inc", 15, 0, 31),
    *_pairs(16, "out_loop_0_count", "out_loop_1_count"),
    fld("out_loop_2_inc", 17, 0, 31),
    fld("out_loop_3_inc", 18, 0, 31),
    *_pairs(19, "out_loop_2_count", "out_loop_3_count"),
    fld("out_loop_4_inc", 20, 0, 31),
    fld("out_loop_5_inc", 21, 0, 31),
    *_pairs(22, "out_loop_4_count", "out_loop_5_count"),
    fld("out_loop_6_inc", 23, 0, 31),
    fld("alu_filter_pwl_swap", 24, 0, 0),
    fld("flat_rounding_mode", 24, 1, 2),
    fld("integer_rounding_mode", 24, 3, 4),
    fld("alu_input_preshift", 24, 5, 9),
    fld("alu_output_postshift", 24, 10, 14, (24, 26, 27)),
    fld("alu_reorder_bits_used", 24, 15, 18),
    fld("alu_reorder_loop_2_mode", 24, 19, 19),
    fld("in_image_border_mode", 24, 24, 25),
    fld("in_image_circular_buf_size", 25, 0, 31),
    fld("in_image_circular_buf_end_address_plus_1", 26, 0, 31),
    fld("out_image_circular_buf_size", 27, 0, 31),
    fld("out_image_circular_buf_end_address_plus_1", 28, 0, 31),
    fld("in_image_border_const", 29, 0, 15),
    fld("coef_zp", 29, 16, 23),
    fld("in_zp", 29, 24, 31),
    fld("out_zp", 30, 0, 7),
    fld("alu_output_post_multiplier", 30, 8, 22),
))
