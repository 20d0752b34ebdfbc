"""Weight lowering for etnaviv NN jobs: TFLite uint8 weights -> the layout the coefficient writers take.

Source: etnaviv.md §1.3 (lowering tricks) and §3 (canonical order); checked against Mesa's lowered weights of
every conv / depthwise / FC job in ../shared/golden/etnaviv-v7 and -v8 (tests/etnaviv/test_coefs.py).

The canonical order is Wt[oc][ic][a][b] with a over TFLite kh (Mesa "weight_width") and b over TFLite kw,
b fastest. Steps, in the order `lower_weights` applies them:

    conv / FC     OHWI -> [oc][ic][kh][kw]  (FC: [out][N] unchanged)
    depthwise v7  [1][kh][kw][C] -> dense [C][C][kh][kw], weight zero point off the diagonal (when C > 1 or
                  stride > 1, etnaviv.md §1.3; otherwise it is a 1-channel conv)
    depthwise v8  [1][kh][kw][C] -> [C][kh*kw] (native depthwise mode; no further rewrites)
    space-to-depth (stride-2 convs lowered with a TP reshuffle): [oc][ic][kh][kw] ->
                  [oc][4*ic][ceil(kh/2)][ceil(kw/2)], sub-kernel j = 2*row_off + col_off in input channel 4*ic + j
    1x1 on 1 input channel -> 2x2, the weight at (0, 0), the zero point elsewhere

All functions are pure numpy and return new arrays.
"""

from __future__ import annotations

import numpy as np


def ohwi_to_oihw(w: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(w, dtype=np.uint8).transpose(0, 3, 1, 2))


def expand_depthwise_v7(w: np.ndarray, zp: int) -> np.ndarray:
    """TFLite depthwise [1][kh][kw][C] -> dense [C][C][kh][kw]: kernel c sees only input channel c."""
    _, kh, kw, c = w.shape
    out = np.full((c, c, kh, kw), zp, dtype=np.uint8)
    diag = np.arange(c)
    out[diag, diag] = np.asarray(w, dtype=np.uint8)[0].transpose(2, 0, 1)
    return out


def reorder_depthwise_v8(w: np.ndarray) -> np.ndarray:
    """TFLite depthwise [1][kh][kw][C] -> [C][kh*kw]."""
    _, kh, kw, c = w.shape
    return np.ascontiguousarray(np.asarray(w, dtype=np.uint8)[0].reshape(kh * kw, c).T)


def space_to_depth(w: np.ndarray, zp: int) -> np.ndarray:
    """[oc][ic][kh][kw] -> [oc][4*ic][ceil(kh/2)][ceil(kw/2)] for a stride-2 conv run at stride 1 on the
    reshuffled input (input channel 4*z + 2*(h mod 2) + (w mod 2) holds pixel (h, w) of channel z)."""
    oc, ic, kh, kw = w.shape
    kh2, kw2 = -(-kh // 2), -(-kw // 2)
    padded = np.full((oc, ic, 2 * kh2, 2 * kw2), zp, dtype=np.uint8)  # taps outside the kernel: zero point
    padded[:, :, :kh, :kw] = w
    # padded[o, z, 2r + dr, 2s + dc] -> out[o, z, dr, dc, r, s] -> channel 4z + 2dr + dc
    out = padded.reshape(oc, ic, kh2, 2, kw2, 2).transpose(0, 1, 3, 5, 2, 4)
    return np.ascontiguousarray(out.reshape(oc, 4 * ic, kh2, kw2))


def pointwise_to_2x2(w: np.ndarray, zp: int) -> np.ndarray:
    """[oc][1][1][1] -> [oc][1][2][2] with the weight at (0, 0)."""
    out = np.full((w.shape[0], 1, 2, 2), zp, dtype=np.uint8)
    out[:, :, 0, 0] = w[:, :, 0, 0]
    return out


def lower_weights(w: np.ndarray, *, version: int, kind: str, zp: int, stride: int = 1,
                  reshuffle: bool = False) -> np.ndarray:
    """TFLite weights -> lowered weights (flat uint8).

    kind: "conv" (OHWI), "depthwise" ([1][kh][kw][C]) or "fc" ([out][N], any leading 1s).
    reshuffle: the conv is lowered with space-to-depth (the lowering decides; etnaviv.md §1.3).
    """
    w = np.asarray(w, dtype=np.uint8)
    if kind == "fc":
        return w.reshape(-1).copy()
    if kind == "depthwise":
        if version == 8:
            return reorder_depthwise_v8(w).reshape(-1)
        c = w.shape[3]
        lowered = expand_depthwise_v7(w, zp) if (c > 1 or stride > 1) else ohwi_to_oihw(w)
    elif kind == "conv":
        lowered = ohwi_to_oihw(w)
    else:
        raise ValueError(f"unknown weight kind {kind!r}")
    if reshuffle:
        lowered = space_to_depth(lowered, zp)
    if lowered.shape[1:] == (1, 1, 1):
        lowered = pointwise_to_2x2(lowered, zp)
    return lowered.reshape(-1)
