/*
 * cpus.c - the CPUs a host's compile boxes may use (see cpus.h).
 */
#include "cpus.h"

#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define CPUS_RESERVE_MAX 1024

/* The /dev/nvidiaN device nodes (N digits only: not nvidiactl, nvidia-uvm). */
static int cpus_gpu_nodes(void)
{
    DIR *d = opendir("/dev");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        const char *p = e->d_name;
        if (strncmp(p, "nvidia", 6) != 0 || p[6] == '\0')
            continue;
        for (p += 6; isdigit((unsigned char)*p); p++)
            ;
        n += *p == '\0';
    }
    closedir(d);
    return n;
}

int cpus_reserved(void)
{
    const char *v = getenv("KJUDGE_TIMING_CPUS");
    if (v == NULL || v[0] == '\0')
        return cpus_gpu_nodes();
    char *end = NULL;
    long r = strtol(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end != '\0' || r > CPUS_RESERVE_MAX)
        return -1;
    return (int)r;
}

int cpus_compile_set_from(const cpu_set_t *allowed, int reserve, cpu_set_t *out)
{
    int total = CPU_COUNT(allowed), keep = reserve < total / 2 ? reserve : total / 2;
    memcpy(out, allowed, sizeof *out);
    if (keep <= 0)
        return 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && keep > 0; cpu++)
        if (CPU_ISSET(cpu, out)) {
            CPU_CLR(cpu, out);
            keep--;
        }
    return CPU_COUNT(out);
}

int cpus_compile_set(cpu_set_t *out)
{
    cpu_set_t allowed;
    int r = cpus_reserved();
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0)
        return -1;
    return cpus_compile_set_from(&allowed, r < 0 ? 0 : r, out);
}
