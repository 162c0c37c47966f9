/*
 * gpumon.c - see gpumon.h. NVML's C API is declared here by hand (only the
 * calls used; every one returns 0 on success) because the toolkit ships no
 * nvml.h; the library comes with the driver.
 */
#include "gpumon.h"
#include "secret.h"
#include "fdio.h"
#include "mono.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void *gpumon_dev;
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2
#define NVML_TEMPERATURE_GPU 0

struct gpumon_api {
    int (*init)(void);
    int (*shutdown)(void);
    int (*by_pci)(const char *, gpumon_dev *);
    int (*driver)(char *, unsigned);
    int (*clock)(gpumon_dev, int, unsigned *);
    int (*temp)(gpumon_dev, int, unsigned *);
    int (*power)(gpumon_dev, unsigned *);
    int (*reasons)(gpumon_dev, unsigned long long *);
};

static int gpumon_resolve(void *lib, struct gpumon_api *a)
{
    *(void **)&a->init = dlsym(lib, "nvmlInit_v2");
    *(void **)&a->shutdown = dlsym(lib, "nvmlShutdown");
    *(void **)&a->by_pci = dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&a->driver = dlsym(lib, "nvmlSystemGetDriverVersion");
    *(void **)&a->clock = dlsym(lib, "nvmlDeviceGetClockInfo");
    *(void **)&a->temp = dlsym(lib, "nvmlDeviceGetTemperature");
    *(void **)&a->power = dlsym(lib, "nvmlDeviceGetPowerUsage");
    *(void **)&a->reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (a->reasons == NULL)
        *(void **)&a->reasons = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    return a->init && a->shutdown && a->by_pci && a->driver && a->clock && a->temp &&
           a->power && a->reasons;
}

/* The reading itself, in the child: loads NVML. */
static void gpumon_read(const char *pci, struct gpumon *out)
{
    struct gpumon_api a;
    gpumon_dev dev;
    unsigned mw = 0;
    memset(out, 0, sizeof *out);
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL)
        return;
    if (!gpumon_resolve(lib, &a) || a.init() != 0) {
        dlclose(lib);
        return;
    }
    if (a.by_pci(pci, &dev) == 0 && a.driver(out->driver, sizeof out->driver) == 0 &&
        a.clock(dev, NVML_CLOCK_SM, &out->sm_mhz) == 0 &&
        a.clock(dev, NVML_CLOCK_MEM, &out->mem_mhz) == 0 &&
        a.temp(dev, NVML_TEMPERATURE_GPU, &out->temp_c) == 0 && a.power(dev, &mw) == 0 &&
        a.reasons(dev, &out->reasons) == 0) {
        out->power_w = mw / 1000.0;
        out->driver[sizeof out->driver - 1] = '\0';
        out->ok = 1;
    }
    a.shutdown();
    dlclose(lib);
}

void gpumon_read_isolated(const char *pci, struct gpumon *out, int timeout_ms,
                          const struct secret_list *wipe)
{
    int fds[2];
    memset(out, 0, sizeof *out);
    if (pipe2(fds, O_CLOEXEC) != 0)
        return;
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    if (pid == 0) {
        struct gpumon m;
        secret_wipe(wipe);
        close(fds[0]);
        gpumon_read(pci, &m);
        ssize_t n = write(fds[1], &m, sizeof m);
        _exit(n == (ssize_t)sizeof m ? 0 : 1);
    }
    close(fds[1]);
    struct gpumon m;
    if (fdio_wait(fds[0], mono_now() + timeout_ms / 1000.0) > 0 &&
        fdio_read_full(fds[0], &m, sizeof m) == 0) {
        m.driver[sizeof m.driver - 1] = '\0';
        *out = m;
    } else {
        kill(pid, SIGKILL);
    }
    close(fds[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}
