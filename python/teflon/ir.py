"""The compiler's graph IR: tensors and operations as TFLite hands them over.

Built either from the delegate's C graph (teflon.bridge) or directly by tests and tools.
Everything downstream (support checks, lowering, encoders) reads only this.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

# TfLiteType values -> numpy dtype names
TFLITE_TYPES: dict[int, str] = {
    1: "float32",
    2: "int32",
    3: "uint8",
    4: "int64",
    6: "bool",
    7: "int16",
    9: "int8",
    10: "float16",
}

# TFLite BuiltinOperator codes by name: every value of the schema's BuiltinOperator enum (tensorflow/lite/schema/
# schema.fbs as of TFLite 2.18), so a reason or a tool names any op a converter can emit.
BUILTIN_NAMES: dict[int, str] = {
    0: "ADD", 1: "AVERAGE_POOL_2D", 2: "CONCATENATION", 3: "CONV_2D", 4: "DEPTHWISE_CONV_2D", 5: "DEPTH_TO_SPACE",
    6: "DEQUANTIZE", 7: "EMBEDDING_LOOKUP", 8: "FLOOR", 9: "FULLY_CONNECTED", 10: "HASHTABLE_LOOKUP",
    11: "L2_NORMALIZATION", 12: "L2_POOL_2D", 13: "LOCAL_RESPONSE_NORMALIZATION", 14: "LOGISTIC",
    15: "LSH_PROJECTION", 16: "LSTM", 17: "MAX_POOL_2D", 18: "MUL", 19: "RELU", 20: "RELU_N1_TO_1", 21: "RELU6",
    22: "RESHAPE", 23: "RESIZE_BILINEAR", 24: "RNN", 25: "SOFTMAX", 26: "SPACE_TO_DEPTH", 27: "SVDF", 28: "TANH",
    29: "CONCAT_EMBEDDINGS", 30: "SKIP_GRAM", 31: "CALL", 32: "CUSTOM", 33: "EMBEDDING_LOOKUP_SPARSE", 34: "PAD",
    35: "UNIDIRECTIONAL_SEQUENCE_RNN", 36: "GATHER", 37: "BATCH_TO_SPACE_ND", 38: "SPACE_TO_BATCH_ND",
    39: "TRANSPOSE", 40: "MEAN", 41: "SUB", 42: "DIV", 43: "SQUEEZE", 44: "UNIDIRECTIONAL_SEQUENCE_LSTM",
    45: "STRIDED_SLICE", 46: "BIDIRECTIONAL_SEQUENCE_RNN", 47: "EXP", 48: "TOPK_V2", 49: "SPLIT", 50: "LOG_SOFTMAX",
    51: "DELEGATE", 52: "BIDIRECTIONAL_SEQUENCE_LSTM", 53: "CAST", 54: "PRELU", 55: "MAXIMUM", 56: "ARG_MAX",
    57: "MINIMUM", 58: "LESS", 59: "NEG", 60: "PADV2", 61: "GREATER", 62: "GREATER_EQUAL", 63: "LESS_EQUAL",
    64: "SELECT", 65: "SLICE", 66: "SIN", 67: "TRANSPOSE_CONV", 68: "SPARSE_TO_DENSE", 69: "TILE", 70: "EXPAND_DIMS",
    71: "EQUAL", 72: "NOT_EQUAL", 73: "LOG", 74: "SUM", 75: "SQRT", 76: "RSQRT", 77: "SHAPE", 78: "POW",
    79: "ARG_MIN", 80: "FAKE_QUANT", 81: "REDUCE_PROD", 82: "REDUCE_MAX", 83: "PACK", 84: "LOGICAL_OR",
    85: "ONE_HOT", 86: "LOGICAL_AND", 87: "LOGICAL_NOT", 88: "UNPACK", 89: "REDUCE_MIN", 90: "FLOOR_DIV",
    91: "REDUCE_ANY", 92: "SQUARE", 93: "ZEROS_LIKE", 94: "FILL", 95: "FLOOR_MOD", 96: "RANGE",
    97: "RESIZE_NEAREST_NEIGHBOR", 98: "LEAKY_RELU", 99: "SQUARED_DIFFERENCE", 100: "MIRROR_PAD", 101: "ABS",
    102: "SPLIT_V", 103: "UNIQUE", 104: "CEIL", 105: "REVERSE_V2", 106: "ADD_N", 107: "GATHER_ND", 108: "COS",
    109: "WHERE", 110: "RANK", 111: "ELU", 112: "REVERSE_SEQUENCE", 113: "MATRIX_DIAG", 114: "QUANTIZE",
    115: "MATRIX_SET_DIAG", 116: "ROUND", 117: "HARD_SWISH", 118: "IF", 119: "WHILE", 120: "NON_MAX_SUPPRESSION_V4",
    121: "NON_MAX_SUPPRESSION_V5", 122: "SCATTER_ND", 123: "SELECT_V2", 124: "DENSIFY", 125: "SEGMENT_SUM",
    126: "BATCH_MATMUL", 127: "PLACEHOLDER_FOR_GREATER_OP_CODES", 128: "CUMSUM", 129: "CALL_ONCE",
    130: "BROADCAST_TO", 131: "RFFT2D", 132: "CONV_3D", 133: "IMAG", 134: "REAL", 135: "COMPLEX_ABS",
    136: "HASHTABLE", 137: "HASHTABLE_FIND", 138: "HASHTABLE_IMPORT", 139: "HASHTABLE_SIZE", 140: "REDUCE_ALL",
    141: "CONV_3D_TRANSPOSE", 142: "VAR_HANDLE", 143: "READ_VARIABLE", 144: "ASSIGN_VARIABLE", 145: "BROADCAST_ARGS",
    146: "RANDOM_STANDARD_NORMAL", 147: "BUCKETIZE", 148: "RANDOM_UNIFORM", 149: "MULTINOMIAL", 150: "GELU",
    151: "DYNAMIC_UPDATE_SLICE", 152: "RELU_0_TO_1", 153: "UNSORTED_SEGMENT_PROD", 154: "UNSORTED_SEGMENT_MAX",
    155: "UNSORTED_SEGMENT_SUM", 156: "ATAN2", 157: "UNSORTED_SEGMENT_MIN", 158: "SIGN", 159: "BITCAST",
    160: "BITWISE_XOR", 161: "RIGHT_SHIFT", 162: "STABLEHLO_LOGISTIC", 163: "STABLEHLO_ADD", 164: "STABLEHLO_DIVIDE",
    165: "STABLEHLO_MULTIPLY", 166: "STABLEHLO_MAXIMUM", 167: "STABLEHLO_RESHAPE", 168: "STABLEHLO_CLAMP",
    169: "STABLEHLO_CONCATENATE", 170: "STABLEHLO_BROADCAST_IN_DIM", 171: "STABLEHLO_CONVOLUTION",
    172: "STABLEHLO_SLICE", 173: "STABLEHLO_CUSTOM_CALL", 174: "STABLEHLO_REDUCE", 175: "STABLEHLO_ABS",
    176: "STABLEHLO_AND", 177: "STABLEHLO_COSINE", 178: "STABLEHLO_EXPONENTIAL", 179: "STABLEHLO_FLOOR",
    180: "STABLEHLO_LOG", 181: "STABLEHLO_MINIMUM", 182: "STABLEHLO_NEGATE", 183: "STABLEHLO_OR",
    184: "STABLEHLO_POWER", 185: "STABLEHLO_REMAINDER", 186: "STABLEHLO_RSQRT", 187: "STABLEHLO_SELECT",
    188: "STABLEHLO_SUBTRACT", 189: "STABLEHLO_TANH", 190: "STABLEHLO_SCATTER", 191: "STABLEHLO_COMPARE",
    192: "STABLEHLO_CONVERT", 193: "STABLEHLO_DYNAMIC_SLICE", 194: "STABLEHLO_DYNAMIC_UPDATE_SLICE",
    195: "STABLEHLO_PAD", 196: "STABLEHLO_IOTA", 197: "STABLEHLO_DOT_GENERAL", 198: "STABLEHLO_REDUCE_WINDOW",
    199: "STABLEHLO_SORT", 200: "STABLEHLO_WHILE", 201: "STABLEHLO_GATHER", 202: "STABLEHLO_TRANSPOSE",
    203: "DILATE", 204: "STABLEHLO_RNG_BIT_GENERATOR", 205: "REDUCE_WINDOW", 206: "STABLEHLO_COMPOSITE",
    207: "STABLEHLO_SHIFT_LEFT", 208: "STABLEHLO_CBRT",

}
CUSTOM_CODE = 32  # BuiltinOperator CUSTOM: the op is named by its custom code string


def op_name(builtin_code: int, custom_name: str = "") -> str:
    """The schema name of a TFLite op: "CONV_2D", "CUSTOM(TFLite_Detection_PostProcess)"; codes newer than the
    table read "BUILTIN_<n>"."""
    if builtin_code == CUSTOM_CODE:
        return f"CUSTOM({custom_name})" if custom_name else "CUSTOM"
    return BUILTIN_NAMES.get(builtin_code, f"BUILTIN_{builtin_code}")


PADDING = {0: "UNKNOWN", 1: "SAME", 2: "VALID"}
ACTIVATION = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT", 6: "SIGMOID"}


@dataclass(frozen=True)
class Quant:
    """Affine quantization: real = scale * (q - zero_point)."""

    scales: np.ndarray  # float32, one per tensor or one per channel along `axis`
    zero_points: np.ndarray  # int32, same length as scales (or 1)
    axis: int = 0

    @cached_property  # asked for every operand by every support check and lowering; the arrays never change
    def per_tensor(self) -> bool:
        s = self.scales
        z = self.zero_points
        if len(s) == 1 and len(z) == 1:  # most tensors: no numpy reduction
            return True
        return bool((s == s[0]).all() and (z == z[0]).all())

    @property
    def scale(self) -> np.float32:
        return np.float32(self.scales[0])

    @property
    def zero_point(self) -> int:
        return int(self.zero_points[0])


@dataclass
class Tensor:
    index: int
    dtype: str  # numpy dtype name ("uint8", "int8", "int32", "float32", ...)
    shape: tuple[int, ...]
    quant: Quant | None = None
    data: np.ndarray | None = None  # constant tensors only, already shaped
    name: str = ""
    is_variable: bool = False

    @property
    def is_constant(self) -> bool:
        return self.data is not None


@dataclass
class Operation:
    index: int  # node index in the execution plan
    kind: str  # op_name(): builtin name, e.g. "CONV_2D"; "CUSTOM(<name>)" for a custom op
    inputs: list[int]
    outputs: list[int]
    options: dict[str, object] = field(default_factory=dict)
    builtin_code: int = -1
    version: int = 1
    custom_name: str = ""  # the custom code of a CUSTOM op


# The model metadata entry in which Vela records where each tensor lives in its arena (read by teflon.ethosu).
OFFLINE_ALLOCATION = "OfflineMemoryAllocation"


@dataclass
class Graph:
    tensors: dict[int, Tensor]
    operations: list[Operation]
    # model metadata entries the compiler reads, by name (OFFLINE_ALLOCATION), as the model stores them
    metadata: dict[str, bytes] = field(default_factory=dict)
    # What the compiler derived from this graph (see memo()); a graph is not changed once the compiler saw it.
    derived: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)

    def producer(self, tensor: int) -> Operation | None:
        return self._links()[0].get(tensor)

    def consumers(self, tensor: int) -> list[Operation]:
        return list(self._links()[1].get(tensor, ()))

    def _links(self) -> tuple[dict[int, Operation], dict[int, list[Operation]]]:
        """(the first operation writing each tensor, the operations reading it in order), indexed once (memo):
        the compiler asks for the neighbours of every operation, a scan each would be quadratic in the graph."""
        def index() -> tuple[dict[int, Operation], dict[int, list[Operation]]]:
            writers: dict[int, Operation] = {}
            readers: dict[int, list[Operation]] = {}
            for op in self.operations:
                for t in op.outputs:
                    writers.setdefault(t, op)
                for t in dict.fromkeys(op.inputs):
                    readers.setdefault(t, []).append(op)
            return writers, readers

        return memo(self, (__name__, "links"), index)


def memo(graph: Graph | None, key: Hashable, compute: Callable[[], T]) -> T:
    """compute() once per graph and key (every time without a graph). The delegate's support decision and the
    compile of each partition of one Prepare see the same Graph: what both derive from an operation (its
    checked register streams, coefficient tables) is computed once. Keys start with the owning module's name
    and hold everything else the value depends on; a value is shared, so it is never modified."""
    if graph is None:
        return compute()
    if key not in graph.derived:
        graph.derived[key] = compute()
    return graph.derived[key]


def decode_options(kind: str, raw: list[int]) -> dict[str, object]:
    """Turn the delegate's int32 option slots (see delegate/teflon_graph.h) into named options."""
    if kind == "CONV_2D":
        names = ["padding", "stride_w", "stride_h", "activation", "dilation_w", "dilation_h"]
    elif kind == "DEPTHWISE_CONV_2D":
        names = ["padding", "stride_w", "stride_h", "depth_multiplier", "activation", "dilation_w", "dilation_h"]
    elif kind in ("ADD", "SUB", "MUL"):
        names = ["activation"]
    elif kind == "FULLY_CONNECTED":
        names = ["activation", "weights_format", "keep_num_dims"]
    elif kind in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
        names = ["padding", "stride_w", "stride_h", "filter_w", "filter_h", "activation"]
    elif kind == "CONCATENATION":
        names = ["axis", "activation"]
    elif kind == "STRIDED_SLICE":
        names = ["begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"]
    elif kind == "RESIZE_NEAREST_NEIGHBOR":
        names = ["align_corners", "half_pixel_centers"]
    elif kind == "LEAKY_RELU":
        return {"alpha": float(np.array([raw[0]], np.int32).view(np.float32)[0])}
    else:
        return {}
    opts: dict[str, object] = dict(zip(names, raw))
    if "padding" in opts:
        opts["padding"] = PADDING.get(int(opts["padding"]), "UNKNOWN")  # type: ignore[arg-type]
    if "activation" in opts:
        opts["activation"] = ACTIVATION.get(int(opts["activation"]), "UNKNOWN")  # type: ignore[arg-type]
    return opts
