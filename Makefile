# ork -- top-level convenience targets. The build itself is CMake; see README.md.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
AARCH64_BUILD ?= build-aarch64
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
FIXTURES   ?= ../shared/fixtures
MODEL      ?= $(FIXTURES)/models/stories260K.gguf
PROMPT     ?= Once upon a time
N_PREDICT  ?= 64
FUZZ_SECONDS ?= 10

.PHONY: all setup build asan fuzz run test test-release test-asan test-fuzz test-aarch64 test-install deb clean help

all: build

help:
	@echo "make run    set up, build, and generate text with the default model ($(MODEL))"
	@echo "make test   set up, build (release + ASan/UBSan + fuzzers) and run the whole suite"
	@echo "make build  release build in $(BUILD)/ (binary: $(BUILD)/ork)"
	@echo "make asan   AddressSanitizer + UBSan build in $(ASAN_BUILD)/"
	@echo "make fuzz   libFuzzer targets (clang) in $(FUZZ_BUILD)/"
	@echo "make test-aarch64  cross-build for aarch64, run kernel + golden tests under QEMU (Cortex-A76)"
	@echo "make test-install  install into a staging prefix, build a program against it with pkg-config"
	@echo "make deb    Debian package of ork, libork and its headers (CPack) in $(BUILD)/"

setup:
	@scripts/setup-deps

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DORK_WERROR=ON >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORK_WERROR=ON -DORK_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DORK_WERROR=ON -DORK_FUZZ=ON >/dev/null
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

run: setup build
	@if [ -f "$(MODEL)" ]; then \
	  echo "+ $(BUILD)/ork run -m $(MODEL) -p \"$(PROMPT)\" -n $(N_PREDICT)"; \
	  $(BUILD)/ork run -m "$(MODEL)" -p "$(PROMPT)" -n $(N_PREDICT); \
	else \
	  echo "make run: no model at $(MODEL)."; \
	  echo "Pass one with: make run MODEL=/path/to/model.gguf [PROMPT='...'] [N_PREDICT=64]"; \
	fi

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: asan
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --output-on-failure -j $(JOBS) -LE slow

# Each libFuzzer target runs briefly from its committed corpus (the corpus itself is replayed
# by the ctest suites above in both builds).
test-fuzz: fuzz
	@set -e; for f in $(FUZZ_BUILD)/fuzz/fuzz_*; do \
	  [ -x "$$f" ] || continue; n=$$(basename $$f); \
	  echo "fuzz: $$n for $(FUZZ_SECONDS)s"; \
	  mkdir -p $(FUZZ_BUILD)/corpus-work/$$n; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
	      $(FUZZ_BUILD)/corpus-work/$$n tests/fuzz/corpus/$${n#fuzz_} 2>$(FUZZ_BUILD)/$$n.log \
	    || { tail -40 $(FUZZ_BUILD)/$$n.log; exit 1; }; \
	done

test: setup
	$(MAKE) test-release
	$(MAKE) test-asan
	$(MAKE) test-fuzz

# Cross-built aarch64 kernel and golden tests under qemu-aarch64 -cpu cortex-a76 (CI runs it after
# `make test`); installs its own packages (scripts/setup-deps --aarch64).
test-aarch64:
	@scripts/setup-deps --aarch64
	AARCH64_BUILD=$(AARCH64_BUILD) JOBS=$(JOBS) scripts/ci-aarch64

# `cmake --install` into a staging prefix, then a program built with pkg-config against it
# (scripts/test-install; CI runs it).
test-install: build
	scripts/test-install $(BUILD)

# Debian package (CPack, CMakeLists.txt "install and package"): $(BUILD)/ork_<version>_<arch>.deb
deb: build
	cd $(BUILD) && cpack -G DEB
	dpkg-deb --info $(BUILD)/ork_*.deb >/dev/null

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD) $(AARCH64_BUILD)
