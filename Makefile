# connscope build. `make` builds everything into build/; `make demo` and
# `make test` first install any missing Debian packages (scripts/deps.sh).
# Quiet by default; `make V=1` shows every command.

BUILD    := build
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CC       := gcc
CLANG    ?= clang
BPFTOOL  ?= $(or $(shell command -v bpftool 2>/dev/null),/usr/sbin/bpftool)

WARN     := -Wall -Wextra -Werror
CFLAGS   ?= -O2 -g
CFLAGS   += $(WARN) -std=gnu11 -MMD -MP -fno-omit-frame-pointer -D_GNU_SOURCE \
            -I$(BUILD) -Ibpf $(DAEMON_INCLUDES)
LDLIBS_BPF := -lbpf -lelf -lz
LDLIBS_JSON := -ljansson
# elfutils' libdw (libdwfl): connscope flamegraph's unwinder.
LDLIBS_DW := $(or $(shell pkg-config --libs libdw 2>/dev/null),-ldw -lelf)

ifeq ($(V),1)
Q    :=
msg  := @true
else
Q    := @
msg  := @printf '  %-9s %s\n'
endif

# daemon/ is in rooms, earliest first: a file includes headers of its own
# room or an earlier one, never a later one (tests/lint/test_includes.py,
# in make lint). Includes stay bare ("engine.h"): each room is on the path.
DAEMON_ROOMS := common source engine analysis render flame service
DAEMON_INCLUDES := $(addprefix -Idaemon/,$(DAEMON_ROOMS))
DAEMON_SRCS := $(wildcard $(addsuffix /*.c,$(addprefix daemon/,$(DAEMON_ROOMS))))

# The loader (BPF skeleton and the run loop) is linked only into the tools.
# Everything else in daemon/ (the pure engine, reports, /proc parsing) is
# shared by the tools and the unit tests.
LOADER_SRCS := daemon/source/probes.c daemon/service/session.c daemon/service/metrics_server.c \
               daemon/service/ctl_server.c daemon/service/ctl_loop.c
# connscope flamegraph: its stack probes (BPF, connscope only), the
# symboliser and the unwinder (read /proc and ELF files with libelf and
# libdw; unit-tested).
FLAME_LOADER_SRCS := daemon/flame/stacks.c
SYMBOL_SRCS := daemon/flame/symbols.c daemon/flame/elf_symbols.c daemon/flame/unwind.c
ENGINE_SRCS := $(filter-out $(LOADER_SRCS) $(FLAME_LOADER_SRCS) $(SYMBOL_SRCS),$(DAEMON_SRCS))
# connscoped's: targets followed in a session, the config file, capabilities.
LOADER_SRCS += daemon/service/session_targets.c daemon/service/session_resolve.c daemon/service/config_file.c daemon/service/privileges.c
LOADER_SRCS += daemon/source/probes_targets.c daemon/source/probes_samples.c daemon/source/probes_cost.c \
               daemon/source/probes_pauses.c
ENGINE_SRCS := $(filter-out $(LOADER_SRCS),$(ENGINE_SRCS))
# connscope's commands: cli/connscope.c dispatches from its command table to
# cli/cmd_*.c, one file a command; connscoped's main is apart, and shares with
# them cli/cli.c (options, numbers, usage errors, the session's defaults).
CLI_SRCS    := $(filter-out cli/connscoped.c,$(wildcard cli/*.c))
DAEMON_MAIN := cli/connscoped.c cli/cli.c
# The programs of the test bed read their numbers as connscope does (number.c).
SERVER_SRCS := $(wildcard server/*.c) daemon/common/number.c
LOADGEN_SRCS := $(wildcard bench/csload*.c) daemon/engine/hist.c daemon/common/number.c
# The unit tests are in daemon/'s rooms too (tests/unit/ROOM/), and
# tests/unit/server/ for server/'s parser; their shared helpers
# (events.h, json_check.h) stay in tests/unit/.
UNIT_TEST_SRCS := $(wildcard tests/unit/*/test_*.c)
UNIT_SRCS   := $(UNIT_TEST_SRCS) $(wildcard server/http_parse.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))

ENGINE_OBJS := $(call obj,$(ENGINE_SRCS))
LOADER_OBJS := $(call obj,$(LOADER_SRCS))
FLAME_LOADER_OBJS := $(call obj,$(FLAME_LOADER_SRCS))
SYMBOL_OBJS := $(call obj,$(SYMBOL_SRCS))
CLI_OBJS    := $(call obj,$(CLI_SRCS))
DAEMON_OBJS := $(call obj,$(DAEMON_MAIN))
SERVER_OBJS := $(call obj,$(SERVER_SRCS))
LOADGEN_OBJS := $(call obj,$(LOADGEN_SRCS))
UNIT_OBJS   := $(call obj,$(UNIT_SRCS))

# Debian packages in sets (scripts/deps.sh): `make` needs only the build
# set; demo, bench and test add theirs on first use.
DEPS_OK  := $(BUILD)/.deps-build-ok
TEST_DEPS_OK := $(BUILD)/.deps-test-ok
SKEL     := $(BUILD)/connscope.skel.h
PROGRAMS := $(BUILD)/connscope $(BUILD)/connscoped $(BUILD)/csserver $(BUILD)/csload

# connscope with the tests' hooks (tests/hooks/: the probes made to do on
# purpose what the kernel does by chance), for the integration tests only;
# never installed.
TEST_HOOK_OBJS := $(call obj,$(wildcard tests/hooks/*.c))
TEST_PROGRAMS := $(BUILD)/connscope-test

.DELETE_ON_ERROR:
.PHONY: all deps test-deps demo test unit-test unit-test-inproc integration-test clean

all: $(PROGRAMS) $(TEST_PROGRAMS)

# ---- set-up: Debian packages, installed once (stamp re-made when the list changes)
$(BUILD)/.deps-%-ok: scripts/deps.sh
	$(Q)mkdir -p $(BUILD)
	$(Q)bash scripts/deps.sh $*
	$(Q)touch $@

deps: $(DEPS_OK)
test-deps: $(TEST_DEPS_OK)

# ---- BPF: vmlinux.h from the running kernel's BTF, object, skeleton
$(BUILD)/vmlinux.h: | $(DEPS_OK)
	$(msg) BTF $@
	$(Q)test -r /sys/kernel/btf/vmlinux || { echo "connscope: /sys/kernel/btf/vmlinux is missing: this kernel was built without CONFIG_DEBUG_INFO_BTF" >&2; exit 1; }
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@

# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> is in
# the multiarch folder that -target bpf does not search.
BPF_SYS_INCLUDES := -idirafter /usr/include/$(shell $(CC) -dumpmachine)

# Every bpf/NAME.bpf.c is an object of its own, $(BUILD)/NAME.bpf.o, and a
# skeleton, $(BUILD)/NAME.skel.h, whose structures are named NAME_bpf
# (connscope_bpf, stacks_bpf).
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) $(BUILD)/vmlinux.h
	$(msg) BPF $@
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -D__BPF__ \
		-I$(BUILD) -Ibpf $(BPF_SYS_INCLUDES) -Wall -Werror -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(msg) SKEL $@
	$(Q)$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# The objects are kept once their skeletons are made (make would delete
# them as intermediate files): asan-build copies connscope's.
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(wildcard bpf/*.bpf.c))
.SECONDARY: $(BPF_OBJS)

# connscope flamegraph's stack probes: bpf/stacks.bpf.c.
STACKS_SKEL := $(BUILD)/stacks.skel.h

# ---- user space
$(BUILD)/obj/%.o: %.c | $(DEPS_OK)
	$(msg) CC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -c $< -o $@

# Loader and CLI objects include the skeleton; the loader the pause probes' too.
PAUSES_SKEL := $(BUILD)/pauses.skel.h
$(LOADER_OBJS) $(CLI_OBJS) $(DAEMON_OBJS): $(SKEL) $(PAUSES_SKEL)
$(FLAME_LOADER_OBJS) $(CLI_OBJS): $(SKEL) $(STACKS_SKEL)

# connscope top draws with ncurses (wide-character build: UTF-8 sparklines).
$(BUILD)/connscope: $(CLI_OBJS) $(LOADER_OBJS) $(FLAME_LOADER_OBJS) $(SYMBOL_OBJS) $(ENGINE_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@ $(LDLIBS_BPF) $(LDLIBS_DW) $(LDLIBS_JSON) -lm -lncursesw -ltinfo

$(TEST_HOOK_OBJS): $(SKEL)
$(BUILD)/connscope-test: $(CLI_OBJS) $(LOADER_OBJS) $(FLAME_LOADER_OBJS) $(SYMBOL_OBJS) $(ENGINE_OBJS) $(TEST_HOOK_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@ $(LDLIBS_BPF) $(LDLIBS_DW) $(LDLIBS_JSON) -lm -lncursesw -ltinfo

$(BUILD)/connscoped: $(DAEMON_OBJS) $(LOADER_OBJS) $(ENGINE_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@ $(LDLIBS_BPF) $(LDLIBS_JSON) -lm

# The reference server keeps frame pointers (already in CFLAGS) so that
# user stacks unwind through it.
$(BUILD)/csserver: $(SERVER_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@ -lm

# csload --tls speaks HTTPS through OpenSSL; nothing else links it.
$(BUILD)/csload: $(LOADGEN_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@ -lssl -lcrypto -lm

# The unit tests need Criterion: the test set.
$(call obj,$(UNIT_TEST_SRCS)): | $(TEST_DEPS_OK)
$(call obj,$(UNIT_TEST_SRCS)): CFLAGS += -Itests/unit
$(BUILD)/unit-tests: $(UNIT_OBJS) $(ENGINE_OBJS) $(SYMBOL_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) $^ -o $@ -lcriterion $(LDLIBS_DW) $(LDLIBS_JSON) -lm

# The same tests in one process, for valgrind (tests/unit/inproc/: why).
# Without Criterion's opaque assertion calls, GCC 12 inlines more and then
# takes open_memstream()'s buffer (a local's address handed to libc) for a
# dangling pointer in test_flame_tree.c: a false positive, silenced here.
INPROC_OBJS := $(patsubst %.c,$(BUILD)/obj-inproc/%.o,$(UNIT_SRCS) tests/unit/inproc/runner.c)
$(BUILD)/obj-inproc/%.o: %.c | $(DEPS_OK)
	$(msg) CC-INPROC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -Wno-dangling-pointer -Itests/unit/inproc -Itests/unit -c $< -o $@

$(BUILD)/unit-tests-inproc: $(INPROC_OBJS) $(ENGINE_OBJS) $(SYMBOL_OBJS)
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_DW) $(LDLIBS_JSON) -lm

# ---- the two commands of the README
demo: $(BUILD)/.deps-demo-ok $(PROGRAMS)
	$(Q)bash scripts/demo.sh $(BUILD)

# Then every fixture's reports against tests/golden/out.
unit-test: $(BUILD)/unit-tests $(BUILD)/connscope
	$(Q)$(BUILD)/unit-tests --jobs 2
	$(Q)bash tests/golden/golden.sh check $(BUILD)

# The same tests in one process, then the same fixtures: what `make test`
# runs. Criterion's process a test costs some 20 s of two CPUs; make test
# runs every test three times in one process (this build, then under ASan
# + UBSan and under valgrind), so a test that passes only after another
# would still have to pass in this order thrice.
unit-test-inproc: $(BUILD)/unit-tests-inproc $(BUILD)/connscope
	$(Q)$(BUILD)/unit-tests-inproc
	$(Q)bash tests/golden/golden.sh check $(BUILD)

# csidle (mk/bench.mk): the scale test's connections.
integration-test: $(TEST_DEPS_OK) $(PROGRAMS) $(TEST_PROGRAMS) $(BUILD)/bench/csidle
	$(Q)bash tests/integration/run.sh $(BUILD)

# The whole check: the builds on every core (plain and ASan + UBSan side
# by side), then scripts/test-all.sh: unit tests, integration tests (every
# one, plain and sanitized), linters, short fuzzing, valgrind, arranged so
# that nothing that times a server shares the CPUs with work that would
# distort it. Under 15 minutes on two cores from a clean clone.
# Builds run in parallel unless make already has a job server (make -jN).
BUILD_JOBS = $(if $(findstring jobserver,$(MAKEFLAGS)),,-j$(NPROC))
test: $(TEST_DEPS_OK)
	$(Q)$(MAKE) --no-print-directory $(BUILD_JOBS) $(PROGRAMS) $(TEST_PROGRAMS) \
		$(BUILD)/unit-tests-inproc $(BUILD)/bench/csidle asan-build
	$(Q)bash scripts/test-all.sh

clean:
	$(Q)rm -rf $(BUILD)

# Further targets (benchmarks, fuzzing, sanitizers, linters) live in mk/.
-include $(wildcard mk/*.mk)

-include $(shell find $(BUILD)/obj $(BUILD)/obj-inproc -name '*.d' 2>/dev/null)
