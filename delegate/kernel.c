/* Delegated partitions and their TFLite kernel (see kernel.h).
 *
 * Compiling and loading happen in the delegate's Prepare, on the calling thread, so that a failure
 * simply leaves the partition's nodes on the CPU. By the time TFLite calls kernel Init there is no
 * way back to the CPU, so Init only adopts an already-loaded partition.
 */
#include "kernel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int teflon_partition_matches(const teflon_partition *p, const tfl_int_array *nodes)
{
    if (nodes->size != p->nnodes)
        return 0;
    for (int i = 0; i < nodes->size; i++)
        if (!bsearch(&nodes->data[i], p->nodes, (size_t)p->nnodes, sizeof(int32_t), cmp_i32))
            return 0;
    return 1;
}

/* Copies the tensors of `list` that the program exchanges with TFLite at run time: constants (weights,
 * biases) are already inside the program, and an empty tensor carries nothing. */
static int32_t *io_tensors(const tfl_context *context, const tfl_int_array *list, int skip_constants, int *count,
                           uint64_t **bytes)
{
    int32_t *out = malloc(sizeof(int32_t) * (size_t)(list->size + 1));
    *bytes = malloc(sizeof(uint64_t) * (size_t)(list->size + 1));
    *count = 0;
    if (!out || !*bytes) {
        free(out);
        free(*bytes);
        *bytes = NULL;
        return NULL;
    }
    for (int i = 0; i < list->size; i++) {
        int t = list->data[i];
        if (t < 0 || (size_t)t >= context->tensors_size)
            continue;
        if (skip_constants && context->tensors[t].allocation_type == TFL_MMAP_RO)
            continue;
        if (context->tensors[t].bytes == 0) /* nothing to exchange (Vela's empty scratch_fast) */
            continue;
        (*bytes)[*count] = context->tensors[t].bytes;
        out[(*count)++] = t;
    }
    return out;
}

/* Every tensor the kernel will exchange must be bound in the program with the same byte count; found
 * out here, a mismatch still leaves the nodes on the CPU. */
static int check_bindings(teflon_partition *p, char *err, size_t errlen)
{
    for (int i = 0; i < p->ninputs + p->noutputs; i++) {
        int in = i < p->ninputs;
        int32_t t = in ? p->inputs[i] : p->outputs[i - p->ninputs];
        uint64_t bytes = in ? p->input_bytes[i] : p->output_bytes[i - p->ninputs];
        int rc = teflon_runner_check_binding(p->runner, t, !in, bytes);
        if (rc) {
            snprintf(err, errlen, "the program has no %s binding of %llu bytes for tensor %d (error %d)",
                     in ? "input" : "output", (unsigned long long)bytes, t, rc);
            return -1;
        }
    }
    return 0;
}

/* Moves the inputs the program ignores from p->inputs to p->ignored. */
static int drop_ignored_inputs(teflon_partition *p)
{
    p->ignored = malloc(sizeof(int32_t) * (size_t)(p->ninputs + 1));
    if (!p->ignored)
        return -1;
    int kept = 0;
    for (int i = 0; i < p->ninputs; i++) {
        if (teflon_runner_input_ignored(p->runner, p->inputs[i])) {
            p->ignored[p->nignored++] = p->inputs[i];
            continue;
        }
        p->input_bytes[kept] = p->input_bytes[i];
        p->inputs[kept++] = p->inputs[i];
    }
    p->ninputs = kept;
    return 0;
}

teflon_partition *teflon_partition_compile(teflon_delegate *d, tfl_context *context, const teflon_graph *g,
                                           const tfl_delegate_params *params, char *err, size_t errlen)
{
    teflon_partition *p = calloc(1, sizeof(*p));
    uint8_t *blob = NULL;
    uint64_t blob_len = 0;
    double t0 = teflon_now_ms();

    err[0] = '\0';
    if (!p)
        goto oom;
    p->id = d->partitions_compiled++;
    p->debug = d->debug;
    p->perf = d->perf;
    p->nnodes = params->nodes_to_replace->size;
    p->nodes = malloc(sizeof(int32_t) * (size_t)(p->nnodes + 1));
    if (!p->nodes)
        goto oom;
    memcpy(p->nodes, params->nodes_to_replace->data, sizeof(int32_t) * (size_t)p->nnodes);
    p->inputs = io_tensors(context, params->input_tensors, 1, &p->ninputs, &p->input_bytes);
    p->outputs = io_tensors(context, params->output_tensors, 0, &p->noutputs, &p->output_bytes);
    if (!p->inputs || !p->outputs)
        goto oom;

    const char *source = "compiled";
    if (teflon_program_for(d, g, p->nodes, p->nnodes, p->inputs, p->ninputs, p->outputs, p->noutputs, &blob,
                           &blob_len, &source, err, errlen))
        goto fail;
    double t1 = teflon_now_ms();

    p->devref = teflon_devref_get(d->devref);
    pthread_mutex_lock(&p->devref->lock);
    p->runner = teflon_runner_load_owned(p->devref->dev, blob, blob_len, err, errlen);
    blob = NULL; /* the runner's now (freed by it on failure too) */
    int bad = !p->runner || check_bindings(p, err, errlen);
    pthread_mutex_unlock(&p->devref->lock);
    if (bad) {
        if (!err[0])
            snprintf(err, errlen, "the runner could not load the compiled program");
        goto fail;
    }
    if (drop_ignored_inputs(p))
        goto oom;
    qsort(p->nodes, (size_t)p->nnodes, sizeof(int32_t), cmp_i32);
    if (p->debug)
        fprintf(stderr, "teflon: partition %d (%d nodes): program %s in %.1f ms, loaded in %.1f ms\n", p->id,
                p->nnodes, source, t1 - t0, teflon_now_ms() - t1);
    return p;

oom:
    snprintf(err, errlen, "out of memory");
fail:
    free(blob);
    teflon_partition_free(p);
    return NULL;
}

void teflon_partition_free(teflon_partition *p)
{
    if (!p)
        return;
    if (p->runner) {
        pthread_mutex_lock(&p->devref->lock);
        teflon_runner_free(p->runner);
        pthread_mutex_unlock(&p->devref->lock);
    }
    if (p->devref)
        teflon_devref_put(p->devref);
    free(p->nodes);
    free(p->inputs);
    free(p->ignored);
    free(p->outputs);
    free(p->input_bytes);
    free(p->output_bytes);
    free(p);
}

static void kernel_error(tfl_context *context, const char *msg)
{
    fprintf(stderr, "teflon: %s\n", msg);
    if (context->ReportError)
        context->ReportError(context, "teflon: %s", msg);
}

/* `buffer` is the TfLiteDelegateParams of this partition. */
static void *kernel_init(tfl_context *context, const char *buffer, size_t length)
{
    const tfl_delegate_params *params = (const tfl_delegate_params *)(const void *)buffer;
    (void)context;
    (void)length;
    if (!params || !params->delegate || !params->nodes_to_replace)
        return NULL;
    teflon_delegate *d = (teflon_delegate *)params->delegate;
    for (teflon_partition **pp = &d->ready; *pp; pp = &(*pp)->next) {
        if (teflon_partition_matches(*pp, params->nodes_to_replace)) {
            teflon_partition *p = *pp;
            *pp = p->next;
            p->next = NULL;
            return p;
        }
    }
    return NULL;    /* kernel_prepare reports it */
}

static void kernel_free(tfl_context *context, void *buffer)
{
    (void)context;
    teflon_partition_free(buffer);
}

static tfl_status kernel_prepare(tfl_context *context, tfl_node *node)
{
    const teflon_partition *p = node->user_data;
    char msg[256];
    if (!p) {
        kernel_error(context, "a delegated partition has no compiled program (internal error)");
        return TFL_ERROR;
    }
    /* TFLite checks that every input of a node has data before it invokes it: inputs the program ignores are
     * marked absent (Vela's scratch tensors are never allocated) */
    for (int i = 0; node->inputs && i < node->inputs->size; i++)
        for (int k = 0; k < p->nignored; k++)
            if (node->inputs->data[i] == p->ignored[k])
                node->inputs->data[i] = -1;
    for (int i = 0; i < p->ninputs + p->noutputs; i++) {
        int in = i < p->ninputs;
        int32_t t = in ? p->inputs[i] : p->outputs[i - p->ninputs];
        uint64_t bytes = in ? p->input_bytes[i] : p->output_bytes[i - p->ninputs];
        if (context->tensors[t].bytes != bytes) {
            snprintf(msg, sizeof(msg), "partition %d: tensor %d is now %zu bytes, compiled for %llu "
                     "(shapes must stay static)", p->id, t, context->tensors[t].bytes, (unsigned long long)bytes);
            kernel_error(context, msg);
            return TFL_ERROR;
        }
    }
    return TFL_OK;
}

static tfl_status kernel_invoke(tfl_context *context, tfl_node *node)
{
    teflon_partition *p = node->user_data;
    char msg[768];
    char err[512] = "";
    double t0 = p->debug ? teflon_now_ms() : 0.0;
    int failed_tensor = -1;

    pthread_mutex_lock(&p->devref->lock);
    for (int i = 0; i < p->ninputs && failed_tensor < 0; i++) {
        const tfl_tensor *t = &context->tensors[p->inputs[i]];
        if (!t->data.raw_const ||
            teflon_runner_set_input(p->runner, p->inputs[i], t->data.raw_const, p->input_bytes[i]) != 0)
            failed_tensor = p->inputs[i];
    }
    int rc = failed_tensor < 0 ? teflon_runner_run(p->runner, err, sizeof(err)) : 0;
    for (int i = 0; i < p->noutputs && failed_tensor < 0 && rc == 0; i++) {
        tfl_tensor *t = &context->tensors[p->outputs[i]];
        if (!t->data.raw || teflon_runner_get_output(p->runner, p->outputs[i], t->data.raw, p->output_bytes[i]) != 0)
            failed_tensor = p->outputs[i];
    }
    if (p->perf && rc == 0 && failed_tensor < 0) {
        char who[48];
        snprintf(who, sizeof(who), "teflon: partition %d", p->id);
        teflon_runner_print_perf(p->runner, stderr, who);
    }
    pthread_mutex_unlock(&p->devref->lock);

    if (failed_tensor >= 0 || rc != 0) {
        /* nothing was copied back: the output tensors keep what they held, never a failed job's bytes */
        if (rc != 0)
            snprintf(msg, sizeof(msg), "partition %d (%d nodes, %d-%d): the NPU job failed: %s", p->id, p->nnodes,
                     p->nodes[0], p->nodes[p->nnodes - 1], err[0] ? err : "no detail");
        else
            snprintf(msg, sizeof(msg), "partition %d: tensor %d has no buffer or no binding in the program", p->id,
                     failed_tensor);
        kernel_error(context, msg);
        return TFL_ERROR;
    }
    if (p->debug)
        fprintf(stderr, "teflon: partition %d: invoke took %.3f ms\n", p->id, teflon_now_ms() - t0);
    return TFL_OK;
}

tfl_registration teflon_kernel_registration(void)
{
    tfl_registration reg;
    memset(&reg, 0, sizeof(reg));
    reg.init = kernel_init;
    reg.free = kernel_free;
    reg.prepare = kernel_prepare;
    reg.invoke = kernel_invoke;
    reg.builtin_code = TFL_BUILTIN_DELEGATE;
    reg.custom_name = "teflon";
    reg.version = 1;
    return reg;
}
