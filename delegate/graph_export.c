/* TfLiteContext -> teflon_graph (see graph_export.h).
 *
 * Besides copying, this is where the declared ABI meets a live runtime, so it double-checks what it
 * can: constant tensors' byte counts against their shapes (pins type/dims/bytes/allocation_type of
 * TfLiteTensor), per-tensor quantization against the legacy params copy (pins the TfLiteFloatArray
 * layout), and per-channel arrays against the quantized dimension. Anything that does not add up is
 * refused rather than guessed at.
 */
#include "graph_export.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TENSORS (1 << 24)
#define MAX_DIMS 6

size_t tfl_type_size(int type)
{
    switch (type) {
    case TFL_FLOAT32: case TFL_INT32: return 4;
    case TFL_UINT8: case TFL_INT8: case TFL_BOOL: return 1;
    case TFL_INT64: case TFL_FLOAT64: case TFL_COMPLEX64: return 8;
    case TFL_INT16: case TFL_FLOAT16: return 2;
    default: return 0;
    }
}

static int tensor_index_ok(const tfl_context *context, int t)
{
    return t == -1 || (t >= 0 && (size_t)t < context->tensors_size);
}

/* Fills the quantization fields of `out`. Returns 0 when usable (or absent), -1 when the arrays do
 * not look like {size, data[]} arrays describing this tensor; `out` is then left unquantized. */
static int export_quantization(const tfl_tensor *t, int index, teflon_tensor *out)
{
    out->nscales = 0;
    out->nzero_points = 0;
    out->scales = NULL;
    out->zero_points = NULL;
    out->quantized_dimension = 0;
    if (t->quantization.type != TFL_AFFINE_QUANTIZATION || t->quantization.params == NULL)
        return 0;
    const tfl_affine_quantization *q = t->quantization.params;
    const char *why = NULL;
    int n = q->scale ? q->scale->size : 0;
    int nz = q->zero_point ? q->zero_point->size : 0;
    int qdim = q->quantized_dimension;
    int ndim = t->dims ? t->dims->size : 0;

    if (q->scale == NULL || n < 1)
        why = "no scale array";
    else if (n > 1 && (qdim < 0 || qdim >= ndim || t->dims->data[qdim] != n))
        why = "scale count does not match the quantized dimension";
    else if (nz != 0 && nz != 1 && nz != n)
        why = "zero-point count matches neither 1 nor the scale count";
    if (!why) {
        for (int i = 0; i < n && !why; i++)
            if (!isfinite(q->scale->data[i]) || q->scale->data[i] < 0.0f)
                why = "scale is negative or not finite";
    }
    /* Per-tensor quantization is mirrored in the legacy params: same values or the layout is off. */
    if (!why && n == 1 && nz == 1 &&
        (t->params.scale != q->scale->data[0] || t->params.zero_point != q->zero_point->data[0]))
        why = "scale/zero point disagree with the tensor's per-tensor params";
    if (why) {
        fprintf(stderr, "teflon: tensor %d (%s): quantization parameters look malformed (%s); "
                "treating it as unquantized, its operations stay on the CPU\n",
                index, t->name ? t->name : "unnamed", why);
        return -1;
    }
    out->nscales = n;
    out->scales = q->scale->data;
    out->nzero_points = nz;
    out->zero_points = nz ? q->zero_point->data : NULL;
    out->quantized_dimension = n > 1 ? qdim : 0;
    return 0;
}

static int export_tensor(const tfl_context *context, int index, teflon_tensor *out, char *err, size_t errlen)
{
    const tfl_tensor *t = &context->tensors[index];
    memset(out, 0, sizeof(*out));
    out->index = index;
    out->type = t->type;
    out->name = t->name;
    out->is_variable = t->is_variable;
    out->bytes = t->bytes;

    if (t->dims) {
        if (t->dims->size < 0 || t->dims->size > 64) {
            snprintf(err, errlen, "tensor %d has %d dimensions: the runtime's TfLiteTensor layout is not the one "
                     "this delegate was built for", index, t->dims->size);
            return -1;
        }
        if (t->dims->size > MAX_DIMS) {
            out->ndim = -1;         /* rank not representable: Python sees shape (-1,) and claims nothing */
        } else {
            out->ndim = t->dims->size;
            memcpy(out->dims, t->dims->data, sizeof(int32_t) * (size_t)out->ndim);
        }
    }

    if (t->allocation_type == TFL_MMAP_RO && t->data.raw_const != NULL) {
        size_t esize = tfl_type_size(t->type);
        if (esize && out->ndim >= 0 && t->dims) {
            size_t count = 1;
            for (int d = 0; d < out->ndim; d++)
                count *= (size_t)(out->dims[d] < 0 ? 0 : out->dims[d]);
            if (count * esize != t->bytes) {
                snprintf(err, errlen, "constant tensor %d (%s) holds %zu bytes for %zu elements of %zu bytes: the "
                         "runtime's TfLiteTensor layout is not the one this delegate was built for",
                         index, t->name ? t->name : "unnamed", t->bytes, count, esize);
                return -1;
            }
        }
        out->is_constant = 1;
        out->data = t->data.raw_const;
    }
    export_quantization(t, index, out);
    return 0;
}

static void decode_options(int code, const void *data, teflon_node *out)
{
    int32_t *o = out->options;
    if (data == NULL)
        return;
    switch (code) {
    case TFL_BUILTIN_CONV_2D: {
        const tfl_conv_params *p = data;
        o[0] = p->padding; o[1] = p->stride_width; o[2] = p->stride_height; o[3] = p->activation;
        o[4] = p->dilation_width_factor; o[5] = p->dilation_height_factor;
        break;
    }
    case TFL_BUILTIN_DEPTHWISE_CONV_2D: {
        const tfl_depthwise_conv_params *p = data;
        o[0] = p->padding; o[1] = p->stride_width; o[2] = p->stride_height; o[3] = p->depth_multiplier;
        o[4] = p->activation; o[5] = p->dilation_width_factor; o[6] = p->dilation_height_factor;
        break;
    }
    case TFL_BUILTIN_ADD: case TFL_BUILTIN_SUB: case TFL_BUILTIN_MUL: {
        const tfl_activation_params *p = data;
        o[0] = p->activation;
        break;
    }
    case TFL_BUILTIN_FULLY_CONNECTED: {
        const tfl_fully_connected_params *p = data;
        o[0] = p->activation; o[1] = p->weights_format; o[2] = p->keep_num_dims;
        break;
    }
    case TFL_BUILTIN_AVERAGE_POOL_2D: case TFL_BUILTIN_MAX_POOL_2D: {
        const tfl_pool_params *p = data;
        o[0] = p->padding; o[1] = p->stride_width; o[2] = p->stride_height; o[3] = p->filter_width;
        o[4] = p->filter_height; o[5] = p->activation;
        break;
    }
    case TFL_BUILTIN_LEAKY_RELU: {
        const tfl_leaky_relu_params *p = data;
        memcpy(&o[0], &p->alpha, sizeof(float)); /* the float's bits: Python reinterprets them */
        break;
    }
    case TFL_BUILTIN_SOFTMAX: {
        const tfl_softmax_params *p = data;
        memcpy(&o[0], &p->beta, sizeof(float)); /* the float's bits: Python reinterprets them */
        break;
    }
    case TFL_BUILTIN_CONCATENATION: {
        const tfl_concatenation_params *p = data;
        o[0] = p->axis; o[1] = p->activation;
        break;
    }
    case TFL_BUILTIN_STRIDED_SLICE: {
        const tfl_strided_slice_params *p = data;
        o[0] = p->begin_mask; o[1] = p->end_mask; o[2] = p->ellipsis_mask; o[3] = p->new_axis_mask;
        o[4] = p->shrink_axis_mask;
        break;
    }
    case TFL_BUILTIN_RESIZE_NEAREST_NEIGHBOR: {
        const tfl_resize_nearest_neighbor_params *p = data;
        o[0] = p->align_corners; o[1] = p->half_pixel_centers;
        break;
    }
    default:
        return;
    }
    out->has_options = 1;
}

static int export_node(tfl_context *context, int node_index, teflon_node *out, char *err, size_t errlen)
{
    tfl_node *node = NULL;
    tfl_registration *reg = NULL;
    memset(out, 0, sizeof(*out));
    if (context->GetNodeAndRegistration(context, node_index, &node, &reg) != TFL_OK || !node || !reg ||
        !node->inputs || !node->outputs) {
        snprintf(err, errlen, "could not read node %d from the interpreter", node_index);
        return -1;
    }
    for (int i = 0; i < node->inputs->size; i++)
        if (!tensor_index_ok(context, node->inputs->data[i]))
            goto bad_index;
    for (int i = 0; i < node->outputs->size; i++)
        if (!tensor_index_ok(context, node->outputs->data[i]))
            goto bad_index;
    out->index = node_index;
    out->builtin_code = reg->builtin_code;
    out->version = reg->version;
    out->custom_name = reg->builtin_code == TFL_BUILTIN_CUSTOM ? reg->custom_name : NULL;
    out->ninputs = node->inputs->size;
    out->noutputs = node->outputs->size;
    out->inputs = node->inputs->data;
    out->outputs = node->outputs->data;
    decode_options(reg->builtin_code, node->builtin_data, out);
    return 0;
bad_index:
    snprintf(err, errlen, "node %d refers to a tensor outside the interpreter's %zu tensors: the runtime's "
             "TfLiteNode layout is not the one this delegate was built for", node_index, context->tensors_size);
    return -1;
}

int teflon_graph_export(tfl_context *context, teflon_export *out, char *err, size_t errlen)
{
    tfl_int_array *plan = NULL;
    memset(out, 0, sizeof(*out));
    if (!context->GetExecutionPlan || !context->GetNodeAndRegistration || !context->tensors ||
        context->tensors_size == 0 || context->tensors_size > MAX_TENSORS) {
        snprintf(err, errlen, "the interpreter context does not look like the TFLite ABI this delegate was built for");
        return -1;
    }
    if (context->GetExecutionPlan(context, &plan) != TFL_OK || !plan || plan->size < 0) {
        snprintf(err, errlen, "could not read the execution plan");
        return -1;
    }
    size_t ntensors = context->tensors_size;
    out->tensors = calloc(ntensors, sizeof(*out->tensors));
    out->nodes = calloc(plan->size ? (size_t)plan->size : 1, sizeof(*out->nodes));
    if (!out->tensors || !out->nodes) {
        snprintf(err, errlen, "out of memory");
        goto fail;
    }
    for (size_t i = 0; i < ntensors; i++)
        if (export_tensor(context, (int)i, &out->tensors[i], err, errlen))
            goto fail;
    for (int i = 0; i < plan->size; i++)
        if (export_node(context, plan->data[i], &out->nodes[i], err, errlen))
            goto fail;
    out->graph.ntensors = (int32_t)ntensors;
    out->graph.nnodes = plan->size;
    out->graph.tensors = out->tensors;
    out->graph.nodes = out->nodes;
    /* Vela's models place their tensors in its arena by this metadata (teflon.ethosu.vela) */
    const char *alloc = NULL;
    size_t alloc_bytes = 0;
    if (context->GetModelMetadata &&
        context->GetModelMetadata(context, "OfflineMemoryAllocation", &alloc, &alloc_bytes) == TFL_OK && alloc) {
        out->graph.offline_alloc = alloc;
        out->graph.offline_alloc_bytes = alloc_bytes;
    }
    return 0;
fail:
    teflon_graph_export_free(out);
    return -1;
}

void teflon_graph_export_free(teflon_export *ex)
{
    free(ex->tensors);
    free(ex->nodes);
    memset(ex, 0, sizeof(*ex));
}

static int constant_tensor(const tfl_context *context, int t)
{
    const int type = context->tensors[t].allocation_type;
    return type == TFL_MMAP_RO || type == TFL_PERSISTENT_RO;
}

uint8_t *teflon_dynamic_tensors(const tfl_context *context, const teflon_graph *g)
{
    uint8_t *dynamic = calloc(context->tensors_size ? context->tensors_size : 1, 1);
    if (!dynamic)
        return NULL;
    for (size_t t = 0; t < context->tensors_size; t++)
        dynamic[t] = context->tensors[t].allocation_type == TFL_DYNAMIC;
    /* execution order: a node's inputs are marked before it is looked at */
    for (int i = 0; i < g->nnodes; i++) {
        const teflon_node *n = &g->nodes[i];
        int marked = n->builtin_code == TFL_BUILTIN_RESHAPE && n->ninputs > 1 && n->inputs[1] >= 0 &&
                     !constant_tensor(context, n->inputs[1]);
        for (int k = 0; k < n->ninputs && !marked; k++)
            marked = n->inputs[k] >= 0 && dynamic[n->inputs[k]];
        for (int k = 0; k < n->noutputs && marked; k++)
            if (n->outputs[k] >= 0)
                dynamic[n->outputs[k]] = 1;
    }
    return dynamic;
}

int teflon_node_has_dynamic_tensor(const uint8_t *dynamic, const teflon_node *node)
{
    for (int i = 0; i < node->ninputs + node->noutputs; i++) {
        int t = i < node->ninputs ? node->inputs[i] : node->outputs[i - node->ninputs];
        if (t >= 0 && dynamic[t])
            return 1;
    }
    return 0;
}
