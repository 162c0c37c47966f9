/*
 * cupti_ref.c - a CUPTI consumer of its own, for bench/bench_timing_fidelity.py
 * --gpu-time: the reference the run box's GPU time (runner/gtrace.c) is
 * compared with, measured by code that shares nothing with it.
 *
 * Built as a CUDA injection library (make build/cupti_ref.so) and loaded by
 * the driver into every process of a plain `kjudge-runner eval` through
 * CUDA_INJECTION64_PATH (the box's own recording off: KJUDGE_GPU_TIME=0).
 * It records every kernel's activity and appends one line per kernel,
 * "name,grid size,start ns,end ns", to the file $KJ_CUPTI_REF_OUT. The
 * boxes end with _exit, so CUPTI is asked to hand its buffers over every
 * 10 ms, and the buffers are small (REF_BUF, a few dozen records): the
 * periodic flush hands over only buffers that are full, and with 1 MB ones
 * (thousands of records) the H200 run lost every record of 8 of its 31
 * shapes (likely those a box timed last). What is lost is a box's last buffer:
 * missing, never wrong.
 */
#include <cupti.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REF_BUF (1u << 14)

static int ref_fd = -1;

static void CUPTIAPI ref_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    *buf = aligned_alloc(8, REF_BUF);
    *size = *buf != NULL ? REF_BUF : 0;
    *max_records = 0;
}

static void CUPTIAPI ref_done(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                              size_t valid)
{
    CUpti_Activity *rec = NULL;
    char line[600];
    (void)ctx;
    (void)stream;
    (void)size;
    while (buf != NULL && cuptiActivityGetNextRecord(buf, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
            rec->kind != CUPTI_ACTIVITY_KIND_KERNEL)
            continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
        int n = snprintf(line, sizeof line, "%.400s,%lld,%llu,%llu\n", k->name ? k->name : "?",
                         (long long)k->gridX * k->gridY * k->gridZ,
                         (unsigned long long)k->start, (unsigned long long)k->end);
        if (n > 0 && ref_fd >= 0 && write(ref_fd, line, (size_t)n) < 0)
            break;
    }
    free(buf);
}

/* Called by the driver at cuInit in every process of the eval. */
int InitializeInjection(void)
{
    const char *out = getenv("KJ_CUPTI_REF_OUT");
    if (out == NULL || (ref_fd = open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
        return 0;
    if (cuptiActivityRegisterCallbacks(ref_request, ref_done) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
        return 0;
    cuptiActivityFlushPeriod(10);
    return 1;
}
