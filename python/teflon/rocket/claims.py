"""The claim decisions both rocket generations make the same way, around their own encoders' checks: a fused
ADD/SUB (fused_add.add_fusion) and a pool (pool.lower_pool_ops). Each takes the generation's check, which builds the
operation's register streams and raises EncodeError when a value does not fit."""

from __future__ import annotations

from collections.abc import Callable

from ..ir import Graph, Operation
from .fused_add import add_fusion, fuse_add, fuse_mul, mul_fusion
from .operations import RocketConv, RocketPool
from .pool import describe_pool, lower_pool_ops
from .quantization import LoweringError
from .stream import EncodeError

Decision = tuple[bool, str]


def claim_fused_add(graph: Graph, op: Operation, by_output: dict[int, RocketConv],
                    check: Callable[[RocketConv, int], None],
                    fusable: Callable[[RocketConv], bool] | None = None) -> Decision:
    """Fuse the ADD/SUB into the claimed convolution producing one of its inputs; `by_output` (claimed convolutions
    by output tensor) then holds the fused operation instead. `check(fused, operand tensor)` raises the
    generation's refusals."""
    try:
        conv, other = add_fusion(graph, op, by_output, fusable)
        fused = fuse_add(graph, op, conv, other)
        check(fused, other)
    except (LoweringError, EncodeError) as e:
        return False, str(e)
    by_output[fused.output_tensor] = fused
    if not conv.nodes:
        return True, (f"a 1x1 depthwise copy of tensor {conv.input_tensor} with the DPU element-wise add of tensor "
                      f"{other} (no convolution to fuse into)")
    del by_output[conv.output_tensor]
    return True, f"fused into node {conv.nodes[0]} (DPU element-wise add of tensor {other})"


def claim_mul(graph: Graph, op: Operation, by_output: dict[int, RocketConv],
              check: Callable[[RocketConv, int], None]) -> Decision:
    """A MUL of two tensors through a copy of its first input and the DPU's element-wise multiply (a fact a board
    run proved: the caller asks hw_facts first); `by_output` then holds the fused copy."""
    try:
        conv, other = mul_fusion(graph, op)
        fused = fuse_mul(graph, op, conv, other)
        check(fused, other)
    except (LoweringError, EncodeError) as e:
        return False, str(e)
    by_output[fused.output_tensor] = fused
    return True, (f"a 1x1 depthwise copy of tensor {conv.input_tensor} with the DPU element-wise multiply by tensor "
                  f"{other} (proved by TEFLON_HW_FACTS)")


def claim_pool(graph: Graph, op: Operation, check_pool: Callable[[RocketPool], None],
               check_conv: Callable[[RocketConv], None]) -> Decision:
    """A pool on the PPU (or its depthwise-convolution form): every operation it lowers to must encode."""
    try:
        ops = lower_pool_ops(graph, op)
        for c in ops:  # every register value must fit its field
            if isinstance(c, RocketPool):
                check_pool(c)
            elif isinstance(c, RocketConv):
                check_conv(c)
    except (LoweringError, EncodeError) as e:
        return False, str(e)
    return True, describe_pool(ops)
