/* The graph the delegate hands to the Python compiler during Prepare/Init.
 *
 * Plain C structs with fixed-width fields and no TFLite types, so the Python
 * side (cffi cdef of this same header) never depends on the TFLite ABI layout:
 * delegate/graph_export.c is the only place that reads TfLiteContext.
 *
 * This header is parsed by cffi's cdef: keep it to plain typedefs, no macros
 * with expressions, no includes besides <stdint.h>.
 */
#ifndef TEFLON_GRAPH_H
#define TEFLON_GRAPH_H

#include <stdint.h>

/* Decoded builtin options, one int32 slot each (see docs/architecture.md):
 *   CONV_2D:            padding, stride_w, stride_h, activation, dilation_w, dilation_h
 *   DEPTHWISE_CONV_2D:  padding, stride_w, stride_h, depth_multiplier, activation, dilation_w, dilation_h
 *   ADD, SUB, MUL:      activation
 *   FULLY_CONNECTED:    activation, weights_format (0 default), keep_num_dims
 *   AVERAGE/MAX_POOL_2D: padding, stride_w, stride_h, filter_w, filter_h, activation
 *   LEAKY_RELU:         alpha (the float32's bit pattern)
 *   SOFTMAX:            beta (the float32's bit pattern)
 *   CONCATENATION:      axis, activation
 *   STRIDED_SLICE:      begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask
 *   RESIZE_NEAREST_NEIGHBOR: align_corners, half_pixel_centers
 * padding: 0 unknown, 1 SAME, 2 VALID (TfLitePadding); activation: TfLiteFusedActivation
 * (0 none, 1 relu, 2 relu_n1_to_1, 3 relu6, 4 tanh, 5 sign_bit, 6 sigmoid). */
typedef struct teflon_tensor {
    int32_t index;              /* TFLite tensor index */
    int32_t type;               /* TfLiteType: 1 f32, 2 i32, 3 u8, 4 i64, 7 i16, 9 i8 */
    int32_t ndim;
    int32_t dims[6];
    int32_t is_constant;        /* read-only data known at prepare time */
    int32_t is_variable;
    const void *data;           /* constant data or NULL */
    uint64_t bytes;
    int32_t nscales;            /* 0: not affine-quantized */
    int32_t nzero_points;
    const float *scales;
    const int32_t *zero_points;
    int32_t quantized_dimension;
    int32_t reserved;
    const char *name;           /* may be NULL */
} teflon_tensor;

typedef struct teflon_node {
    int32_t index;              /* node index in the execution plan */
    int32_t builtin_code;       /* TFLite BuiltinOperator */
    int32_t version;
    int32_t ninputs;
    int32_t noutputs;
    int32_t has_options;        /* 1 when options[] was decoded for this op */
    const int32_t *inputs;      /* -1 = optional input absent */
    const int32_t *outputs;
    int32_t options[8];
    const char *custom_name;    /* the custom code of a CUSTOM op (builtin_code 32); NULL otherwise */
} teflon_node;

typedef struct teflon_graph {
    int32_t ntensors;
    int32_t nnodes;
    const teflon_tensor *tensors;   /* tensors[i].index == i */
    const teflon_node *nodes;       /* in execution-plan order */
    const void *offline_alloc;      /* the model's "OfflineMemoryAllocation" metadata (Vela's arena offset of each
                                     * tensor) as stored, or NULL */
    uint64_t offline_alloc_bytes;
} teflon_graph;

#endif
