/*
 * gpumon.h - a reading of the GPU's state through NVML (libnvidia-ml.so.1,
 * loaded at run time): driver version, SM and memory clocks, temperature,
 * power and the clock-event (throttle) reasons. The judge takes one before
 * and one after the benchmark shapes and stores them with the result so
 * that a slow run can be explained. Missing NVML is not an error: the
 * reading says so.
 *
 * NVML is only ever loaded in a short-lived child (gpumon_read_isolated):
 * once initialised in a process it leaves state behind that every later
 * fork inherits, and the compile boxes forked from the runner then made
 * calls their seccomp filter refuses (eventfd2, sched_getaffinity).
 */
#ifndef KJ_GPUMON_H
#define KJ_GPUMON_H

struct gpumon {
    int ok;                    /* 1 when NVML answered */
    char driver[32];           /* "580.159.04" */
    unsigned sm_mhz, mem_mhz;  /* current clocks */
    unsigned temp_c;
    double power_w;
    unsigned long long reasons; /* NVML clocks-event reason bits (0x4 SW power cap, 0x8 HW slowdown, ...) */
};

struct secret_list;

/* Read the device at PCI bus id pci ("0000:00:06.0") in a child process
 * that exits right after, so that NVML never loads into the caller; gives
 * up (out->ok = 0) after timeout_ms. Never fails: out->ok says. The child
 * wipes its copy of wipe (secret.h; may be NULL) first. */
void gpumon_read_isolated(const char *pci, struct gpumon *out, int timeout_ms,
                          const struct secret_list *wipe);

#endif
