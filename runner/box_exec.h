/*
 * box_exec.h - `kjudge-runner box-exec`, the run box a tool starts (tool.h).
 */
#ifndef KJ_BOX_EXEC_H
#define KJ_BOX_EXEC_H

/* argv[1] is "box-exec"; returns only on a failure before the box starts
 * (the exit status), otherwise box_main() exits. */
int box_exec_main(int argc, char **argv);

#endif
