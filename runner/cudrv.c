/*
 * cudrv.c - resolves the Driver API from libcuda.so.1 with cuGetProcAddress,
 * so each function comes in the version that cuda.h (CUDA_VERSION) expects.
 * Only the run box and the device probe call cudrv_load(); see cudrv.h.
 */
#include "cudrv.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Close the library and forget every function (after a failed load). */
static void cudrv_unload(struct cudrv *d)
{
    if (d == NULL || d->lib == NULL)
        return;
    dlclose(d->lib);
    memset(d, 0, sizeof *d);
}

int cudrv_load(struct cudrv *d, struct kj_err *err)
{
    __typeof__(cuGetProcAddress) *getproc;
    CUdriverProcAddressQueryResult status;

    memset(d, 0, sizeof *d);
    d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (d->lib == NULL)
        return KJ_FAIL(err, KJ_ECUDA, "cannot load the CUDA driver (libcuda.so.1): %s", dlerror());
    *(void **)&getproc = dlsym(d->lib, "cuGetProcAddress_v2");
    if (getproc == NULL) {
        cudrv_unload(d);
        return KJ_FAIL(err, KJ_ECUDA, "the CUDA driver is too old: no cuGetProcAddress_v2");
    }
#define CUDRV_RESOLVE(name)                                                              \
    if (getproc(#name, (void **)&d->name, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,     \
                &status) != CUDA_SUCCESS || d->name == NULL) {                           \
        cudrv_unload(d);                                                                 \
        return KJ_FAIL(err, KJ_ECUDA, "the CUDA driver lacks %s (needs CUDA %d.%d)",     \
                       #name, CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);            \
    }
    CUDRV_FUNCS(CUDRV_RESOLVE)
#undef CUDRV_RESOLVE
    /* At 13.0 the driver's "cuCtxSynchronize" takes a context argument, while
     * cuda.h still declares the argument-less form: ask for that one. */
    if (getproc("cuCtxSynchronize", (void **)&d->cuCtxSynchronize, 12000,
                CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || d->cuCtxSynchronize == NULL) {
        cudrv_unload(d);
        return KJ_FAIL(err, KJ_ECUDA, "the CUDA driver lacks cuCtxSynchronize");
    }
    *(void **)&d->cuProfilerStart = dlsym(d->lib, "cuProfilerStart");
    *(void **)&d->cuProfilerStop = dlsym(d->lib, "cuProfilerStop");
    return KJ_OK;
}
