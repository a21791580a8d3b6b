# scadles — build, test, bench and install.
#
#   make            library (static + shared) and the scadles command
#   make test       unit tests, then integration tests on the embedded broker
#   make SANITIZER=address|undefined test   the same under a sanitizer
#   make SANITIZER=address+undefined unit   unit tests under both at once
#   make SANITIZER=thread unit              unit tests under ThreadSanitizer
#   make bench      benchmarks (print figures)
#   make demo       the main job on the zero-setup default
#   make reproduce / results / check-results  the papers' claims on the
#                   simulator, docs/RESULTS.md from them, a rerun of its checked subset
#   make install PREFIX=/usr/local
#   make fuzz / fuzz-run  libFuzzer targets and a bounded run (fuzz/fuzz.mk)
#
# Every target that needs a dependency depends on `deps`, which installs the
# missing Debian packages once (scripts/deps.sh).

# The version's one source is plugin/include/scadles.h.
sc_ver     = $(shell sed -n 's/^\#define SCADLES_VERSION_$(1) \([0-9]*\)$$/\1/p' plugin/include/scadles.h)
VERSION   := $(call sc_ver,MAJOR).$(call sc_ver,MINOR).$(call sc_ver,PATCH)
SOVERSION := $(call sc_ver,MAJOR)
PREFIX    ?= /usr/local
CC        ?= cc
SANITIZER ?=

ifeq ($(SANITIZER),)
BUILD ?= build
else
BUILD ?= build-$(SANITIZER)
endif

PKGS      := openblas jansson rdkafka zlib libmicrohttpd avro-c libcurl
CORE_PKGS := openblas jansson avro-c
# pkg-config is only asked once the deps stamp exists (it may be missing before).
PKG_CFLAGS      = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS        = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CORE_PKG_CFLAGS = $(shell pkg-config --cflags $(CORE_PKGS) 2>/dev/null)
CORE_PKG_LIBS   = $(shell pkg-config --libs $(CORE_PKGS) 2>/dev/null)

WARN    := -Wall -Wextra -Wstrict-prototypes -Wshadow -Wno-unused-parameter \
	   -Werror=implicit-function-declaration
OPT     ?= -O3
CFLAGS  ?= $(OPT) -g
STD_CFLAGS := -std=c11 -D_DEFAULT_SOURCE -D_POSIX_C_SOURCE=200809L $(WARN)
# core/ is sans-I/O: it is compiled against its own headers, OpenBLAS,
# jansson and libavro (schema parsing) only, so a connectors/ or plugin/
# header or librdkafka's does not resolve there. The runtime's lower folders see only what is below them:
# connectors/base (one clock, one log line, memory give-back) nothing; connectors/file core
# and base; connectors/kafka core, base and file; connectors/sim core and
# base. The runtime programs at the top of connectors/, plugin/, the tests
# and benchmarks see all of the tree.
CONN_DIRS     = connectors/base connectors/file connectors/kafka connectors/sim
CORE_CPPFLAGS = -Icore/include $(CORE_PKG_CFLAGS)
ALL_CPPFLAGS  = -Icore/include -Iconnectors $(CONN_DIRS:%=-I%) -Iplugin/include -Iplugin \
		$(PKG_CFLAGS) -DSC_VERSION_STR='"$(VERSION)"'
CORE_CFLAGS = $(STD_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP $(CORE_CPPFLAGS) $(SAN_FLAGS)
ALL_CFLAGS  = $(STD_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP $(ALL_CPPFLAGS) $(SAN_FLAGS)
LAYER_CFLAGS = $(STD_CFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden -MMD -MP $(SAN_FLAGS)
BASE_CFLAGS  = $(LAYER_CFLAGS) -Iconnectors/base
FILE_CFLAGS  = $(LAYER_CFLAGS) -Icore/include -Iconnectors/base -Iconnectors/file $(PKG_CFLAGS)
KAFKA_CFLAGS = $(LAYER_CFLAGS) -Icore/include -Iconnectors/base -Iconnectors/file \
	       -Iconnectors/kafka $(PKG_CFLAGS)
SIM_CFLAGS   = $(LAYER_CFLAGS) -Icore/include -Iconnectors/base -Iconnectors/sim $(CORE_PKG_CFLAGS)
LDLIBS_ALL  = $(PKG_LIBS) -lpthread -lm
LDLIBS_CORE = $(CORE_PKG_LIBS) -lpthread -lm

ifeq ($(SANITIZER),address)
SAN_FLAGS := -fsanitize=address -fno-omit-frame-pointer
else ifeq ($(SANITIZER),undefined)
SAN_FLAGS := -fsanitize=undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(SANITIZER),address+undefined)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
else ifeq ($(SANITIZER),thread)
# No target_clones: their resolvers run at load time, before the
# ThreadSanitizer runtime is set up, and crash when instrumented.
SAN_FLAGS := -fsanitize=thread -fno-omit-frame-pointer -DSC_NN_NO_CLONES
else ifneq ($(SANITIZER),)
$(error SANITIZER must be address, undefined, address+undefined or thread)
endif

# Sources: every .c file under core/ and connectors/ (and their folders), plus the library part
# of plugin/ (plugin/*.c); the command lives in plugin/cli/.
CORE_SRC := $(sort $(wildcard core/*.c core/*/*.c))
CONN_SRC := $(sort $(wildcard connectors/*.c connectors/*/*.c))
PLUG_SRC := $(sort $(wildcard plugin/*.c))
CLI_SRC  := $(sort $(wildcard plugin/cli/*.c))
LIB_SRC  := $(CORE_SRC) $(CONN_SRC) $(PLUG_SRC)
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)

UNIT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# Test tools: programs the integration tests and benchmarks run (not
# installed); they share the command's option helpers.
TOOL_SRC   := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN   := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
TOOL_OBJ   := $(BUILD)/obj/plugin/cli/cli_opts.o $(BUILD)/obj/plugin/cli/cli_run.o
BENCH_SRC  := $(sort $(wildcard bench/*.c))
BENCH_BIN  := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

STATIC := $(BUILD)/libscadles.a
SHARED := $(BUILD)/libscadles.so.$(VERSION)
CLI    := $(BUILD)/scadles
DEPS_STAMP := $(BUILD)/.deps

.PHONY: all deps test unit integration bench soak demo install uninstall clean style style-check \
	reproduce results check-results docs check-docs bench-tta bench-memory
all: $(STATIC) $(SHARED) $(CLI) $(TOOL_BIN)

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/deps.sh
	@mkdir -p $(BUILD)
	@scripts/deps.sh
	@touch $@

$(BUILD)/obj/core/%.o: core/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) -c $< -o $@

$(BUILD)/obj/connectors/base/%.o: connectors/base/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(BASE_CFLAGS) -c $< -o $@

$(BUILD)/obj/connectors/file/%.o: connectors/file/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(FILE_CFLAGS) -c $< -o $@

$(BUILD)/obj/connectors/kafka/%.o: connectors/kafka/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(KAFKA_CFLAGS) -c $< -o $@

$(BUILD)/obj/connectors/sim/%.o: connectors/sim/%.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SIM_CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(SHARED): $(LIB_OBJ) plugin/libscadles.map
	$(CC) -shared -Wl,-soname,libscadles.so.$(SOVERSION) -Wl,--version-script=plugin/libscadles.map \
		$(SAN_FLAGS) -o $@ $(LIB_OBJ) $(LDLIBS_ALL)
	ln -sf libscadles.so.$(VERSION) $(BUILD)/libscadles.so.$(SOVERSION)
	ln -sf libscadles.so.$(SOVERSION) $(BUILD)/libscadles.so

$(CLI): $(CLI_OBJ) $(STATIC)
	$(CC) $(SAN_FLAGS) -o $@ $(CLI_OBJ) $(STATIC) $(LDLIBS_ALL)

# The unit tests link the allocator built with SC_ALLOC_HOOK (sc_alloc.h:
# it counts allocations and fails the one it is told) ahead of the library,
# so the library's own core/alloc.o is not linked into them.
UNIT_ALLOC := $(BUILD)/obj/tests/alloc_hook.o
$(UNIT_ALLOC): core/alloc.c | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CORE_CFLAGS) -DSC_ALLOC_HOOK -c $< -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(UNIT_ALLOC) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $< $(UNIT_ALLOC) $(STATIC) $(LDLIBS_ALL) -lcmocka

$(BUILD)/tools/%: $(BUILD)/obj/tests/tools/%.o $(TOOL_OBJ) $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $< $(TOOL_OBJ) $(STATIC) $(LDLIBS_ALL)

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(STATIC)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_FLAGS) -o $@ $< $(STATIC) $(LDLIBS_ALL)

# Unit tests run from the top of the tree so tests/data/ paths resolve.
unit: $(UNIT_BIN)
	@scripts/run-unit.sh $(UNIT_BIN)

# The integration tests run the command and load the shared library (plugin
# and exports tests), and the test tools: all are built first, so nothing
# skips for want of them.
integration: $(CLI) $(SHARED) $(TOOL_BIN)
	@BUILD=$(BUILD) scripts/run-integration.sh

test: unit integration

bench: $(BENCH_BIN) $(CLI) $(TOOL_BIN)
	@scripts/deps.sh python3-torch
	@BUILD=$(BUILD) scripts/run-bench.sh $(BENCH_BIN)

# Time to a test accuracy, bsp against scadles (and scadles-cap), on the embedded broker and on
# Apache Kafka (bench/time_to_accuracy.sh, about 30 minutes); by hand, not in
# CI. Writes $(BUILD)/reproduce/tta.txt for `make results`.
bench-tta: $(CLI)
	@SCADLES=$(CURDIR)/$(CLI) OUT=$(CURDIR)/$(BUILD)/reproduce bench/time_to_accuracy.sh

# A worker's resident memory through a backlog that fills its stream buffer
# and drains, beside a run without one (bench/backlog_memory.sh, about 5
# minutes); by hand, not in CI.
bench-memory: $(CLI)
	@BUILD=$(CURDIR)/$(BUILD) bench/backlog_memory.sh

# A 20-minute run with crashes on Apache Kafka (bench/soak.sh); by hand, not
# in CI. Writes its figures into docs/SOAK.md.
soak: $(CLI) $(TOOL_BIN)
	@BUILD=$(CURDIR)/$(BUILD) SOAK_DOC=docs/SOAK.md bench/soak.sh

reproduce: $(CLI)
	SCADLES=$(CURDIR)/$(CLI) OUT=$(CURDIR)/$(BUILD)/reproduce examples/reproduce/run-all.sh

# docs/RESULTS.md's generated blocks from the tables `make reproduce` left in
# $(BUILD)/reproduce (blocks without a table there are kept).
results: $(CLI)
	SCADLES=$(CURDIR)/$(CLI) OUT=$(CURDIR)/$(BUILD)/reproduce SUMMARY_CMD="make results" \
		examples/reproduce/summary.sh >/dev/null
	scripts/results-md.sh $(BUILD)/reproduce "" docs/RESULTS.md > $(BUILD)/RESULTS.md && \
		mv $(BUILD)/RESULTS.md docs/RESULTS.md

# Reruns the subset of the reproductions in docs/RESULTS.md's "check-" blocks
# (a few minutes) and fails when a claim there moved past its tolerance
# (scripts/results-check.py); WRITE=1 writes the blocks instead.
check-results: $(CLI)
	@WRITE=$(WRITE) scripts/check-results.sh $(CURDIR)/$(CLI) $(CURDIR)/$(BUILD)/check-results

demo: $(CLI)
	$(CLI) demo

style:
	clang-format -i $$(git ls-files '*.c' '*.h')

style-check: | $(DEPS_STAMP)
	@clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h') && echo "style-check: ok"

docs: $(CLI)
	$(CLI) config --markdown > docs/CONFIG.md
	scripts/docs-tables.sh $(CLI) docs/STREAMS.md > $(BUILD)/STREAMS.md && \
		mv $(BUILD)/STREAMS.md docs/STREAMS.md
	scripts/docs-tables.sh $(CLI) docs/PLUGIN.md > $(BUILD)/PLUGIN.md && \
		mv $(BUILD)/PLUGIN.md docs/PLUGIN.md

# Fails when docs/CONFIG.md or the tables in docs/STREAMS.md and
# docs/PLUGIN.md are out of date with the property table.
check-docs: $(CLI)
	@$(CLI) config --markdown | diff -u docs/CONFIG.md - && \
		scripts/docs-tables.sh $(CLI) docs/STREAMS.md | diff -u docs/STREAMS.md - && \
		scripts/docs-tables.sh $(CLI) docs/PLUGIN.md | diff -u docs/PLUGIN.md - && \
		echo "check-docs: ok"

$(BUILD)/scadles.pc: Makefile
	@mkdir -p $(BUILD)
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: scadles\nDescription: online distributed training on Kafka streams\nVersion: %s\nRequires.private: %s\nLibs: -L$${libdir} -lscadles\nCflags: -I$${includedir}\n' \
		'$(PREFIX)' '$(VERSION)' '$(PKGS)' > $@

install: all $(BUILD)/scadles.pc
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/bin
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libscadles.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libscadles.so.$(SOVERSION)
	ln -sf libscadles.so.$(SOVERSION) $(DESTDIR)$(PREFIX)/lib/libscadles.so
	install -m 644 plugin/include/scadles.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(BUILD)/scadles.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/
	install -m 755 $(CLI) $(DESTDIR)$(PREFIX)/bin/

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/lib/libscadles.* $(DESTDIR)$(PREFIX)/lib/pkgconfig/scadles.pc \
	      $(DESTDIR)$(PREFIX)/include/scadles.h $(DESTDIR)$(PREFIX)/bin/scadles

clean:
	rm -rf build build-address build-undefined build-address+undefined build-thread build-fuzz

.SECONDARY:

include fuzz/fuzz.mk

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
