# Tessera: the two set-up commands are `make run` and `make test`; each installs what is missing.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run demo test bench format clean

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

format:
	git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
