"""Emit the cffi-embedding C source that lets libteflon.so call the Python compiler.

Run by meson at build time (delegate/meson.build):  python _build_embed.py OUTPUT.c DELEGATE_DIR

The generated source defines the `extern "Python"` functions of delegate/pybridge.h. The first call
into any of them starts Python (in a C/C++ host) or attaches to the running interpreter (in a
Python host), runs INIT_CODE, which imports teflon.bridge and attaches its implementations.
"""

from __future__ import annotations

import sys
from pathlib import Path

import cffi

MODULE = "teflon._embed"  # dotted: the embedded module is registered as a submodule of the package

# Same prototypes as delegate/pybridge.h (the generated C includes that header, so a mismatch fails to compile).
PY_API = """
int teflon_py_support(const teflon_graph *g, const char *device, int32_t debug, int32_t *supported, char **table);
int teflon_py_compile(const teflon_graph *g, int32_t new_graph, const char *device, int32_t debug, const int32_t *nodes, int32_t nnodes,
                      const int32_t *inputs, int32_t ninputs, const int32_t *outputs, int32_t noutputs,
                      uint8_t **blob, uint64_t *blob_len, char *err, int32_t errlen);
"""

# Plain C functions the Python side may call through `lib`.
C_API = """
void *malloc(size_t size);
void free(void *p);
const char *teflon_library_path(void);
"""

# Runs once per process, on the first call into Python. cffi has registered the module in
# sys.modules before this runs. In a C host whose Python cannot see the installed package (venv not
# on PATH/PYTHONPATH), the package directory is found from where libteflon.so itself lives (links resolved).
INIT_CODE = """
import sys


def _teflon_attach():
    embed = sys.modules["teflon._embed"]
    try:
        import teflon.bridge as bridge
    except ImportError:
        import os

        # realpath: the Debian package's /usr/lib/teflon/libteflon.so is a link into the package directory
        lib = embed.ffi.string(embed.lib.teflon_library_path()).decode(errors="replace")
        pkgdir = os.path.dirname(os.path.realpath(lib))
        if os.path.basename(pkgdir) != "teflon":
            raise
        sys.path.append(os.path.dirname(pkgdir))
        import teflon.bridge as bridge
    bridge.install(embed.ffi, embed.lib)


_teflon_attach()
del _teflon_attach
"""


def graph_cdef(header: Path) -> str:
    """teflon_graph.h without its preprocessor lines (cffi's cdef parses declarations only)."""
    return "\n".join(line for line in header.read_text().splitlines() if not line.lstrip().startswith("#"))


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(f"usage: {argv[0]} OUTPUT.c DELEGATE_DIR", file=sys.stderr)
        return 2
    out, delegate_dir = Path(argv[1]), Path(argv[2])
    ffi = cffi.FFI()
    ffi.cdef(graph_cdef(delegate_dir / "teflon_graph.h"))
    ffi.cdef(C_API)
    ffi.embedding_api(PY_API)
    ffi.set_source(MODULE, '#include <stdlib.h>\n#include "teflon_graph.h"\n#include "pybridge.h"\n')
    ffi.embedding_init_code(INIT_CODE)
    ffi.emit_c_code(str(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
