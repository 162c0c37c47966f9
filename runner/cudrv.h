/*
 * cudrv.h - the CUDA Driver API, loaded at run time from libcuda.so.1.
 *
 * kjudge-runner links no libcuda so that `kjudge-runner compile` and the unit
 * tests run on machines without a driver. The run box (runner/box.c) calls
 * cudrv_load() once, then every call goes through the table and through
 * CUDRV_CALL, which records the call text, file:line and the driver's error
 * name in a struct kj_err (STYLE.md rule 11).
 */
#ifndef KJ_CUDRV_H
#define KJ_CUDRV_H

#include <cuda.h>
#include "kj_err.h"

/* X(name) for every driver function we use. The member names expand to the
 * versioned symbols of cuda.h (cuMemAlloc -> cuMemAlloc_v2), as calls do. */
#define CUDRV_FUNCS(X) \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName) \
    X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDeviceGetPCIBusId) \
    X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) \
    X(cuCtxSynchronize) X(cuCtxSetLimit) X(cuCtxResetPersistingL2Cache) \
    X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) \
    X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuFuncGetParamInfo) \
    X(cuLaunchKernel) X(cuLaunchKernelEx) \
    X(cuMemAlloc) X(cuMemFree) X(cuMemcpyDtoH) X(cuMemcpyDtoHAsync) X(cuMemsetD8Async) \
    X(cuMemcpyDtoDAsync) \
    X(cuMemHostAlloc) X(cuMemHostGetDevicePointer) X(cuMemFreeHost) \
    X(cuMemHostRegister) X(cuMemHostUnregister) X(cuMemsetD32Async) \
    X(cuStreamCreate) X(cuStreamSynchronize) X(cuStreamDestroy) \
    X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize) X(cuEventElapsedTime) X(cuEventDestroy) \
    X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle) X(cuIpcCloseMemHandle) \
    X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphInstantiateWithFlags) \
    X(cuGraphUpload) X(cuGraphLaunch) X(cuGraphExecDestroy) X(cuGraphDestroy) \
    X(cuGetErrorName) X(cuGetErrorString)

#define CUDRV_MEMBER(name) __typeof__(name) *name;
struct cudrv {
    void *lib; /* dlopen handle, owned */
    CUDRV_FUNCS(CUDRV_MEMBER)
    /* Optional (NULL when absent): the profiler's start and stop marks, which
     * bracket the launches a profile run measures (ncu --profile-from-start off). */
    CUresult (*cuProfilerStart)(void);
    CUresult (*cuProfilerStop)(void);
};
#undef CUDRV_MEMBER

/* Open libcuda.so.1 and resolve every function. Fails with KJ_ECUDA and a
 * message saying which library or symbol is missing. */
int cudrv_load(struct cudrv *d, struct kj_err *err);


#endif
