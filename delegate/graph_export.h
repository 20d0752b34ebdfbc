/* TfLiteContext -> teflon_graph: the only place that reads the interpreter's tensors and nodes. */
#ifndef TEFLON_GRAPH_EXPORT_H
#define TEFLON_GRAPH_EXPORT_H

#include <stddef.h>

#include "teflon_graph.h"
#include "tflite_abi.h"

typedef struct teflon_export {
    teflon_graph graph;      /* points into the arrays below and into the interpreter's own data */
    teflon_tensor *tensors;
    teflon_node *nodes;
} teflon_export;

/* Build the graph of the context's execution plan. Pointers inside (constant data, node I/O lists,
 * names, scales) borrow the interpreter's memory and stay valid until the end of the delegate's
 * Prepare. Returns 0, or -1 with a message in err when the context does not look like the ABI we
 * declared (the caller then delegates nothing). */
int teflon_graph_export(tfl_context *context, teflon_export *out, char *err, size_t errlen);
void teflon_graph_export_free(teflon_export *ex);

/* 1 when a node reads or writes a tensor whose shape is only known while running. */
int teflon_node_has_dynamic_tensor(const tfl_context *context, const teflon_node *node);

/* The size in bytes of one element of a TfLiteType, 0 when not a fixed-size type. */
size_t tfl_type_size(int type);

#endif
