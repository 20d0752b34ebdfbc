"""Small in-place edits of a .tflite flatbuffer that keep every other byte of the model as it is.

`with_outputs(model, tensors)` makes extra tensors graph outputs of the first subgraph. The per-layer `compare`
tool uses it to have the delegate hand back the tensors its partitions produce (see teflon.cli.compare).

How: a flatbuffer table field holding a vector is an unsigned 32-bit offset, relative to the field's own position
and pointing forward. The new output list is appended as an int32 vector after the last byte of the model (4-byte
aligned, length first) and the subgraph's `outputs` field is repointed to it. Tensors, operators, buffers,
metadata and the old (now unreferenced) vector stay byte for byte where they were, so the rewritten model differs
only in which tensors are outputs. Buffers stored outside the flatbuffer (the >2 GiB layout) are addressed by
absolute file offsets, which appending does not move.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import tflite

# SubGraph's fields in schema order: tensors, inputs, outputs, operators, name; vtable slot of field i is 4 + 2*i.
_SUBGRAPH_OUTPUTS_SLOT = 4 + 2 * 2


def graph_outputs(model: bytes) -> list[int]:
    """The first subgraph's output tensor indices."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    return [int(sg.Outputs(i)) for i in range(sg.OutputsLength())]


def with_outputs(model: bytes, tensors: Sequence[int]) -> bytes:
    """`model` with `tensors` appended to the first subgraph's outputs (those already outputs are skipped)."""
    sg = tflite.Model.GetRootAs(model, 0).Subgraphs(0)
    current = graph_outputs(model)
    extra = [int(t) for t in dict.fromkeys(tensors) if int(t) not in current]
    for t in extra:
        if not 0 <= t < sg.TensorsLength():
            raise ValueError(f"tensor {t} is not a tensor of the first subgraph ({sg.TensorsLength()} tensors)")
    if not extra:
        return bytes(model)
    slot = sg._tab.Offset(_SUBGRAPH_OUTPUTS_SLOT)
    if slot == 0:
        raise ValueError("the first subgraph has no outputs field to repoint")
    field = sg._tab.Pos + slot
    out = bytearray(model)
    out += bytes(-len(out) % 4)
    vector = len(out)
    values = current + extra
    out += struct.pack(f"<I{len(values)}i", len(values), *values)
    struct.pack_into("<I", out, field, vector - field)
    return bytes(out)
