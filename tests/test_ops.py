"""The convolution sweep of every drivable target (the registry's rows) against TFLite's builtin CPU kernels.

Per-tensor CONV_2D / DEPTHWISE_CONV_2D (sizes x channels x kernels 1/3/5 x strides 1/2 x SAME/VALID x uint8/int8
x activations, tests/opcases.py) must be delegated and match the CPU within 1 LSB with >= 99.5 % of the elements
exact (judged as a rate, opcheck.py); a device's known CPU fallbacks and measured requantization limits are listed
with their reasons in opcases.py. Family-specific sweeps: tests/rocket/test_ops.py, tests/etnaviv/test_ops.py.
Ids start with the device: `imx8mp-conv2d-in112x112x32-oc64-k3-s2-same-u8`.
"""

from __future__ import annotations

import pytest

from conftest import device_cases
from opcases import DEFAULT_CONV, SLOW_CONV
from opcheck import Recorder, check_delegated_conv
from teflon import targets
from teflon.modelgen import ConvCase

# ethosu: its own sweeps (tests/ethos_u) until the family's lowering joins the shared ones
DEVICES = [t.name for t in targets.drivable_generations() if t.family != "ethosu"]


@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, DEFAULT_CONV))
def test_conv(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, options, record_property)


@pytest.mark.slow
@pytest.mark.parametrize(("device", "case"), device_cases(DEVICES, SLOW_CONV))
def test_conv_slow(device: str, case: ConvCase, options: dict[str, str], record_property: Recorder) -> None:
    check_delegated_conv(case, options, record_property)
