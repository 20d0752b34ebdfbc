"""Single-op sweeps on every simulated etnaviv NPU (the target registry's etnaviv rows) against TFLite's builtin CPU
kernels: the same case ids and tolerance rules as every sweep (the common convolution sweep is tests/test_ops.py): a
claimed op within 1 LSB of the CPU with >= 99.5 % of the elements exact (judged as a rate). Beyond convolutions
the etnaviv compiler claims FULLY_CONNECTED, ADD/SUB (two-input NN jobs), PAD, RELU and LOGISTIC (TP jobs); the
device's known CPU fallbacks (opcases.KNOWN_CPU) must come back unchanged. Ids start with the device:
`a311d-conv2d-in112x112x32-oc64-k3-s2-same-u8`.
"""

from __future__ import annotations

import pytest

from conftest import device_cases
from opcases import (
    ETNAVIV_DEFAULT_ADD,
    ETNAVIV_DEFAULT_ELEMENTWISE,
    ETNAVIV_DEFAULT_FC,
    ETNAVIV_NON_SQUARE,
)
from opcheck import Recorder, check_delegated_conv, check_delegated_op
from teflon import targets
from teflon.modelgen import AddCase, ConvCase, ElementwiseCase, FcCase

DEVICES = [t.name for t in targets.of_family("etnaviv")]


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_NON_SQUARE))
def test_non_square(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    """96x160 inputs with 3x3 and 5x3 kernels: right on the NPU, or on the CPU with the compiler's reason."""
    check_delegated_conv(case, options, record_property)


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_FC))
def test_fully_connected(device: str, case: FcCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("FULLY_CONNECTED",))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_ADD))
def test_add_sub(device: str, case: AddCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("ADD", "SUB"))


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, ETNAVIV_DEFAULT_ELEMENTWISE))
def test_elementwise(device: str, case: ElementwiseCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_op(case, options, record_property, ("RELU", "LOGISTIC", "PAD"))
