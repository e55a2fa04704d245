# tsync - top-level Makefile (GNU make). The two commands that matter:
#
#   make test     install missing Debian packages, then: release build + ctest, ThreadSanitizer
#                 build (clang) + ctest, AddressSanitizer+UBSan build + ctest, pytest, and an
#                 install check (install to a temporary prefix, build examples/ against it
#                 with CMake and with pkg-config, run them)
#   make bench    install missing packages, release build, run every benchmark suite
#                 (scripts/bench-suite.sh: smr rlu oplog cache net rt prudence vmdb hash) into docs/results/,
#                 each directory with COMMAND.txt: the command lines and the machine
#
# Installing packages needs root (apt-get); as another user `make deps` prints the
# `sudo apt-get install ...` line. `make help` lists every target and knob.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build
MAKEFLAGS += --no-print-directory

# ---- knobs (override on the command line: make test SANITIZERS= JOBS=4) -----------------
JOBS        ?= 2
BUILD_TYPE  ?= RelWithDebInfo
WERROR      ?= ON
BENCH       ?= ON
PREFIX      ?= /usr/local
BUILD_DIR   ?= build
TSAN_DIR    ?= build-tsan
ASAN_DIR    ?= build-asan
TSAN_CC     ?= clang
# The C++ compiler of each sanitizer build (tests/cxx): the C compiler's family, so that
# one sanitizer runtime serves both.
TSAN_CXX    ?= clang++
# clang for ASan+UBSan too: it also builds the tsync-cached parser fuzzers (libFuzzer).
ASAN_CC     ?= clang
ASAN_CXX    ?= clang++
# Sanitizer builds keep assertions (no NDEBUG) but optimise a little to keep tests fast.
SAN_BUILD_TYPE ?= Debug
SAN_CFLAGS     ?= -O1 -g
CMAKE       ?= cmake
CTEST       ?= ctest
CMAKE_ARGS  ?=
CTEST_ARGS  ?=
# ctest runs tests side by side, two per CPU: most tests are stress runs of fixed length
# or wait on sockets, so the machine stays busy; a test that needs a CPU to itself says so
# with a RESOURCE_LOCK (tests/CMakeLists.txt). Every test must pass this way beside other
# load (../shared/tools/load-hunt, CONTRIBUTING.md). CTEST_JOBS=1 runs them one by one.
NPROC       := $(shell nproc 2>/dev/null || echo 2)
CTEST_JOBS  ?= $(shell echo $$(( $(NPROC) * 2 )))
# Safety net for tests that set no TIMEOUT property of their own (seconds).
CTEST_TIMEOUT ?= 300
# Debian's interpreter: apt installs python3-pytest and python3-matplotlib for it.
PYTHON      ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
PYTEST_PATHS ?= bench python
# The Python steps run in this venv (system site-packages + what pip must fetch: highspy,
# and tsync-rta from python/ in editable mode); scripts/pyenv.sh makes it on first use.
VENV        ?= .venv
PYTEST_ARGS ?=

# Which steps `make test` runs, in order. `make test SANITIZERS=` skips both sanitizer
# builds; `make test TEST_STEPS="release python"` runs just those. `format` (first: it takes
# seconds) checks every C source against .clang-format with clang-format 14.
SANITIZERS  ?= thread address
TEST_STEPS  ?= format release $(SANITIZERS) python install

# What `make bench` runs: every suite of scripts/bench-suite.sh (smr rlu oplog cache net
# rt prudence vmdb hash), each into docs/results/<suite>/; `make bench SUITES="smr rlu"` runs just those, and
# BENCH_ARGS="smr --seconds 1" runs that one tsync-bench command instead.
SUITES      ?= smr rlu oplog cache net rt prudence vmdb hash
BENCH_ARGS  ?=

# Debian 12 packages. clang and its sanitizer runtimes (which clang only *recommends*; we
# install without recommends) are needed only by the sanitizer steps (TSan, and ASan+UBSan
# with the libFuzzer parser fuzzers), so `make`, `make bench` and `make test SANITIZERS=`
# do not ask for them; `make deps` installs all. memcached is stock memcached, the peer of
# `tsync-bench cached-net`; libmemcached-tools brings memccapable and memcaslap; perl runs
# memcached's own test suite and nutcracker (twemproxy) the proxy pool test (label
# conformance; memcached's source comes from apt-get source, scripts/memcached-source.sh).
# jemalloc, tcmalloc (gperftools) and mimalloc are the allocators `tsync-bench prudence`
# preloads into its peers (malloc + call_rcu). spin (the SPIN model checker) runs the
# protocol models of tests/model/ (label model).
DEB_BASE := make cmake gcc g++ libc6-dev pkg-config spin liburcu-dev libck-dev libjansson-dev \
	libxxhash-dev libevent-dev libmemcached-tools memcached perl nutcracker \
	python3 python3-venv python3-pytest python3-matplotlib python3-numpy python3-yaml \
	python3-tqdm python3-pymemcache libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev
DEB_CLANG := clang libclang-rt-14-dev
# clang-format 14 only for the format step and `make format` (another major version lays
# some constructs out differently).
DEB_FORMAT := clang-format-14
_goals := $(or $(MAKECMDGOALS),$(.DEFAULT_GOAL))
_want_clang := $(or $(filter deps test-thread test-address,$(_goals)),$(and $(filter test,$(_goals)),$(filter thread address,$(TEST_STEPS))))
_want_format := $(or $(filter deps format test-format,$(_goals)),$(and $(filter test,$(_goals)),$(filter format,$(TEST_STEPS))))
DEB_PACKAGES ?= $(DEB_BASE) $(if $(_want_clang),$(DEB_CLANG)) $(if $(_want_format),$(DEB_FORMAT))
EXTRA_DEB_PACKAGES ?=

CTEST_RUN = $(CTEST) --output-on-failure --no-tests=error --timeout $(CTEST_TIMEOUT) \
	-j $(CTEST_JOBS) $(CTEST_ARGS)

export DEBIAN_FRONTEND := noninteractive

.PHONY: all help deps build configure install bench test clean format \
	test-format test-release test-thread test-address test-python test-install

all: build

help:
	@echo "targets:"
	@echo "  make deps      install missing Debian packages (root), or print the sudo line"
	@echo "  make build     release build ($(BUILD_TYPE), -Werror=$(WERROR)) under $(BUILD_DIR)/"
	@echo "  make test      deps + steps: $(TEST_STEPS)"
	@echo "                 steps: format release thread address python install"
	@echo "                 e.g. make test SANITIZERS=   |  make test TEST_STEPS=release"
	@echo "  make test-STEP one step (test-format, test-release, test-thread, test-address,"
	@echo "                 test-python, test-install)"
	@echo "  make format    rewrite the C sources to .clang-format (clang-format 14)"
	@echo "  make bench     build, then the suites $(SUITES) (scripts/bench-suite.sh) into docs/results/"
	@echo "  make install   install to PREFIX=$(PREFIX)"
	@echo "  make clean     remove $(BUILD_DIR)/ $(TSAN_DIR)/ $(ASAN_DIR)/"
	@echo "knobs: JOBS=$(JOBS) WERROR=$(WERROR) BENCH=$(BENCH) CTEST_ARGS='$(CTEST_ARGS)'" \
		"CTEST_JOBS=$(CTEST_JOBS) CMAKE_ARGS='$(CMAKE_ARGS)' PYTHON=$(PYTHON) TSYNC_SKIP_DEPS=1"

# ---- dependencies -------------------------------------------------------------------------
# DEPS_DONE=1 is set for sub-makes of `make test` so the check runs once.
deps:
ifneq ($(DEPS_DONE),1)
	@bash scripts/deps.sh $(DEB_PACKAGES) $(EXTRA_DEB_PACKAGES)
endif

# ---- release build ------------------------------------------------------------------------
# Configuring every time is cheap (about a second) and applies changed knobs.
# CMAKE_INSTALL_PREFIX is set here (not only at install) because tsync.pc is generated at
# configure time with the prefix in it.
configure: deps
	$(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
		-DCMAKE_INSTALL_PREFIX=$(abspath $(PREFIX)) -DTSYNC_WERROR=$(WERROR) \
		-DTSYNC_BUILD_TESTS=ON -DTSYNC_BUILD_BENCH=$(BENCH) -DTSYNC_SANITIZE= $(CMAKE_ARGS)

build: configure
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

install: build
	$(CMAKE) --install $(BUILD_DIR) --prefix $(abspath $(PREFIX))

# ---- tests --------------------------------------------------------------------------------
test: deps
	@bash scripts/run-steps.sh "$(MAKE)" $(TEST_STEPS)

# The sources against .clang-format (no build needed); `make format` rewrites them.
test-format: deps
	@bash scripts/check-format.sh

format: deps
	@bash scripts/check-format.sh --fix

test-release: build
	$(CTEST_RUN) --test-dir $(BUILD_DIR)

# ThreadSanitizer with clang. check-sanitizer.sh first proves that clang can build and run
# a TSan program (clear message if libclang-rt-14-dev is missing) and prints a wrapper
# (setarch -R) when TSan cannot start under this kernel's address-space randomisation.
test-thread: deps
	@bash scripts/check-sanitizer.sh $(TSAN_CC) thread >/dev/null
	$(CMAKE) -S . -B $(TSAN_DIR) -DCMAKE_C_COMPILER=$(TSAN_CC) -DCMAKE_BUILD_TYPE=$(SAN_BUILD_TYPE) \
		-DCMAKE_C_FLAGS_DEBUG="$(SAN_CFLAGS)" -DTSYNC_WERROR=$(WERROR) \
		-DCMAKE_CXX_COMPILER=$(TSAN_CXX) -DCMAKE_CXX_FLAGS_DEBUG="$(SAN_CFLAGS)" \
		-DTSYNC_SANITIZE=thread -DTSYNC_BUILD_TESTS=ON -DTSYNC_BUILD_BENCH=OFF $(CMAKE_ARGS)
	$(CMAKE) --build $(TSAN_DIR) -j $(JOBS)
	@wrap=$$(bash scripts/check-sanitizer.sh $(TSAN_CC) thread); \
	echo "$${wrap:+$$wrap }$(CTEST_RUN) --test-dir $(TSAN_DIR)"; \
	TSAN_OPTIONS="second_deadlock_stack=1 $${TSAN_OPTIONS:-}" \
		$$wrap $(CTEST_RUN) --test-dir $(TSAN_DIR)

test-address: deps
	@bash scripts/check-sanitizer.sh $(ASAN_CC) address >/dev/null
	$(CMAKE) -S . -B $(ASAN_DIR) -DCMAKE_C_COMPILER=$(ASAN_CC) -DCMAKE_BUILD_TYPE=$(SAN_BUILD_TYPE) \
		-DCMAKE_C_FLAGS_DEBUG="$(SAN_CFLAGS)" -DTSYNC_WERROR=$(WERROR) \
		-DCMAKE_CXX_COMPILER=$(ASAN_CXX) -DCMAKE_CXX_FLAGS_DEBUG="$(SAN_CFLAGS)" \
		-DTSYNC_SANITIZE=address -DTSYNC_BUILD_TESTS=ON -DTSYNC_BUILD_BENCH=OFF $(CMAKE_ARGS)
	$(CMAKE) --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS="detect_stack_use_after_return=1 strict_string_checks=1 $${ASAN_OPTIONS:-}" \
	UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1 $${UBSAN_OPTIONS:-}" \
		$(CTEST_RUN) --test-dir $(ASAN_DIR)

# pytest over PYTEST_PATHS that hold tests (pytest exits 5 on "no tests"; a tree with no
# Python tests yet is skipped with a message instead). The tests find the release build
# through TSYNC_BUILD_DIR.
test-python: deps
	@paths=""; \
	for d in $(PYTEST_PATHS); do \
		if [ -d "$$d" ] && find "$$d" -name 'test_*.py' -o -name '*_test.py' | grep -q .; then \
			paths="$$paths $$d"; fi; \
	done; \
	if [ -z "$$paths" ]; then echo "test-python: no Python tests under $(PYTEST_PATHS); skipped"; exit 0; fi; \
	py=$$(bash scripts/pyenv.sh $(PYTHON) $(VENV)); \
	echo "TSYNC_BUILD_DIR=$(abspath $(BUILD_DIR)) $$py -m pytest -q$$paths"; \
	TSYNC_BUILD_DIR=$(abspath $(BUILD_DIR)) MPLBACKEND=Agg \
		$$py -m pytest -q -p no:cacheprovider $(PYTEST_ARGS) $$paths

# Install into a throw-away prefix, then build and run examples/ against it, once through
# CMake's find_package(tsync) and once through pkg-config.
test-install: deps
	@prefix=$$(mktemp -d "$${TMPDIR:-/tmp}/tsync-prefix.XXXXXX"); \
	trap 'rm -rf "$$prefix"' EXIT; \
	$(MAKE) install PREFIX="$$prefix" DEPS_DONE=1; \
	bash scripts/check-install.sh "$$prefix"

# ---- benchmark ----------------------------------------------------------------------------
bench: build
	@if [ -n "$(BENCH_ARGS)" ]; then bash scripts/run-bench.sh $(BUILD_DIR) $(BENCH_ARGS); \
	else py=$$(bash scripts/pyenv.sh $(PYTHON) $(VENV)); \
		bash scripts/bench-suite.sh $(BUILD_DIR) "$$py" $(SUITES); fi

clean:
	rm -rf $(BUILD_DIR) $(TSAN_DIR) $(ASAN_DIR) $(VENV)
