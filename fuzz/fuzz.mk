# fuzz/fuzz.mk — libFuzzer targets (included by the Makefile).
#
#   make fuzz                          build the targets and their seed corpora
#   make fuzz-run FUZZ_SECONDS=60      replay the regression corpora, then run
#                                      each target for FUZZ_SECONDS; fails on any
#                                      crash, leak, timeout or failed property
#   make fuzz-run FUZZ_SEED=1          the same with libFuzzer's seed fixed
#                                      (repeatable runs; CI's)
#   make fuzz-run FUZZ_JOBS=2          two targets at once (one core each)
#
# The library is compiled a second time with clang (from Debian), coverage
# instrumentation, ASan and UBSan into build-fuzz/; each target is one
# fuzz/fuzz_*.c. Seeds come from the library's own encoders (a target run
# with SC_FUZZ_SEEDS=DIR writes them); fuzz/regress/<target>/ holds the
# inputs that once failed, replayed by every fuzz-run.

FUZZ_CC      ?= clang
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TIMEOUT ?= 10
FUZZ_SEED    ?=
FUZZ_JOBS    ?= 1
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# The targets, like core/, see core/include, OpenBLAS and jansson only.
FUZZ_CFLAGS   = $(STD_CFLAGS) -O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN) -MMD -MP \
		$(CORE_CPPFLAGS)
FUZZ_SRC     := $(sort $(wildcard fuzz/fuzz_*.c))
FUZZ_BIN     := $(FUZZ_SRC:fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_LIB_OBJ := $(CORE_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
FUZZ_LIB     := $(FUZZ_BUILD)/libscadles-core.a
FUZZ_STAMP   := $(FUZZ_BUILD)/.deps

.PHONY: fuzz fuzz-run

# clang and its compiler-rt (libFuzzer, sanitizer runtimes) are needed here only.
$(FUZZ_STAMP): scripts/deps.sh | $(DEPS_STAMP)
	@mkdir -p $(FUZZ_BUILD)
	@scripts/deps.sh clang libclang-rt-dev
	@touch $@

$(FUZZ_BUILD)/obj/%.o: %.c | $(FUZZ_STAMP)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -c $< -o $@

$(FUZZ_LIB): $(FUZZ_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/fuzz_%: $(FUZZ_BUILD)/obj/fuzz/fuzz_%.o $(FUZZ_LIB)
	$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_SAN) -o $@ $< $(FUZZ_LIB) $(LDLIBS_CORE)

fuzz: $(FUZZ_BIN)
	@FUZZ_BUILD=$(FUZZ_BUILD) fuzz/seeds.sh $(FUZZ_BIN)

fuzz-run: fuzz
	@FUZZ_BUILD=$(FUZZ_BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_TIMEOUT=$(FUZZ_TIMEOUT) \
		FUZZ_SEED=$(FUZZ_SEED) FUZZ_JOBS=$(FUZZ_JOBS) fuzz/run.sh $(FUZZ_BIN)

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)
