# Makefile — the user's entry points; a thin wrapper over CMake (CMakeLists.txt
# holds the real build). `make test` and `make bench` first install missing
# system packages through cmake/install-deps.sh (set TB_SKIP_DEPS=1 to skip).
BUILD      ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
SUITE      ?= bench/suites/default.suite
# Debian's python3 carries python3-matplotlib; a pyenv/venv python first on PATH may not.
PYTHON     ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
RUN_ID     := $(shell date -u +%Y%m%d-%H%M%S)-$(shell hostname 2>/dev/null || echo host)
RESULTS    ?= results/$(RUN_ID)
RUN        ?= $(shell ls -1dt results/*/ 2>/dev/null | head -n 1)
NEW        ?= $(RUN)
THRESHOLD  ?= 5%

.PHONY: all build configure deps test bench report compare microbench clean

all: build

deps:
ifneq ($(TB_SKIP_DEPS),1)
	@bash cmake/install-deps.sh all
endif

configure:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(PYTHON) -m pytest -q tests/reports

# The suite exits 1 when a run failed; the report is rendered anyway, then make fails.
bench: deps build
	@rc=0; ./$(BUILD)/trainbench suite $(SUITE) --out $(RESULTS) || rc=$$?; \
	  $(PYTHON) reports/render.py $(RESULTS) && echo "report: $(RESULTS)/report.html"; \
	  exit $$rc

report:
	@test -n "$(RUN)" || { echo "make report: no results/<run-id>/ yet: run make bench, or pass RUN=dir" >&2; exit 2; }
	$(PYTHON) reports/render.py $(RUN)

compare:
	@test -n "$(BASE)" && test -n "$(NEW)" || { echo "usage: make compare BASE=dir [NEW=dir] [THRESHOLD=5%]" >&2; exit 2; }
	$(PYTHON) reports/compare.py $(BASE) $(NEW) --threshold $(THRESHOLD)

microbench: build
	./$(BUILD)/bench/tb_microbench_cpu --benchmark_counters_tabular=true
	@if [ -x ./$(BUILD)/bench/tb_microbench_cuda ]; then ./$(BUILD)/bench/tb_microbench_cuda --benchmark_counters_tabular=true; fi

clean:
	rm -rf $(BUILD)
