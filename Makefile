# Tessera: the two set-up commands are `make run` and `make test`; each installs what is missing.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run demo test bench fuzz fuzz-libfuzzer format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# A dev cluster on this machine (server + agent; Ctrl-C stops it). `make demo` places the seed
# examples on a simulated cluster and exits.
run: build
	./$(BUILD_DIR)/tessera dev

demo: build
	./$(BUILD_DIR)/tessera demo

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

bench: build
	./$(BUILD_DIR)/bench/tessera_bench --benchmark_counters_tabular=true

# The fuzz harness of the test suite, for longer (FUZZ_SECONDS, a fresh seed each run); with clang,
# the same harness under libFuzzer with AddressSanitizer, in its own build directory.
FUZZ_SECONDS ?= 300
fuzz: build
	./$(BUILD_DIR)/tests/tessera_fuzz --seconds $(FUZZ_SECONDS)

fuzz-libfuzzer: deps
	CC=clang CXX=clang++ cmake -S . -B $(BUILD_DIR)-libfuzzer -G Ninja \
	  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_LIBFUZZER=ON \
	  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address"
	cmake --build $(BUILD_DIR)-libfuzzer -j $(JOBS) --target tessera_libfuzzer
	mkdir -p $(BUILD_DIR)-libfuzzer/corpus && cp -n tests/data/seeds/*.yaml $(BUILD_DIR)-libfuzzer/corpus/
	./$(BUILD_DIR)-libfuzzer/tests/tessera_libfuzzer -max_total_time=$(FUZZ_SECONDS) \
	  -rss_limit_mb=4096 $(BUILD_DIR)-libfuzzer/corpus

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
