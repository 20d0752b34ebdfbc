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
/* Per tensor of `context`, 1 when its size can change at invoke: a dynamic (allocation-type) tensor, the output of
 * a RESHAPE whose shape comes from a non-constant tensor (TFLite resizes it when it runs; before the shapes are
 * propagated it still has its stored shape), and every output of a node that reads such a tensor. NULL when out of
 * memory. The caller frees it. */
uint8_t *teflon_dynamic_tensors(const tfl_context *context, const teflon_graph *g);
/* Whether `node` reads or writes a tensor `dynamic` marks. */
int teflon_node_has_dynamic_tensor(const uint8_t *dynamic, const teflon_node *node);

/* The size in bytes of one element of a TfLiteType, 0 when not a fixed-size type. */
size_t tfl_type_size(int type);

#endif
