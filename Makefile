# kjudge build. `make` builds bin/kjudge-server, bin/kjudge-runner and the
# command-line client bin/kjudge;
# `make test` runs the CPU tests (unit tests under ASan+UBSan, then the API
# tests against a real server); `make gpu-test` runs the GPU tests (needs a
# GPU); `make run` installs what is missing, builds and starts the service;
# `make bench` runs the benchmarks under bench/ (GPU); `make bench-http` the
# HTTP load benchmark (no GPU; BENCH_HTTP_ARGS="--users 50 --seconds 2" or
# "--smoke" sizes it). `make server` builds only bin/kjudge-server
# and needs no CUDA toolkit (a front-end host: `deploy/deps.sh --server`).
# `make fuzz` runs every libFuzzer harness of
# tests/fuzz/ for FUZZ_SECONDS each (`make test` runs them for FUZZ_TEST_SECONDS).

CUDA ?= /usr/local/cuda
NVCC ?= $(CUDA)/bin/nvcc
CC ?= gcc
CFLAGS_BASE := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -Icommon
# Only the runner's objects (and the unit tests, which link both programs)
# see the CUDA headers; the server and common code build without a toolkit.
CUDA_INC := -I$(CUDA)/include
CFLAGS ?= -O2
SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
CUDA_LIB := -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lnvrtc -lnvJitLink -ldl
SERVER_LIBS := -lmicrohttpd -lcjson -lsqlite3 -lcrypto -lpthread -lm
RUNNER_LIBS := -lcurl -lcjson $(CUDA_LIB) -lseccomp -lpthread -lm
CLI_LIBS := -lcurl -lcjson -lm
# Architectures the trusted kernels are built for (SASS), plus PTX for newer GPUs.
KERNEL_ARCHS := -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
                -gencode arch=compute_120,code=sm_120 -gencode arch=compute_90,code=compute_90

# common/curlc.c (the HTTP(S) client on libcurl) goes into the runner and the
# command-line client only: the server never links libcurl.
CURL_SRC := common/curlc.c
COMMON_SRC := $(filter-out $(CURL_SRC),$(wildcard common/*.c))
SERVER_SRC := $(filter-out server/main.c,$(wildcard server/*.c))
RUNNER_SRC := $(filter-out runner/main.c,$(wildcard runner/*.c))
CLI_SRC := $(filter-out cli/main.c,$(wildcard cli/*.c))
KERNEL_SRC := $(wildcard kernels/*.cu)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

OBJ := build/obj
SOBJ := build/asan
COMMON_OBJ := $(COMMON_SRC:%.c=$(OBJ)/%.o)
SERVER_OBJ := $(SERVER_SRC:%.c=$(OBJ)/%.o)
RUNNER_OBJ := $(RUNNER_SRC:%.c=$(OBJ)/%.o) $(OBJ)/kernels/fatbin.o $(OBJ)/runner/pybox_py.o \
              $(OBJ)/common/curlc.o
# The client uses the directive parsers (CUDA and Python), the language
# detection and the server's line diff (pure code).
CLI_OBJ := $(CLI_SRC:%.c=$(OBJ)/%.o) $(OBJ)/common/directive.o $(OBJ)/common/directive_nvrtc.o \
           $(OBJ)/common/expr.o $(OBJ)/common/pydirective.o $(OBJ)/common/sub_lang.o \
           $(OBJ)/common/gputype.o \
           $(OBJ)/common/kj_err.o $(OBJ)/common/kj_buf.o $(OBJ)/common/curlc.o \
           $(OBJ)/server/diff.o
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=build/tests/%)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=build/fuzz/%)

# libFuzzer harnesses: clang, coverage for the fuzzer, ASan and UBSan.
FUZZ_CC ?= clang
FOBJ := build/fuzzobj
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FUZZ_SECONDS ?= 300
FUZZ_TEST_SECONDS ?= 15

.PHONY: all server test gpu-test run deps bench bench-http fuzz fuzz-build clean man
all: bin/kjudge-server bin/kjudge-runner bin/kjudge
server: bin/kjudge-server

# Manual pages: man/PAGE.in (mdoc) with the program's own --help text put in
# by man/mkman.sh; deploy/install.sh makes the same for what it installs.
man: build/man/kjudge.1 build/man/kjudge-server.8 build/man/kjudge-runner.8
build/man/%.1 build/man/%.8: man/mkman.sh
	@mkdir -p $(dir $@)
	man/mkman.sh bin/$* man/$(notdir $@).in >$@.tmp && mv $@.tmp $@
build/man/kjudge.1: bin/kjudge man/kjudge.1.in
build/man/kjudge-server.8: bin/kjudge-server man/kjudge-server.8.in
build/man/kjudge-runner.8: bin/kjudge-runner man/kjudge-runner.8.in

# -MMD: each object also depends on exactly the headers it includes.
$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -MMD -MP -c $< -o $@

$(SOBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -O1 $(SAN) -MMD -MP -c $< -o $@

$(OBJ)/runner/%.o $(SOBJ)/runner/%.o: CFLAGS_BASE += $(CUDA_INC)

-include $(shell find build -name '*.d' 2>/dev/null)

# cli/cmd_subs.c uses server/diff.h.
$(OBJ)/cli/%.o $(SOBJ)/cli/%.o: CFLAGS_BASE += -Iserver

# Trusted device code: one fatbin, embedded in the runner with .incbin.
build/kernels.fatbin: $(KERNEL_SRC) $(wildcard kernels/*.h common/philox.h common/kjhash.h)
	@mkdir -p build
	$(NVCC) -fatbin -std=c++17 -O3 --fmad=false -Icommon $(KERNEL_ARCHS) -o $@ kernels/kernels.cu

$(OBJ)/kernels/fatbin.o $(SOBJ)/kernels/fatbin.o: kernels/fatbin.S build/kernels.fatbin
	@mkdir -p $(dir $@)
	$(CC) -c -DKJ_FATBIN_PATH='"build/kernels.fatbin"' $< -o $@

# The Python run box's trusted harness (runner/pybox.h), embedded the same way.
$(OBJ)/runner/pybox_py.o $(SOBJ)/runner/pybox_py.o: runner/pybox_py.S runner/pybox_harness.py
	@mkdir -p $(dir $@)
	$(CC) -c -DKJ_PYBOX_PATH='"runner/pybox_harness.py"' $< -o $@

bin/kjudge-server: $(OBJ)/server/main.o $(SERVER_OBJ) $(COMMON_OBJ)
	@mkdir -p bin
	$(CC) $(CFLAGS) $^ -o $@ $(SERVER_LIBS)

bin/kjudge-runner: $(OBJ)/runner/main.o $(RUNNER_OBJ) $(COMMON_OBJ)
	@mkdir -p bin
	$(CC) $(CFLAGS) $^ -o $@ $(RUNNER_LIBS)

bin/kjudge: $(OBJ)/cli/main.o $(CLI_OBJ)
	@mkdir -p bin
	$(CC) $(CFLAGS) $^ -o $@ $(CLI_LIBS)

# The runner judging with tests/api/fakegpu.c instead of a GPU: the API
# tests drive the real runner process (signals, HTTP client, supervisor loop)
# with it on a host without one. Never installed.
$(OBJ)/runner/main_fakegpu.o: runner/main.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) $(CFLAGS) -DKJ_RUNNER_FAKE_GPU -MMD -MP -c $< -o $@

$(OBJ)/tests/api/fakegpu.o: CFLAGS_BASE += $(CUDA_INC) -Irunner

build/kjudge-runner-fakegpu: $(OBJ)/runner/main_fakegpu.o $(OBJ)/tests/api/fakegpu.o $(RUNNER_OBJ) \
                             $(COMMON_OBJ)
	$(CC) $(CFLAGS) $^ -o $@ $(RUNNER_LIBS)

# Unit tests: every tests/unit/test_X.c is one binary built with ASan and
# UBSan and linked with one archive per program (less its main): the
# server's, the client's and common/ for every test; the runner's (and the
# CUDA headers and libraries) only for a test that includes a header of
# runner/ (or a file of it), so the server's tests build and run without a
# CUDA toolkit.
SAN_COMMON := build/libkj_common_asan.a
SAN_SERVER := build/libkj_server_asan.a
SAN_RUNNER := build/libkj_runner_asan.a
SAN_CLI := build/libkj_cli_asan.a
$(SAN_COMMON): $(COMMON_SRC:%.c=$(SOBJ)/%.o) $(CURL_SRC:%.c=$(SOBJ)/%.o)
$(SAN_SERVER): $(SERVER_SRC:%.c=$(SOBJ)/%.o)
$(SAN_RUNNER): $(RUNNER_SRC:%.c=$(SOBJ)/%.o) $(SOBJ)/kernels/fatbin.o $(SOBJ)/runner/pybox_py.o
$(SAN_CLI): $(CLI_SRC:%.c=$(SOBJ)/%.o)
$(SAN_COMMON) $(SAN_SERVER) $(SAN_RUNNER) $(SAN_CLI):
	@rm -f $@
	ar rcs $@ $^

empty :=
space := $(empty) $(empty)
RUNNER_H_RE := $(subst $(space),|,$(strip $(notdir $(wildcard runner/*.h))))
UNIT_RUNNER_SRC := $(shell grep -lE '^\#include "(\.\./\.\./runner/.*|$(RUNNER_H_RE))"' $(UNIT_SRC) /dev/null)
UNIT_RUNNER_BIN := $(UNIT_RUNNER_SRC:tests/unit/%.c=build/tests/%)

build/tests/%: tests/unit/%.c tests/unit/kt.h $(SAN_SERVER) $(SAN_CLI) $(SAN_COMMON)
	@mkdir -p build/tests
	$(CC) $(CFLAGS_BASE) -O1 $(SAN) -Iserver -Icli -Itests/unit $< $(SAN_SERVER) $(SAN_CLI) \
	    $(SAN_COMMON) -o $@ $(SERVER_LIBS) $(CLI_LIBS)

$(UNIT_RUNNER_BIN): build/tests/%: tests/unit/%.c tests/unit/kt.h $(SAN_RUNNER) $(SAN_SERVER) \
                    $(SAN_CLI) $(SAN_COMMON)
	@mkdir -p build/tests
	$(CC) $(CFLAGS_BASE) $(CUDA_INC) -O1 $(SAN) -Iserver -Irunner -Icli -Itests/unit $< \
	    $(SAN_RUNNER) $(SAN_SERVER) $(SAN_CLI) $(SAN_COMMON) -o $@ $(SERVER_LIBS) $(RUNNER_LIBS)

# The server under ASan and UBSan, for the schema run (tests/api/test_schema.py).
build/kjudge-server-asan: $(SOBJ)/server/main.o $(SAN_SERVER) $(SAN_COMMON)
	$(CC) $(CFLAGS_BASE) -O1 $(SAN) $^ -o $@ $(SERVER_LIBS)

# Fuzz harnesses: every tests/fuzz/fuzz_X.c is one libFuzzer binary linked
# with every module of common/ and server/ (less main.c) from one archive, so
# a harness pulls in exactly the objects it calls.
$(FOBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS_BASE) -O1 $(FUZZ_SAN) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

build/libkj_fuzz.a: $(COMMON_SRC:%.c=$(FOBJ)/%.o) $(SERVER_SRC:%.c=$(FOBJ)/%.o)
	@rm -f $@
	ar rcs $@ $^

build/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz.h build/libkj_fuzz.a
	@mkdir -p build/fuzz
	$(FUZZ_CC) $(CFLAGS_BASE) -O1 $(FUZZ_SAN) -fsanitize=fuzzer -Iserver -Itests/fuzz $< \
	    build/libkj_fuzz.a -o $@ $(SERVER_LIBS)

fuzz-build: $(FUZZ_BIN)

# `make fuzz`: each harness for FUZZ_SECONDS, growing build/fuzz-corpus/.
fuzz: deps
	@$(MAKE) --no-print-directory all fuzz-build
	@tests/fuzz/run.sh --keep $(FUZZ_SECONDS) $(FUZZ_BIN)

# `make test`: install what is missing (when root), build, run the unit
# tests and the API tests, and print one "N passed, N failed, N skipped" line.
test: deps
	@$(MAKE) --no-print-directory all $(UNIT_BIN) $(FUZZ_BIN) build/kjudge-server-asan \
	    build/kjudge-runner-fakegpu
	@FUZZ_TEST_SECONDS=$(FUZZ_TEST_SECONDS) tests/run-cpu.sh $(UNIT_BIN)

deps:
	@deploy/deps.sh --test

gpu-test: all
	@tests/gpu/run.sh

run:
	@deploy/run-local.sh

bench:
	@bench/run.sh

# bench/bench_timing_fidelity.py --gpu-time: a CUPTI consumer of its own, the
# reference for the run box's GPU time (bench/cupti_ref.c). Not in `all`.
build/cupti_ref.so: bench/cupti_ref.c
	@mkdir -p build
	$(CC) $(CFLAGS_BASE) -shared -fPIC $(CUDA_INC) $< -o $@ -L$(CUDA)/lib64 -Wl,-rpath,$(CUDA)/lib64 -lcupti

bench-http: bin/kjudge-server
	@python3 bench/bench_http_load.py $(BENCH_HTTP_ARGS)

clean:
	rm -rf build bin
