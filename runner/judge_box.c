/*
 * judge_box.c - the judge's two boxes (judge_int.h): their configuration,
 * their start, the wait for their contexts, the module load, and protocol
 * v2's fresh submission box between rounds. judge.c starts and loads them
 * once per job; judge_time.c restarts the submission's.
 */
#include "judge_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JUDGE_START_MS 120000   /* a box must have its context within this */

/* The configuration of the reference's box (ref) or the submission's. */
static void judge_box_cfg(const struct judge *j, int ref, struct box_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->spec = j->spec;
    c->plan = j->plan;
    c->wipe = j->job->secrets;
    c->gpu = j->job->gpu;
    c->region_size = j->region_size;
    c->unmap_size = j->region_size;
    c->gendirs = j->gensrc != NULL ? &j->gendirs : NULL;
    c->role_reference = ref;
    c->dirs = ref ? &j->refdirs : &j->dirs;
    c->region = ref ? j->ref_region : j->run_region;
    c->unmap = ref ? j->run_region : j->ref_region;
}

int judge_start_boxes(struct judge *j, struct kj_err *err)
{
    struct box_cfg c;
    judge_box_cfg(j, 1, &c);
    int rc = box_start(&c, &j->ref, err);
    if (rc != KJ_OK)
        return rc;
    judge_box_cfg(j, 0, &c);
    return j->tool ? judge_tool_start(j, &c, err) : box_start(&c, &j->run, err);
}

/* Wait for both boxes to have their contexts; j->dev from the submission's
 * box. A GPU other than the one the job was compiled for (job->arch) is the
 * judge's error. */
int judge_box_info(struct judge *j, struct kj_err *err)
{
    struct box_device refdev;
    int rc = box_read_info(&j->run, &j->dev, JUDGE_START_MS, err);
    if (rc == KJ_OK)
        rc = box_read_info(&j->ref, &refdev, JUDGE_START_MS, err);
    if (rc == KJ_OK && j->job->arch != NULL && strcmp(j->dev.arch, j->job->arch) != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "GPU %d is %s, but the job was compiled for %s",
                     j->job->gpu, j->dev.arch, j->job->arch);
    return rc;
}

/* The function name of every launch line of d in the compile result cr. */
static void judge_lowered(const struct directives *d, const struct compile_result *cr,
                          char (*lowered)[256])
{
    for (int l = 0; l < d->nlaunch; l++)
        for (int k = 0; k < cr->nkernels; k++)
            if (strcmp(cr->kernels[k].name, d->launch[l].kernel) == 0)
                snprintf(lowered[l], 256, "%s", cr->kernels[k].lowered);
}

int judge_load(struct judge *j, int is_ref, struct kj_err *err)
{
    const struct compile_result *cr = is_ref ? &j->refc : &j->sub;
    const struct directives *d = is_ref ? &j->refdirs : &j->dirs;
    struct box_load ld;
    struct box_req req = judge_req(BOX_OP_LOAD, 0, 0);
    struct box_rep rep;
    memset(&ld, 0, sizeof ld);
    ld.cubin_size = (uint32_t)cr->cubin_size;
    ld.nlaunch = d->nlaunch;
    judge_lowered(d, cr, ld.lowered);
    if (j->gensrc != NULL) {
        ld.gen_size = (uint32_t)j->genc.cubin_size;
        ld.gen_nlaunch = j->gendirs.nlaunch;
        judge_lowered(&j->gendirs, &j->genc, ld.gen_lowered);
    }
    size_t n = sizeof ld + cr->cubin_size + ld.gen_size;
    unsigned char *payload = malloc(n);
    if (payload == NULL)
        return KJ_FAIL(err, KJ_ENOMEM, "out of memory");
    memcpy(payload, &ld, sizeof ld);
    memcpy(payload + sizeof ld, cr->cubin, cr->cubin_size);
    if (ld.gen_size > 0)
        memcpy(payload + sizeof ld + cr->cubin_size, j->genc.cubin, ld.gen_size);
    req.payload = (uint32_t)n;
    enum judge_step r = judge_call(j, is_ref, &req, payload, &rep, "loading the module", err);
    free(payload);
    return r == STEP_ERROR ? KJ_EINTERNAL : KJ_OK;
}

int judge_restart_run(struct judge *j, struct kj_err *err)
{
    struct box_cfg c;
    struct box_device dev;
    box_kill(&j->run);
    j->run_epoch++;
    judge_box_cfg(j, 0, &c);
    int rc = box_start(&c, &j->run, err);
    if (rc == KJ_OK)
        rc = box_read_info(&j->run, &dev, JUDGE_START_MS, err);
    if (rc == KJ_OK && strcmp(dev.pci, j->dev.pci) != 0)
        rc = KJ_FAIL(err, KJ_EINTERNAL, "the new box found GPU %s, not %s", dev.pci, j->dev.pci);
    if (rc == KJ_OK)
        rc = judge_load(j, 0, err);
    return rc;
}
