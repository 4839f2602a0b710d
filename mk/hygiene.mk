# Hygiene: fuzzing, sanitizers, valgrind, linters.
#
#   make fuzz           every libFuzzer target for FUZZ_SECONDS (60) each
#   make fuzz-short     every target for FUZZ_TEST_SECONDS (8) each, after
#                       replaying its committed corpus (regressions included)
#   make test-asan      the unit tests and every integration test, built with
#                       ASan + UBSan (+ LeakSanitizer) in build-asan/
#   make test-valgrind  every unit test under valgrind memcheck
#   make lint           clang-tidy (.clang-tidy; the BPF program too), cppcheck,
#                       each BPF part compiled alone, the size rules
#                       and clang-format (.clang-format) over FORMAT_SRCS
#   make test-hygiene   all of these but the long fuzz run, one after the
#                       other (`make test` runs the same steps: see
#                       scripts/test-all.sh)
#
# Included by the Makefile, so $(BUILD), $(SKEL), $(ENGINE_SRCS),
# $(DAEMON_SRCS), $(DAEMON_ROOMS), $(DAEMON_INCLUDES), $(Q) and $(msg) are
# the Makefile's.

.PHONY: fuzz fuzz-short fuzz-build test-asan test-unit-sanitized test-asan-unit asan-unit-run test-asan-integration asan-reports \
	asan-reports-clean \
	integration-both asan-build test-valgrind \
	lint lint-commands lint-includes lint-bpf-parts lint-tidy lint-tidy-bpf lint-cppcheck lint-format test-hygiene \
	clean-hygiene

# `make clean` removes these builds too.
clean: clean-hygiene
clean-hygiene:
	$(Q)rm -rf $(FUZZ_BUILD) $(ASAN_BUILD)

# One step after the other, each with its time.
HYGIENE_STEPS := lint fuzz-short test-valgrind test-asan
test-hygiene:
	$(Q)for step in $(HYGIENE_STEPS); do \
		start=$$(date +%s); \
		$(MAKE) --no-print-directory $(BUILD_JOBS) $$step || exit 1; \
		echo "  HYGIENE   $$step passed in $$(( $$(date +%s) - start )) s"; \
	done

# ---- fuzzing ---------------------------------------------------------------
#
# One binary per target in build-fuzz/, clang's libFuzzer with ASan and
# UBSan (any UB aborts: -fno-sanitize-recover). Each run reads the committed
# seeds (tests/fuzz/corpus/TARGET/, never written to) and grows a scratch
# corpus in build-fuzz/corpus/TARGET/; a crash is saved as
# build-fuzz/artifacts/TARGET-crash-* and fails the run: replay it with
#   build-fuzz/TARGET build-fuzz/artifacts/TARGET-crash-...

FUZZ_BUILD   := build-fuzz
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
# fuzz-short, in `make test`: each target this long (the committed corpora
# are replayed whole first, whatever the time).
FUZZ_TEST_SECONDS ?= 8
FUZZ_TARGETS := fuzz_trace fuzz_engine fuzz_http_parse fuzz_ctl_proto
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -D_GNU_SOURCE -MMD -MP -fno-omit-frame-pointer $(WARN) \
		$(FUZZ_SAN) -fsanitize=fuzzer-no-link -Ibpf $(DAEMON_INCLUDES) -Iserver -Itests/fuzz
# Inputs bigger than this say nothing more: a few dozen records, or a
# request header with its pipelined followers.
FUZZ_MAX_LEN_fuzz_trace      := 16384
FUZZ_MAX_LEN_fuzz_engine     := 16384
FUZZ_MAX_LEN_fuzz_http_parse := 4096
# A snapshot of a few threads and listeners, framed.
FUZZ_MAX_LEN_fuzz_ctl_proto  := 32768
FUZZ_DICT_fuzz_http_parse    := -dict=tests/fuzz/http.dict
# A config file of a few dozen lines (and the 1024-byte line limit).
FUZZ_TARGETS                 += fuzz_config
# connscoped's metrics endpoint: a head is at most 8 KB there, a little over here.
FUZZ_TARGETS                 += fuzz_metrics_request
FUZZ_MAX_LEN_fuzz_metrics_request := 8192
FUZZ_DICT_fuzz_metrics_request    := -dict=tests/fuzz/http.dict
FUZZ_MAX_LEN_fuzz_config     := 4096
FUZZ_DICT_fuzz_config        := -dict=tests/fuzz/config.dict
# -rss_limit_mb: a hostile trace must not make the engine take gigabytes;
# -timeout: nor make it (or the reports) spin on one input.
FUZZ_FLAGS = -timeout=10 -rss_limit_mb=1024 -max_len=$(FUZZ_MAX_LEN_$*) $(FUZZ_DICT_$*) \
	     -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$*-

fuzz_obj = $(patsubst %.c,$(FUZZ_BUILD)/obj/%.o,$(1))
FUZZ_ENGINE_OBJS := $(call fuzz_obj,$(ENGINE_SRCS))

$(FUZZ_BUILD)/obj/%.o: %.c | $(TEST_DEPS_OK)
	$(msg) FUZZ-CC $<
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_BUILD)/fuzz_trace $(FUZZ_BUILD)/fuzz_engine $(FUZZ_BUILD)/fuzz_ctl_proto: $(FUZZ_BUILD)/%: \
		$(FUZZ_BUILD)/obj/tests/fuzz/%.o $(FUZZ_ENGINE_OBJS)
	$(msg) FUZZ-LD $@
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@ $(LDLIBS_JSON) -lm

$(FUZZ_BUILD)/fuzz_http_parse: $(call fuzz_obj,tests/fuzz/fuzz_http_parse.c server/http_parse.c)
	$(msg) FUZZ-LD $@
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@

# connscoped's config parser (daemon/service/config.c) and its metrics
# endpoint's request reading (daemon/service/metrics_request.c) with the engine's objects.
$(FUZZ_BUILD)/fuzz_config $(FUZZ_BUILD)/fuzz_metrics_request: $(FUZZ_BUILD)/%: $(FUZZ_BUILD)/obj/tests/fuzz/%.o \
		$(FUZZ_ENGINE_OBJS)
	$(msg) FUZZ-LD $@
	$(Q)$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ -o $@ $(LDLIBS_JSON) -lm

fuzz-build: $(addprefix $(FUZZ_BUILD)/,$(FUZZ_TARGETS))

# fuzz-run-TARGET [SECONDS=N]: one target
SECONDS ?= $(FUZZ_SECONDS)
fuzz-run-%: $(FUZZ_BUILD)/%
	$(Q)mkdir -p $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/artifacts
	$(Q)echo "  FUZZ      $* for $(SECONDS) s"
	$(Q)$(FUZZ_BUILD)/$* $(FUZZ_FLAGS) -max_total_time=$(SECONDS) \
		$(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* >$(FUZZ_BUILD)/$*.log 2>&1 \
		|| { tail -n 60 $(FUZZ_BUILD)/$*.log; echo "fuzz: $* FAILED (log: $(FUZZ_BUILD)/$*.log)"; exit 1; }
	$(Q)grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb|^Done' $(FUZZ_BUILD)/$*.log \
		| sed 's/^/            /'

fuzz: fuzz-build
	$(Q)for t in $(FUZZ_TARGETS); do \
		$(MAKE) --no-print-directory fuzz-run-$$t SECONDS=$(FUZZ_SECONDS) || exit 1; done

# A target per CPU at a time (each fuzzer is one thread), each one's lines
# kept together.
fuzz-short: fuzz-build
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) --output-sync=target \
		$(addprefix fuzz-run-,$(FUZZ_TARGETS)) SECONDS=$(FUZZ_TEST_SECONDS)

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

# ---- sanitizers: ASan + UBSan + LeakSanitizer --------------------------------
#
# build-asan/ has build/'s layout (connscope, csserver, csload, unit-tests),
# so tests/integration/run.sh runs against it unchanged. The BPF object and
# skeleton are build/'s, copied with their times kept so that the sub-make
# finds them up to date (they do not depend on the user-space flags).
#
# Every sanitizer report goes to build-asan/sanitizer/ (log_path): a report
# from a process the tests kill, or one whose exit status nobody checks,
# still fails the run. LeakSanitizer runs at each process's exit.

ASAN_BUILD  := build-asan
# gcc leaves float-cast-overflow out of -fsanitize=undefined: ask for it.
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
	       -fno-omit-frame-pointer
ASAN_LOGS   := $(ASAN_BUILD)/sanitizer
ASAN_ENV     = ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/$(ASAN_LOGS)/asan \
	       UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(ASAN_LOGS)/ubsan \
	       CS_PLAIN_BUILD=$(CURDIR)/$(BUILD)

# Every integration test runs under ASan too, with every program of
# build-asan/ sanitized (connscope, connscoped, and the test bed: csserver,
# csload, csidle) but for the client whose latencies the scenarios compare
# with connscope's: that is build/'s (tests/integration/lib.sh says why).
# Two at a time, but for the exclusive ones (tests/integration/run.sh says
# which, and why).
asan-build: $(SKEL) $(TEST_DEPS_OK)
	$(Q)mkdir -p $(ASAN_BUILD)
	$(Q)cp -p $(BUILD)/vmlinux.h $(BUILD)/connscope.bpf.o $(SKEL) $(DEPS_OK) $(TEST_DEPS_OK) $(ASAN_BUILD)/
	$(Q)CFLAGS='$(ASAN_CFLAGS)' $(MAKE) --no-print-directory $(BUILD_JOBS) BUILD=$(ASAN_BUILD) \
		all $(ASAN_BUILD)/unit-tests-inproc $(ASAN_BUILD)/bench/csidle
	$(Q)echo '$(ASAN_CFLAGS)' >$(ASAN_BUILD)/SANITIZED

# In this order (not as prerequisites, which -j would run side by side).
test-asan:
	$(Q)$(MAKE) --no-print-directory asan-reports-clean
	$(Q)$(MAKE) --no-print-directory test-asan-unit
	$(Q)$(MAKE) --no-print-directory test-asan-integration
	$(Q)$(MAKE) --no-print-directory asan-reports

# A run starts from an empty report directory.
asan-reports-clean:
	$(Q)rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)

# The unit tests under ASan and under valgrind, side by side with make -j
# (one process each), on the builds as they are: make test runs this beside
# the integration tests that use build-asan/, which must not be rebuilt
# under them (make test builds everything first).
test-unit-sanitized: asan-unit-run test-valgrind

test-asan-unit: asan-build
	$(Q)$(MAKE) --no-print-directory asan-unit-run

asan-unit-run:
	$(Q)mkdir -p $(ASAN_LOGS)
	$(Q)echo "  ASAN      unit tests"
	$(Q)$(ASAN_ENV) $(ASAN_BUILD)/unit-tests-inproc

test-asan-integration: asan-build
	$(Q)mkdir -p $(ASAN_LOGS)
	$(Q)echo "  ASAN      integration tests"
	$(Q)$(ASAN_ENV) bash tests/integration/run.sh --build $(ASAN_BUILD) --lanes 2

# `make test`: both builds' integration tests in one run, ONLY=exclusive or
# ONLY=shared (the group; see tests/integration/run.sh).
integration-both: $(PROGRAMS) $(TEST_PROGRAMS) $(BUILD)/bench/csidle asan-build
	$(Q)mkdir -p $(ASAN_LOGS)
	$(Q)$(ASAN_ENV) bash tests/integration/run.sh --build $(BUILD) --build $(ASAN_BUILD) \
		--lanes 2 $(if $(ONLY),--only $(ONLY))

# Any report fails the run, whoever wrote it.
asan-reports:
	$(Q)if [ -n "$$(ls -A $(ASAN_LOGS) 2>/dev/null)" ]; then \
		for f in $(ASAN_LOGS)/*; do echo "== $$f"; cat "$$f"; done; \
		echo "test-asan: sanitizer reports above (in $(ASAN_LOGS)/)"; exit 1; fi
	$(Q)echo "test-asan: no sanitizer report, no leak"

# ---- valgrind ------------------------------------------------------------------
#
# Every unit test under memcheck, in one process: build/unit-tests-inproc
# is the same test sources built against tests/unit/inproc/ (Criterion's
# assertions, run one after the other; its header says why: 7 CPU minutes
# of valgrind start-ups for Criterion's process per test, 7 seconds so).
# Any memcheck error, or a definite or indirect leak, fails the run.

VALGRIND_LOG := $(BUILD)/valgrind.log
test-valgrind: $(BUILD)/unit-tests-inproc
	$(Q)echo "  VALGRIND  unit tests"
	$(Q)valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect \
		--show-leak-kinds=definite,indirect --error-exitcode=99 --vgdb=no \
		--log-file=$(VALGRIND_LOG) $(BUILD)/unit-tests-inproc \
		|| { cat $(VALGRIND_LOG); echo "test-valgrind: FAILED (log: $(VALGRIND_LOG))"; exit 1; }
	$(Q)if [ -s $(VALGRIND_LOG) ]; then cat $(VALGRIND_LOG); echo "test-valgrind: reports above"; exit 1; fi
	$(Q)echo "test-valgrind: no error, no leak"

# ---- linters -------------------------------------------------------------------
#
# clang-tidy with the checks of .clang-tidy (each disabled one says why
# there); cppcheck with warning, performance and portability checks. A
# false positive is silenced on its line (NOLINT(check) for clang-tidy,
# `// cppcheck-suppress id` on the line before for cppcheck) beside a
# comment that says why the code is right; there is no suppressions file.
# cppcheck does not see the BPF programs (*.bpf.c): it cannot follow
# vmlinux.h and the BPF helper macros; clang-tidy checks them below.

LINT_SRCS   := $(filter-out %.bpf.c,$(DAEMON_SRCS) $(wildcard cli/*.c server/*.c bench/*.c))
# -isystem: the generated skeleton is not ours to lint; the analyzer models
# tell clang what libbpf does with what the skeleton allocates.
LINT_CFLAGS := -std=gnu11 -D_GNU_SOURCE -include tests/lint/analyzer_models.h -isystem $(BUILD) \
	       -Ibpf $(DAEMON_INCLUDES) -Iserver -Ibench
# The static analyzer (clang-analyzer-*) is nine tenths of clang-tidy's
# time. Its budget of explored states per function, 225 000 by default,
# is cut to 50 000 here: the same checkers, inlining across functions as
# deep, 58 CPU seconds over the tree instead of 200 (clang 14, two CPUs),
# and the same findings. `make lint-tidy LINT_ANALYZER_NODES=225000` runs
# the full budget.
LINT_ANALYZER_NODES ?= 50000
NPROC       := $(shell nproc 2>/dev/null || echo 2)

lint: lint-commands lint-includes lint-sizes lint-bpf-parts lint-format lint-cppcheck lint-tidy lint-tidy-bpf

# No .c file over 600 lines in the programs' folders (the BPF object's
# included), no function over 80 anywhere, headers too
# (tests/lint/test_sizes.py).
lint-sizes:
	$(Q)echo "  SIZES     daemon cli server bpf bench tests"
	$(Q)python3 tests/lint/test_sizes.py daemon cli server bpf functions:bench functions:tests

# Every command a test runs is in scripts/deps.sh's test set, or comes
# with every Debian system.
lint-commands:
	$(Q)echo "  COMMANDS  tests/integration scripts"
	$(Q)python3 tests/lint/test_commands.py

# daemon/'s rooms: no file includes a header of a later room (the order is
# the Makefile's DAEMON_ROOMS, passed here so that the two cannot differ).
lint-includes:
	$(Q)echo "  INCLUDES  daemon/ rooms: $(DAEMON_ROOMS)"
	$(Q)python3 tests/lint/test_includes.py $(DAEMON_ROOMS)

# One file a clang-tidy process: clang 14's analyzer keeps some checkers'
# function names (ValistChecker's va_start, vfprintf...) as pointers into
# the first file's identifier table; in the next file of the same process
# another name may sit at that address, and a call to it is taken for
# va_start ("Initialized va_list is leaked" at a call of a function with
# no va_list), by chance of the heap's layout.
lint-tidy: $(SKEL) $(PAUSES_SKEL) $(STACKS_SKEL) | $(TEST_DEPS_OK)
	$(Q)echo "  TIDY      $(words $(LINT_SRCS)) files"
	$(Q)printf '%s\n' $(LINT_SRCS) | xargs -P $(NPROC) -n 1 sh -c \
		'clang-tidy --quiet --warnings-as-errors="*" "$$@" -- $(LINT_CFLAGS) \
		-Xclang -analyzer-config -Xclang max-nodes=$(LINT_ANALYZER_NODES) 2>/dev/null' clang-tidy

# Every part of the BPF programs (bpf/*.bpf.h) compiles alone: a unit that
# includes it and nothing else, twice (its include guard), for -target bpf
# with the objects' flags. A part that leans on what another included
# before it fails here.
BPF_PARTS := $(wildcard bpf/*.bpf.h)
lint-bpf-parts: $(BUILD)/vmlinux.h
	$(Q)echo "  BPF-PARTS $(words $(BPF_PARTS)) parts, each alone"
	$(Q)for part in $(notdir $(BPF_PARTS)); do \
		printf '#include "%s"\n#include "%s"\n' $$part $$part | \
		$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -D__BPF__ -I$(BUILD) -Ibpf \
			-Wall -Werror -x c -c - -o /dev/null || { echo "lint-bpf-parts: $$part does not compile alone"; exit 1; }; \
	done

# The BPF programs, for -target bpf against this kernel's vmlinux.h, with
# one check fewer: a program's parameters are its hook's signature, used or
# not (misc-unused-parameters).
LINT_BPF_SRCS := $(wildcard bpf/*.bpf.c)
lint-tidy-bpf: $(BUILD)/vmlinux.h | $(TEST_DEPS_OK)
	$(Q)echo "  TIDY-BPF  $(LINT_BPF_SRCS)"
	$(Q)clang-tidy --quiet --warnings-as-errors="*" \
		--checks=-misc-unused-parameters $(LINT_BPF_SRCS) \
		-- -target bpf -D__TARGET_ARCH_$(ARCH) -D__BPF__ -I$(BUILD) -Ibpf $(BPF_SYS_INCLUDES) 2>/dev/null

# The files already in .clang-format's style, which must stay so: the
# reference server, the load tools and the BPF programs. The rest of the
# tree joins this list once it is formatted. `clang-format -i $(FORMAT_SRCS)`
# puts a file back in style.
FORMAT_SRCS := $(wildcard server/*.[ch] bench/*.[ch] bench/bpf/*.c bpf/*.c bpf/*.h)
lint-format: | $(TEST_DEPS_OK)
	$(Q)echo "  FORMAT    $(words $(FORMAT_SRCS)) files"
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)

lint-cppcheck: | $(TEST_DEPS_OK)
	$(Q)echo "  CPPCHECK  $(words $(LINT_SRCS)) files"
	$(Q)cppcheck --quiet --error-exitcode=1 --inline-suppr --enable=warning,performance,portability \
		--std=c11 -D_GNU_SOURCE -D__linux__ -D__x86_64__ -Ibpf $(DAEMON_INCLUDES) -Iserver -Ibench \
		-j $(NPROC) $(LINT_SRCS)
