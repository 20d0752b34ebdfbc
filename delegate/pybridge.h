/* The Python compiler's entry points, as C sees them.
 *
 * These are cffi `extern "Python"` functions: their C bodies are generated at build time by
 * python/teflon/_build_embed.py (the same prototypes are declared there with embedding_api and
 * this header is included by the generated source, so the compiler checks both agree), and the
 * Python bodies live in python/teflon/bridge.py. The first call starts (or, inside a Python
 * process, attaches to) the interpreter.
 *
 * Call them only on the thread that runs delegate Prepare: that thread holds the GIL inside
 * Interpreter(...) in a Python host, so any other thread would deadlock. They are hidden from the
 * library's exported symbols by the linker version script.
 *
 * Return 0 on success. The Python side never lets an exception escape; on failure it prints the
 * error and returns non-zero. If the Python side could not even be set up, cffi returns 0 without
 * running anything, so callers must also check the outputs were written (supported[] starts at
 * -1, *blob starts NULL).
 */
#ifndef TEFLON_PYBRIDGE_H
#define TEFLON_PYBRIDGE_H

#include <stddef.h>
#include <stdint.h>

#include "teflon_graph.h"

/* supported[i] := 1 when g->nodes[i] is claimed, else 0. *table := the per-node table (node, op, delegated,
 * reason) as malloc'd text (free() it), which C prints with debug and keeps in the program cache. */
int teflon_py_support(const teflon_graph *g, const char *device, int32_t debug, int32_t *supported, char **table);

/* Compile the partition `nodes` (node indices) with its non-constant inputs and its outputs. new_graph: 1 when
 * Python has not converted this Prepare's graph yet (its support decision came from the program cache), so a
 * graph it converted in an earlier Prepare at the same address is never reused.
 * On success *blob is a malloc'd program blob (free() it) of *blob_len bytes. On failure err holds
 * a NUL-terminated message. */
int teflon_py_compile(const teflon_graph *g, int32_t new_graph, const char *device, int32_t debug, const int32_t *nodes, int32_t nnodes,
                      const int32_t *inputs, int32_t ninputs, const int32_t *outputs, int32_t noutputs,
                      uint8_t **blob, uint64_t *blob_len, char *err, int32_t errlen);

/* Plain C (pystart.c): 0 when Python is running or could be started; -1 with a message otherwise. Call
 * before the first teflon_py_* call: in a C host, cffi's own start-up would abort() the process on a
 * broken Python installation. */
int teflon_python_ready(char *err, size_t errlen);

/* Plain C, called by the embedding's Python init code: the path libteflon.so was loaded from, so a
 * C host whose Python cannot import teflon can still find the package next to the library. */
const char *teflon_library_path(void);

#endif
