/* pybox_py.S - embeds runner/pybox_harness.py (the trusted side of a
 * Python run box, pybox.h) into the runner as kj_pybox_harness[], a
 * NUL-terminated string, so that no file beside the binary can replace it. */
    .section .rodata
    .global kj_pybox_harness
kj_pybox_harness:
    .incbin KJ_PYBOX_PATH
    .byte 0
    .section .note.GNU-stack,"",@progbits
