# Benchmarks: `make bench` measures connscope's overhead, accuracy
# under load, engine speed and memory at scale, and prints one table. It is
# not a test and `make test` does not run it. Needs root and an idle
# machine; takes about 80 minutes (the overhead rows: 60-65). See
# bench/README.md.

BENCH_BUILD := $(BUILD)/bench
BENCH_TOOLS := $(BENCH_BUILD)/floor $(BENCH_BUILD)/floor.bpf.o $(BENCH_BUILD)/csidle \
               $(BENCH_BUILD)/trace_amplify

.PHONY: bench bench-tools

bench-tools: $(PROGRAMS) $(BENCH_TOOLS)

bench: $(BUILD)/.deps-bench-ok bench-tools
	$(Q)python3 bench/run.py --build $(BUILD) $(BENCH_ARGS)

# ---- the floor: an empty program on each of connscope's hooks
$(BENCH_BUILD)/floor_hooks.inc: bpf/connscope.bpf.c $(wildcard bpf/*.bpf.h) bench/floor_hooks.sh
	$(msg) GEN $@
	$(Q)mkdir -p $(@D)
	$(Q)bash bench/floor_hooks.sh bpf/connscope.bpf.c $(wildcard bpf/*.bpf.h) > $@

# Same flags as the probes' object (see the Makefile's BPF rules).
$(BENCH_BUILD)/floor.bpf.o: bench/bpf/floor.bpf.c $(BENCH_BUILD)/floor_hooks.inc $(BUILD)/vmlinux.h
	$(msg) BPF $@
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -D__BPF__ \
		-I$(BUILD) -I$(BENCH_BUILD) -Ibpf -Wall -Werror -c $< -o $@

# The loader opens floor.bpf.o beside itself at run time (no skeleton).
$(BENCH_BUILD)/floor: $(BUILD)/obj/bench/floor.o | $(BENCH_BUILD)/floor.bpf.o
	$(msg) LINK $@
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_BPF)

# ---- load helpers
$(BENCH_BUILD)/csidle: $(BUILD)/obj/bench/csidle.o
	$(msg) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -pthread $^ -o $@

$(BENCH_BUILD)/trace_amplify: $(BUILD)/obj/bench/trace_amplify.o $(ENGINE_OBJS)
	$(msg) LINK $@
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_JSON) -lm
