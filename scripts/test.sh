#!/usr/bin/env bash
# Fresh machine -> lint + the default test suite, in parallel.
#
#   bash scripts/test.sh                 # default suite (everything not marked slow)
#   bash scripts/test.sh -m slow         # the long sweeps
#   bash scripts/test.sh -k conv2d -n 0  # any pytest arguments pass through
#
# Environment: TEFLON_REFERENCE_CACHE (CPU reference cache, default ~/.cache/teflon/reference),
# TEFLON_SHARED (models and images, default ../shared), TEFLON_REQUIRE_DELEGATE (default 1: a delegate
# that failed to build fails the run instead of skipping the delegate tests).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/setup.sh
PY=.venv/bin/python

echo "== ruff"
lint=0
"$PY" -m ruff check python tests || lint=$?

# Default selection lives here, not in pyproject, so that `-m slow` on the command line replaces it.
marker=(-m "not slow")
for arg in "$@"; do
    case "$arg" in
        -m | -m?*) marker=() ;;
    esac
done

export TEFLON_REQUIRE_DELEGATE="${TEFLON_REQUIRE_DELEGATE:-1}"
results="${TEFLON_RESULTS_DIR:-build/test-results}"
mkdir -p "$results"

# The default run has two stages, each test in one of them (tests/conftest.py, ASAN_FILES): the plain stage here
# against the release libteflon.so, then the simulator/delegate/C-facing files against an AddressSanitizer + UBSan
# build (scripts/test-asan.sh). Any pytest argument, or TEFLON_SKIP_ASAN=1, runs everything here instead.
run_asan=0
stage=()
if [ "$#" -eq 0 ] && [ "${TEFLON_SKIP_ASAN:-0}" != "1" ]; then
    run_asan=1
    stage=(--stage=plain)
fi

echo "== pytest"
# Exit code 5 ("no tests collected") cannot happen with the default selection (tests/test_modelgen.py always
# collects); with caller filters it is reported as the failure it is.
tests=0
# --dist loadgroup: tests marked xdist_group("name") run on one worker (they share an expensive module fixture);
# the others are spread as with the default --dist load.
"$PY" -m pytest -n auto --dist loadgroup "${marker[@]}" "${stage[@]}" -rfE --durations=15 \
    --junitxml="$results/junit.xml" "$@" || tests=$?

asan=0
if [ "$run_asan" -eq 1 ]; then
    echo "== ASan/UBSan"
    bash scripts/test-asan.sh --durations=10 --junitxml="$results/junit-asan.xml" || asan=$?
fi

if [ "$lint" -ne 0 ]; then
    echo "test.sh: ruff found problems (see above)" >&2
fi
# pytest's own code when it failed, else 1 for lint problems
if [ "$tests" -ne 0 ]; then exit "$tests"; fi
if [ "$asan" -ne 0 ]; then echo "test.sh: the ASan/UBSan run failed (see above)" >&2; exit "$asan"; fi
exit $((lint != 0))
