"""teflon.native: a device closed while programs are loaded on it stays open until the last runner is unloaded.

Python's cyclic collector finalizes the objects of a cycle in any order: after a failed run, the traceback keeps
the frame holding both the Device and its Runner, and the Device's __del__ could free the C device before the
Runner's BOs were destroyed (a use-after-free seen as a segfault in the next interpreter)."""

from __future__ import annotations

import gc

from rocket.graphs import conv_graph
from teflon import compiler
from teflon.modelgen import ConvCase, random_inputs
from teflon.native import Device, NativeError, Runner

CASE = ConvCase("conv2d", 8, 8, 16, 16, 3, 1, "same", "relu", dtype="uint8")


def test_close_device_before_runner() -> None:
    g = conv_graph(CASE)
    x = random_inputs(CASE.build(), seed=1)[0]
    dev = Device("rk3588", sim=True)
    runner = Runner(dev, compiler.compile(g, [0], [0], [3], "rk3588"))
    dev.close()  # a runner is loaded: the device stays open
    assert runner.run({0: x})[3].shape == (1, 8, 8, 16)
    runner.close()  # the last runner unloaded: the device closes now
    try:
        _ = dev.handle
        raise AssertionError("the device should be closed")
    except NativeError:
        pass


def test_cycle_finalized_in_any_order() -> None:
    g = conv_graph(CASE)
    x = random_inputs(CASE.build(), seed=1)[0]

    def load_and_fail() -> None:
        dev = Device("rk3588", sim=True)
        runner = Runner(dev, compiler.compile(g, [0], [0], [3], "rk3588"))
        runner.run({0: x})
        try:
            raise RuntimeError("after a run")
        except RuntimeError as e:
            kept = e  # a cycle: this frame -> kept -> its traceback -> this frame; only the collector frees it
        assert kept is not None

    for _ in range(3):
        load_and_fail()
    gc.collect()  # finalizes each cycle's Device and Runner in the collector's order (ASan: no use-after-free)
    assert Device("rk3588", sim=True).is_sim
