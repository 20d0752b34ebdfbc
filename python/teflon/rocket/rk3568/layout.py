"""RK3568 feature-map and CBUF geometry (docs/hardware/rk3568.md §3): 8-channel atoms, 8 CBUF banks of 32 KiB.

Feature maps are NC1HWC2 with C2 = 8: a plane of 8 channels x W x H bytes, line stride W x 8 bytes; a plane the DPU
writes is align4(W x H) atoms (a 1x1 map keeps 1), one the host writes W x H atoms (as the vendor programs read
graph inputs) [IAV RELOG T44/T57; GOLD].
"""

from __future__ import annotations

from ..geometry import align

ATOM = 8  # channels (= bytes) per feature atom: C2 [IAV T44; GOLD strides in 8-byte units]
CBUF_BANKS = 8  # [IAV T44; FORK rkt_ml.h citing TRM Part2 §9.1]
BANK_BYTES = 32 * 1024
ENTRY_BYTES = 32  # one CBUF data entry [IAV T57: DATA_ENTRIES = W x ceil(C/8) / 4]
BANK_ENTRIES = BANK_BYTES // ENTRY_BYTES


def dpu_plane(h: int, w: int) -> int:
    """Atoms of an output plane as the DPU writes it: align4(W x H), a single atom kept [IAV T57; GOLD]."""
    n = h * w
    return n if n == 1 else align(n, 4)


def in_channels(c: int) -> int:
    """Input channels as the CNA reads them: one 8-channel atom up to 8, else whole 16-channel pairs [GOLD: every
    DATA_ENTRIES and WEIGHT_SIZE1 of the vendor programs]."""
    return 8 if c <= 8 else align(c, 16)


DW_GROUP = 32  # depthwise channels per weight group [IAV T47/T66; GOLD]


def dw_channels(c: int) -> int:
    """Channels a depthwise layer's weights and CBUF rows take: whole 32-channel groups, a partial last group of 8, 16
    or 32 (1-8 -> 8, 9-16 -> 16, 17-31 -> 32) [TOOLKIT, built here: rknn-toolkit2 2.5.0 target rk3566, models
    dwconv-in10x10x{8,16,24,40,48,56,72}-k3-s1: WEIGHT_SIZE1 / 9 = 8, 16, 32, 40, 48, 64, 72, DATA_ENTRIES likewise;
    GOLD dwconv-in19x17x24: 32]."""
    tail = c % DW_GROUP
    return c - tail + (0 if not tail else 8 if tail <= 8 else 16 if tail <= 16 else DW_GROUP)


def data_entries(w: int, c: int, depthwise: bool = False) -> int:
    """CBUF entries of one input row (DATA_ENTRIES)."""
    return -(-w * ((dw_channels(c) if depthwise else in_channels(c)) // ATOM) // 4)


def packed_width(w: int) -> int:
    """The width the CBUF and the feature DMA take for a packed-pixel input: whole 8-pixel groups [TOOLKIT, built
    here: rknn-toolkit2 2.5.0 target rk3566, 1/3/4-channel first convolutions at widths 28, 30, 56, 224:
    CBUF_CON1 width 32/32/56/224 and FC_DATA_SIZE0 DMA_WIDTH the same]."""
    return align(w, ATOM)


def packed_entries(w: int) -> int:
    """CBUF entries of one packed-pixel input row: packed_width(w) / 4 [TOOLKIT, as packed_width: 8, 8, 14, 56]."""
    return packed_width(w) // 4


def data_banks(w: int, h: int, c: int) -> int:
    """Banks the input rows of a single-task layer take: the least that hold them [IAV T44; GOLD]."""
    return -(-data_entries(w, c) * h // BANK_ENTRIES)
