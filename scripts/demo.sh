#!/usr/bin/env bash
# Fresh machine -> classify grace_hopper.bmp with MobileNetV1 0.25/128 on the (simulated) RK3588 NPU.
# Extra arguments go to `python -m teflon classify` (e.g. --cpu, --runs 10, --sim 0 on a board).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
models="${TEFLON_SHARED:-../shared}/models"
exec .venv/bin/python -m teflon classify \
    --model "$models/mobilenet_v1_0.25_128_quant.tflite" \
    --image "$models/grace_hopper.bmp" \
    --labels "$models/imagenet_labels.txt" \
    "$@"
