/* Our own declarations of the TFLite C ABI, as far as an external delegate touches it.
 *
 * No TFLite headers are available on these machines (no wheel or Debian package ships them), so the
 * structs below are written from the published LP64 layout that tflite-runtime 2.14 and
 * ai-edge-litert 2.3 use (see ../shared/docs/tflite-runtime.md). Names are ours; only the byte
 * layout has to match. The _Static_asserts at the bottom pin every offset we rely on; the parts
 * that can only be checked against a live runtime (TfLiteTensor.bytes, the TfLiteFloatArray
 * layout used for per-channel scales) are checked at Prepare time in graph_export.c.
 *
 * Only the fields the delegate reads or writes have precise types; the rest are opaque
 * function pointers of the right size.
 */
#ifndef TEFLON_TFLITE_ABI_H
#define TEFLON_TFLITE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { TFL_OK = 0, TFL_ERROR = 1 } tfl_status;

/* TfLiteType */
enum {
    TFL_NOTYPE = 0,
    TFL_FLOAT32 = 1,
    TFL_INT32 = 2,
    TFL_UINT8 = 3,
    TFL_INT64 = 4,
    TFL_STRING = 5,
    TFL_BOOL = 6,
    TFL_INT16 = 7,
    TFL_COMPLEX64 = 8,
    TFL_INT8 = 9,
    TFL_FLOAT16 = 10,
    TFL_FLOAT64 = 11,
};

/* TfLiteAllocationType */
enum {
    TFL_MEM_NONE = 0,
    TFL_MMAP_RO = 1,          /* constant data from the model file */
    TFL_ARENA_RW = 2,
    TFL_ARENA_RW_PERSISTENT = 3,
    TFL_DYNAMIC = 4,
    TFL_PERSISTENT_RO = 5,
    TFL_CUSTOM = 6,
};

/* TfLiteQuantizationType */
enum { TFL_NO_QUANTIZATION = 0, TFL_AFFINE_QUANTIZATION = 1 };

/* TfLiteDelegateFlags */
enum {
    TFL_DELEGATE_FLAGS_NONE = 0,
    TFL_DELEGATE_ALLOW_DYNAMIC_TENSORS = 1,
    TFL_DELEGATE_REQUIRE_PROPAGATED_SHAPES = 2,
};

/* BuiltinOperator codes the C side needs (schema values). */
enum {
    TFL_BUILTIN_ADD = 0,
    TFL_BUILTIN_AVERAGE_POOL_2D = 1,
    TFL_BUILTIN_CONCATENATION = 2,
    TFL_BUILTIN_CONV_2D = 3,
    TFL_BUILTIN_DEPTHWISE_CONV_2D = 4,
    TFL_BUILTIN_FULLY_CONNECTED = 9,
    TFL_BUILTIN_MAX_POOL_2D = 17,
    TFL_BUILTIN_MUL = 18,
    TFL_BUILTIN_RESHAPE = 22,
    TFL_BUILTIN_SUB = 41,
    TFL_BUILTIN_CUSTOM = 32,
    TFL_BUILTIN_STRIDED_SLICE = 45,
    TFL_BUILTIN_RESIZE_NEAREST_NEIGHBOR = 97,
    TFL_BUILTIN_SOFTMAX = 25,
    TFL_BUILTIN_LEAKY_RELU = 98,
    TFL_BUILTIN_DELEGATE = 51,
};

typedef struct tfl_int_array {
    int size;
    int data[];
} tfl_int_array;

/* The runtimes we target use {size, data[]}; upstream's newest headers changed this, which is why
 * per-channel scales are sanity-checked before use (graph_export.c). */
typedef struct tfl_float_array {
    int size;
    float data[];
} tfl_float_array;

typedef struct tfl_quant_params {    /* TfLiteQuantizationParams (per-tensor, legacy) */
    float scale;
    int32_t zero_point;
} tfl_quant_params;

typedef struct tfl_quantization {    /* TfLiteQuantization */
    int type;
    void *params;                    /* tfl_affine_quantization * when type is affine */
} tfl_quantization;

typedef struct tfl_affine_quantization {
    tfl_float_array *scale;
    tfl_int_array *zero_point;
    int32_t quantized_dimension;
} tfl_affine_quantization;

typedef struct tfl_tensor {          /* TfLiteTensor, 112 bytes */
    int type;
    union {
        void *raw;
        const void *raw_const;
    } data;
    tfl_int_array *dims;
    tfl_quant_params params;
    int allocation_type;
    size_t bytes;
    const void *allocation;
    const char *name;
    void *delegate;
    int buffer_handle;
    bool data_is_stale;
    bool is_variable;
    tfl_quantization quantization;
    void *sparsity;
    const tfl_int_array *dims_signature;
} tfl_tensor;

typedef struct tfl_node {            /* TfLiteNode, 80 bytes */
    tfl_int_array *inputs;
    tfl_int_array *outputs;
    tfl_int_array *intermediates;
    tfl_int_array *temporaries;
    void *user_data;
    void *builtin_data;
    const void *custom_initial_data;
    int custom_initial_data_size;
    void *delegate;
    bool might_have_side_effect;
} tfl_node;

struct tfl_context;

typedef struct tfl_registration {    /* TfLiteRegistration, newest layout, 88 bytes; passed by value */
    void *(*init)(struct tfl_context *context, const char *buffer, size_t length);
    void (*free)(struct tfl_context *context, void *buffer);
    tfl_status (*prepare)(struct tfl_context *context, tfl_node *node);
    tfl_status (*invoke)(struct tfl_context *context, tfl_node *node);
    const char *(*profiling_string)(const struct tfl_context *context, const tfl_node *node);
    int32_t builtin_code;
    const char *custom_name;
    int version;
    void *registration_external;
    void *async_kernel;
    uint64_t inplace_operator;
} tfl_registration;

struct tfl_delegate;

typedef struct tfl_delegate_params { /* TfLiteDelegateParams: handed to kernel init as `buffer` */
    struct tfl_delegate *delegate;
    tfl_int_array *nodes_to_replace;
    tfl_int_array *input_tensors;
    tfl_int_array *output_tensors;
} tfl_delegate_params;

typedef void (*tfl_fn)(void);        /* placeholder for callbacks we never call */

typedef struct tfl_context {         /* TfLiteContext, 200 bytes */
    size_t tensors_size;
    tfl_status (*GetExecutionPlan)(struct tfl_context *context, tfl_int_array **execution_plan);
    tfl_tensor *tensors;
    void *impl_;
    tfl_fn ResizeTensor;
    void (*ReportError)(struct tfl_context *context, const char *format, ...);
    tfl_fn AddTensors;
    tfl_status (*GetNodeAndRegistration)(struct tfl_context *context, int node_index, tfl_node **node,
                                         tfl_registration **registration);
    tfl_status (*ReplaceNodeSubsetsWithDelegateKernels)(struct tfl_context *context,
                                                        tfl_registration registration,
                                                        const tfl_int_array *nodes_to_replace,
                                                        struct tfl_delegate *delegate);
    int recommended_num_threads;
    tfl_fn GetExternalContext;
    tfl_fn SetExternalContext;
    bool allow_fp32_relax_to_fp16;
    void *profiler;
    tfl_fn AllocatePersistentBuffer;
    tfl_fn AllocateBufferForEval;
    tfl_fn RequestScratchBufferInArena;
    tfl_fn GetScratchBuffer;
    tfl_fn ResizeTensorExplicit;
    tfl_status (*PreviewDelegatePartitioning)(struct tfl_context *context, const tfl_int_array *nodes_to_replace,
                                              tfl_delegate_params **partition_params_array, int *num_partitions);
    tfl_fn GetTensor;                /* NULL in both runtimes: read tensors[] */
    tfl_fn GetEvalTensor;
    /* the model's metadata entry `name` (NULL in runtimes without metadata) */
    tfl_status (*GetModelMetadata)(const struct tfl_context *context, const char *name, const char **ptr,
                                   size_t *bytes);
    tfl_fn AcquireSubgraphContext;
    tfl_fn ReleaseSubgraphContext;
} tfl_context;

typedef struct tfl_delegate {        /* TfLiteDelegate, 56 bytes */
    void *data_;
    tfl_status (*Prepare)(tfl_context *context, struct tfl_delegate *delegate);
    tfl_fn CopyFromBufferHandle;
    tfl_fn CopyToBufferHandle;
    tfl_fn FreeBufferHandle;
    int64_t flags;
    void *opaque_delegate_builder;
} tfl_delegate;

/* Builtin option structs (first fields only: newer runtimes append fields, never reorder). */
typedef struct tfl_conv_params {
    int padding;                     /* 0 unknown, 1 SAME, 2 VALID */
    int stride_width;
    int stride_height;
    int activation;
    int dilation_width_factor;
    int dilation_height_factor;
} tfl_conv_params;

typedef struct tfl_depthwise_conv_params {
    int padding;
    int stride_width;
    int stride_height;
    int depth_multiplier;
    int activation;
    int dilation_width_factor;
    int dilation_height_factor;
} tfl_depthwise_conv_params;

typedef struct tfl_activation_params { /* TfLiteAddParams / TfLiteSubParams / TfLiteMulParams start */
    int activation;
} tfl_activation_params;

typedef struct tfl_leaky_relu_params { /* TfLiteLeakyReluParams */
    float alpha;
} tfl_leaky_relu_params;

typedef struct tfl_softmax_params { /* TfLiteSoftmaxParams */
    float beta;
} tfl_softmax_params;

typedef struct tfl_fully_connected_params { /* TfLiteFullyConnectedParams (builtin_op_data.h), leading fields */
    int activation;
    int weights_format; /* 0 default, 1 shuffled4x16int8 */
    _Bool keep_num_dims;
    _Bool asymmetric_quantize_inputs;
} tfl_fully_connected_params;

typedef struct tfl_pool_params {
    int padding;
    int stride_width;
    int stride_height;
    int filter_width;
    int filter_height;
    int activation;
} tfl_pool_params;

typedef struct tfl_concatenation_params { /* TfLiteConcatenationParams */
    int axis;
    int activation;
} tfl_concatenation_params;

typedef struct tfl_strided_slice_params { /* TfLiteStridedSliceParams: its first five ints (2.14 appends a bool) */
    int begin_mask;
    int end_mask;
    int ellipsis_mask;
    int new_axis_mask;
    int shrink_axis_mask;
} tfl_strided_slice_params;

typedef struct tfl_resize_nearest_neighbor_params { /* TfLiteResizeNearestNeighborParams: two bools */
    _Bool align_corners;
    _Bool half_pixel_centers;
} tfl_resize_nearest_neighbor_params;

/* A fresh TfLiteIntArray; the runtimes export no helper for this, and free() what they are given. */
tfl_int_array *tfl_int_array_new(int size);

/* ---- layout pins (LP64: x86_64 and aarch64 both) ---- */
_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "tflite_abi.h declares the LP64 layout only");
_Static_assert(offsetof(tfl_float_array, data) == 4, "TfLiteFloatArray");
_Static_assert(offsetof(tfl_affine_quantization, quantized_dimension) == 16 &&
               sizeof(tfl_affine_quantization) == 24, "TfLiteAffineQuantization");
_Static_assert(sizeof(tfl_quantization) == 16, "TfLiteQuantization");
_Static_assert(offsetof(tfl_tensor, data) == 8 && offsetof(tfl_tensor, dims) == 16 &&
               offsetof(tfl_tensor, params) == 24 && offsetof(tfl_tensor, allocation_type) == 32 &&
               offsetof(tfl_tensor, bytes) == 40 && offsetof(tfl_tensor, allocation) == 48 &&
               offsetof(tfl_tensor, name) == 56 && offsetof(tfl_tensor, delegate) == 64 &&
               offsetof(tfl_tensor, buffer_handle) == 72 && offsetof(tfl_tensor, data_is_stale) == 76 &&
               offsetof(tfl_tensor, is_variable) == 77 && offsetof(tfl_tensor, quantization) == 80 &&
               offsetof(tfl_tensor, sparsity) == 96 && offsetof(tfl_tensor, dims_signature) == 104 &&
               sizeof(tfl_tensor) == 112, "TfLiteTensor");
_Static_assert(offsetof(tfl_node, user_data) == 32 && offsetof(tfl_node, builtin_data) == 40 &&
               offsetof(tfl_node, custom_initial_data_size) == 56 && offsetof(tfl_node, delegate) == 64 &&
               offsetof(tfl_node, might_have_side_effect) == 72 && sizeof(tfl_node) == 80, "TfLiteNode");
_Static_assert(offsetof(tfl_registration, profiling_string) == 32 && offsetof(tfl_registration, builtin_code) == 40 &&
               offsetof(tfl_registration, custom_name) == 48 && offsetof(tfl_registration, version) == 56 &&
               offsetof(tfl_registration, registration_external) == 64 &&
               offsetof(tfl_registration, async_kernel) == 72 && offsetof(tfl_registration, inplace_operator) == 80 &&
               sizeof(tfl_registration) == 88, "TfLiteRegistration");
_Static_assert(sizeof(tfl_delegate_params) == 32, "TfLiteDelegateParams");
_Static_assert(offsetof(tfl_context, GetExecutionPlan) == 8 && offsetof(tfl_context, tensors) == 16 &&
               offsetof(tfl_context, ReportError) == 40 && offsetof(tfl_context, GetNodeAndRegistration) == 56 &&
               offsetof(tfl_context, ReplaceNodeSubsetsWithDelegateKernels) == 64 &&
               offsetof(tfl_context, recommended_num_threads) == 72 &&
               offsetof(tfl_context, allow_fp32_relax_to_fp16) == 96 &&
               offsetof(tfl_context, PreviewDelegatePartitioning) == 152 && offsetof(tfl_context, GetTensor) == 160 &&
               offsetof(tfl_context, ReleaseSubgraphContext) == 192 && sizeof(tfl_context) == 200, "TfLiteContext");
_Static_assert(offsetof(tfl_delegate, Prepare) == 8 && offsetof(tfl_delegate, FreeBufferHandle) == 32 &&
               offsetof(tfl_delegate, flags) == 40 && offsetof(tfl_delegate, opaque_delegate_builder) == 48 &&
               sizeof(tfl_delegate) == 56, "TfLiteDelegate");
_Static_assert(sizeof(tfl_conv_params) == 24 && sizeof(tfl_depthwise_conv_params) == 28 &&
               sizeof(tfl_pool_params) == 24 && sizeof(tfl_concatenation_params) == 8, "builtin params");

#endif
