"""Measure etnaviv ADD/SUB accuracy on the simulator against TFLite's CPU kernels over random scale pairs.

    .venv/bin/python scripts/etnaviv_add_accuracy.py [--seeds N] [--shape H W C]

Each seed draws new input/output scales and zero points (teflon.modelgen.AddCase); prints per device, op and
type the exact fraction (min / mean), the largest |diff| and the worst seed. Figures: docs/hardware/etnaviv-nn.md.
"""

from __future__ import annotations

import argparse

import numpy as np

from teflon.modelgen import AddCase, random_inputs
from teflon.reference import compare, run_cpu, run_delegate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--shape", type=int, nargs=3, default=(14, 14, 32))
    args = ap.parse_args()
    h, w, c = args.shape
    for device in ("a311d", "imx8mp"):
        for op in ("add", "sub"):
            for dtype in ("uint8", "int8"):
                exact, seeds, worst, refused = [], [], 0, 0
                for seed in range(1, args.seeds + 1):
                    m = AddCase(h, w, c, dtype=dtype, op=op, seed=seed).build()
                    x = random_inputs(m)
                    r = run_delegate(m, x, device=device, sim="1")
                    if not r.delegated:
                        refused += 1
                        continue
                    cmp = compare(run_cpu(m, x), r.outputs)
                    exact.append(cmp.exact_fraction)
                    seeds.append(seed)
                    worst = max(worst, cmp.max_abs_diff)
                if not exact:
                    print(f"{device} {op} {dtype}: refused ({refused} seeds)")
                    continue
                e = np.array(exact)
                print(f"{device} {op} {dtype}: {len(e)} seeds, exact min {100 * e.min():.2f} % mean "
                      f"{100 * e.mean():.3f} %, max |diff| {worst}, below 99.5 %: seeds "
                      f"{[s for s, f in zip(seeds, e) if f < 0.995]}, refused {refused}")


if __name__ == "__main__":
    main()
