/* fatbin.S - embeds build/kernels.fatbin (the trusted device code built by
 * nvcc from kernels/) into the runner as kj_kernels_fatbin[]; the run box
 * loads it with cuModuleLoadData. */
    .section .rodata
    .balign 64
    .global kj_kernels_fatbin
    .global kj_kernels_fatbin_end
kj_kernels_fatbin:
    .incbin KJ_FATBIN_PATH
kj_kernels_fatbin_end:
    .byte 0
    .section .note.GNU-stack,"",@progbits
