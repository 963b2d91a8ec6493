# Makefile — the user's entry points; a thin wrapper over CMake (CMakeLists.txt
# holds the real build). `make test` and `make bench` first install missing
# system packages through cmake/install-deps.sh (set TB_SKIP_DEPS=1 to skip).
BUILD      ?= build
BUILD_TYPE ?= Release
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
# Where nvidia-smi lists a GPU, `make bench` runs the GPU suite (it includes the default one).
HAVE_GPU   := $(shell nvidia-smi -L 2>/dev/null | grep -q '^GPU' && echo 1)
SUITE      ?= $(if $(HAVE_GPU),bench/suites/gpu.suite,bench/suites/default.suite)
# Debian's python3 carries python3-matplotlib; a pyenv/venv python first on PATH may not.
PYTHON     ?= $(shell test -x /usr/bin/python3 && echo /usr/bin/python3 || echo python3)
# UTC time, host and this make's process id: two makes started in the same second (two
# terminals, two CI jobs on one runner) write two folders, not one.
RUN_ID     := $(shell date -u +%Y%m%d-%H%M%S)-$(shell hostname 2>/dev/null || echo host)-$(shell echo $$PPID)
RESULTS    ?= results/$(RUN_ID)
RUN        ?= $(shell ls -1dt results/*/ 2>/dev/null | head -n 1)
NEW        ?= $(RUN)
THRESHOLD  ?= 5%
# `make perf` (issue #7): its suite, its folder, and the benchmark conditions of
# docs/performance.md: neither OPENBLAS_CORETYPE nor OPENBLAS_L2_SIZE set (they force
# slower OpenBLAS kernels), and Debian's OpenMP build of OpenBLAS for PyTorch and numpy.
PERF_SUITE   ?= bench/suites/perf.suite
PERF_RESULTS ?= results/perf-$(RUN_ID)
# Debian puts it under the multiarch folder (x86_64-linux-gnu, aarch64-linux-gnu, ...): gcc
# names it; where gcc prints none (not a Debian gcc), uname's machine is the usual first part.
MULTIARCH    ?= $(or $(shell gcc -print-multiarch 2>/dev/null),$(shell uname -m)-linux-gnu)
OPENBLAS_OMP ?= /usr/lib/$(MULTIARCH)/openblas-openmp
PERF_ENV      = env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE LD_LIBRARY_PATH=$(OPENBLAS_OMP)$(if $(LD_LIBRARY_PATH),:$(LD_LIBRARY_PATH))

# `make fuzz` (tests/fuzz/): its own clang build with libFuzzer, ASan and UBSan, then each
# target for FUZZ_SECONDS. New inputs collect in $(FUZZ_BUILD)/corpus/<target>/; a crash or
# hang lands in $(FUZZ_BUILD)/artifacts/<target>/ — fix it, then copy the input into
# tests/fuzz/corpus/<target>/, where `make test` replays every file (ctest fuzz_corpus.*).
FUZZ_BUILD   ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= csv_loader idx_loader suite flags

.PHONY: all build configure deps test bench report compare record microbench peers perf schema fuzz gpu-check clean help

# `make help`: every target, one line each (tests/ci/test_make_targets.py checks it lists .PHONY).
help:
	@printf '%s\n' \
	  'make test        build, then every test (ctest, pytest); installs missing packages first' \
	  'make bench       build, run SUITE into RESULTS (results/<run-id>/), PyTorch peers, micro-benchmarks, report.html' \
	  'make perf        cpu-omp against PyTorch and the sgemm rate: PERF_SUITE into PERF_RESULTS, perf_summary.md' \
	  'make gpu-check   on a GPU machine: build, GPU tests, sanitizers, a short suite, one folder' \
	  'make report      RUN=dir [dir ...] [OUT=file.html]: render report.html (one merged report for several)' \
	  'make compare     BASE=dir [NEW=dir] [THRESHOLD=5%]: the regression gate between two runs' \
	  'make record      [RUN=dir] [NOTE=text]: keep a run under docs/results/<device>-<date>/' \
	  'make peers       [RUN=dir]: add the PyTorch peer rows to a finished run, re-render its report' \
	  'make microbench  build, then the micro-benchmarks (Google Benchmark; CUDA ones where built) on the terminal' \
	  'make schema      rewrite the CSV schema table in README.md and reports/schema.json' \
	  'make fuzz        [FUZZ_SECONDS=60]: the libFuzzer targets in build-fuzz/ (clang)' \
	  'make build       configure and build into BUILD (default build/); make all is the same' \
	  'make configure   cmake -S . -B BUILD with CMAKE_ARGS' \
	  'make deps        install missing packages (cmake/install-deps.sh); TB_SKIP_DEPS=1 skips it elsewhere' \
	  'make clean       remove BUILD' \
	  'make help        this list' \
	  'Variables and CMake options: README.md, "Make variables and CMake options".'

all: build

deps:
ifneq ($(TB_SKIP_DEPS),1)
	@bash cmake/install-deps.sh all
endif

# Two makes at once (make test beside make bench) take turns at the build tree: two
# cmake --build runs in one tree would compile and link the same files at the same time.
BUILD_LOCK := $(if $(shell command -v flock 2>/dev/null),mkdir -p $(BUILD) && flock $(BUILD)/.make.lock)

# `make -j test` must not configure while apt is still installing cmake or a library CMake
# looks for: configure waits for deps (order-only) where a goal that installs (test, bench,
# perf) was asked for; `make build` or `make configure` alone installs nothing.
configure: | $(if $(filter test bench perf,$(MAKECMDGOALS)),deps)
	$(BUILD_LOCK) cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS)

build: configure
	$(BUILD_LOCK) cmake --build $(BUILD) -j $(JOBS)

test: deps build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	TB_CEILINGS=0 TB_TRAINBENCH=$(abspath $(BUILD))/trainbench $(PYTHON) -m pytest -q tests/reports tests/peers tests/bench tests/ci

# After the suite, only its exit 0 (all ran) or 1 (a configuration failed, its row
# written) goes on to the steps that read its folder: bad input (2), an aborted job (3), a
# full disk (74) or a signal (130, 143) stops the make with the suite's own status and
# message, rather than under a line from every later step about a folder that is not there.
# Where the suite kept rows (a signal, a job that ended), the line says how to render them.
SUITE_STOPS = case $$rc in 0|1) ;; *) echo "make: the suite ended with status $$rc: nothing more is run" >&2; \
	  if [ -s "$$out/results.csv" ]; then echo "make: the rows it kept: make report RUN=$$out" >&2; fi; \
	  exit $$rc;; esac

# The suite exits 1 when a run failed; PyTorch peer rows (bench/peers/) are added
# (or recorded as skipped without torch), then the micro-benchmarks write their Google
# Benchmark JSON into the run folder (microbench-cpu.json; on a GPU box also the CUDA
# ones, microbench_cuda.json, and on 2+ GPUs — those CUDA_VISIBLE_DEVICES leaves, as
# `trainbench devices` counts them — the NCCL all-reduce sweep, one rank per GPU, started
# by `trainbench launcher` exactly as the suite starts its ranks). The report is rendered
# last, so it shows all of them; it is rendered even when a step failed, then make fails.
bench: deps build
	@rc=0; out=$(RESULTS); ./$(BUILD)/trainbench suite $(SUITE) --out $(RESULTS) || rc=$$?; \
	  $(SUITE_STOPS); \
	  $(PERF_ENV) $(PYTHON) bench/peers/run_peers.py --suite $(SUITE) --results $(RESULTS) \
	    --trainbench ./$(BUILD)/trainbench || rc=$$?; \
	  if [ -x ./$(BUILD)/bench/tb_microbench_cpu ]; then \
	    ./$(BUILD)/bench/tb_microbench_cpu --benchmark_out=$(RESULTS)/microbench-cpu.json \
	      --benchmark_out_format=json > /dev/null || rc=$$?; \
	  fi; \
	  if [ -n "$(HAVE_GPU)" ] && [ -x ./$(BUILD)/bench/tb_microbench_cuda ]; then \
	    ./$(BUILD)/bench/tb_microbench_cuda --benchmark_filter='memcpy_cuda/d2d|gemm_cuda/mlp-1024x4096x4096x4096x1000/fp32|linear_step_cuda|column_sum_cuda|softmax_xent_loss_grad_cuda/1024x1000' \
	      --benchmark_out=$(RESULTS)/microbench_cuda.json --benchmark_out_format=json > /dev/null || rc=$$?; \
	    ngpu=$$(./$(BUILD)/trainbench devices | grep -c '^gpu '); \
	    if [ "$$ngpu" -ge 2 ] && [ -x ./$(BUILD)/bench/tb_bench_allreduce_nccl ]; then \
	      $$(./$(BUILD)/trainbench launcher $$ngpu) ./$(BUILD)/bench/tb_bench_allreduce_nccl \
	        --csv $(RESULTS)/allreduce_nccl.csv > $(RESULTS)/allreduce_nccl.txt || rc=$$?; \
	      echo "NCCL all-reduce sweep on $$ngpu GPUs: $(RESULTS)/allreduce_nccl.txt"; \
	      grep -E '^# (Wrong elements|Avg bus bandwidth)' $(RESULTS)/allreduce_nccl.txt || true; \
	    else \
	      echo "NCCL all-reduce sweep: skipped: needs 2 GPUs and build/bench/tb_bench_allreduce_nccl (MPI and NCCL), found $$ngpu GPU(s)"; \
	    fi; \
	    $(PYTHON) bench/gpu_targets.py $(RESULTS) || rc=$$?; \
	  fi; \
	  $(PYTHON) reports/render.py $(RESULTS) && echo "report: $(RESULTS)/report.html" || rc=$$?; \
	  exit $$rc

# One folder: RUN/report.html. Several (RUN="a b"): one merged report at OUT, by default
# results/report-<time>.html, never inside an input. Either way every input folder keeps
# its mtime, so re-rendering never makes it the newest run that compare/record pick.
REPORT_OUT = $(or $(OUT),$(if $(word 2,$(RUN)),results/report-$(RUN_ID).html,$(patsubst %/,%,$(RUN))/report.html))
report:
	@test -n "$(RUN)" || { echo "make report: no results/<run-id>/ yet: run make bench, or pass RUN=dir" >&2; exit 2; }
	@$(if $(OUT),,$(if $(word 2,$(RUN)),mkdir -p results;)) keep=$$(mktemp -d); i=0; \
	  for d in $(RUN); do i=$$((i + 1)); touch -r "$$d" "$$keep/$$i" 2>/dev/null || true; done; \
	  rc=0; $(PYTHON) reports/render.py $(RUN) -o "$(REPORT_OUT)" || rc=$$?; \
	  i=0; for d in $(RUN); do i=$$((i + 1)); \
	    if [ -e "$$keep/$$i" ]; then touch -r "$$keep/$$i" "$$d"; fi; done; \
	  rm -rf "$$keep"; exit $$rc

# Keep a run in the repository: docs/results/<device>-<date>/ with a README naming the machine.
record:
	@test -n "$(RUN)" || { echo "make record: no results/<run-id>/ yet: run make bench, or pass RUN=dir" >&2; exit 2; }
	$(PYTHON) reports/record.py $(RUN) --dest docs/results $(if $(NOTE),--note "$(NOTE)")

# The gate's exit status (reports/compare.py --help: 1 regression, 3 a configuration
# failed, 4 missing in NEW, 5 nothing to compare, 6 one run twice, 7 mixed runs) fails
# the target; make itself then exits 2 and prints "Error <status>".
# COMPARE_ARGS: more options, e.g. --allow-missing or --format markdown.
compare:
	@test -n "$(BASE)" && test -n "$(NEW)" || { echo "usage: make compare BASE=dir [NEW=dir] [THRESHOLD=5%] [COMPARE_ARGS=...]" >&2; exit 2; }
	@test $(words $(BASE)) -eq 1 && test $(words $(NEW)) -eq 1 || { echo "make compare: BASE and NEW must be one folder each (got BASE='$(BASE)' NEW='$(NEW)')" >&2; exit 2; }
	$(PYTHON) reports/compare.py "$(BASE)" "$(NEW)" --threshold "$(THRESHOLD)" $(COMPARE_ARGS)

# PyTorch peer rows (bench/peers/) for a finished run: every SUITE entry that runs
# cpu-omp is exported, trained by pytorch_train.py, appended to RUN/results.csv.
peers: build
	@test -n "$(RUN)" || { echo "make peers: no results/<run-id>/ yet: run make bench, or pass RUN=dir" >&2; exit 2; }
	@rc=0; $(PERF_ENV) $(PYTHON) bench/peers/run_peers.py --suite $(SUITE) --results $(RUN) \
	  --trainbench ./$(BUILD)/trainbench || rc=$$?; \
	  $(PYTHON) reports/render.py $(RUN) && echo "report: $(RUN)/report.html" || rc=$$?; exit $$rc

# Issue #7's measurements: the perf suite, its PyTorch peers, the MLPs' cpu-omp and
# torch-cpu repetitions alternating in rounds (paired_ratio.py; also the linear widths
# whose ratio lies within 15% of the target), the OpenBLAS sgemm rate
# at the large MLP's shapes, our GEMM against OpenBLAS's alternating in one process
# (tb_gemm_vs_blas), then the targets table (perf_summary.md) and the report.
perf: deps build
	@./$(BUILD)/trainbench suite $(PERF_SUITE) --dry-run --out $(PERF_RESULTS) > /dev/null
	@load0=$$(cat /proc/loadavg 2>/dev/null); stat0=$$(head -n 1 /proc/stat); t0=$$(date +%s.%N); rc=0; \
	  mkdir -p $(PERF_RESULTS); \
	  echo "load average before: $$load0 (numbers from a busy machine are not comparable)"; \
	  $(PERF_ENV) $(PYTHON) bench/peers/sgemm_rate.py --threads all --out $(PERF_RESULTS)/sgemm-before.json || rc=$$?; \
	  out=$(PERF_RESULTS); $(PERF_ENV) ./$(BUILD)/trainbench suite $(PERF_SUITE) --out $(PERF_RESULTS) || rc=$$?; \
	  $(SUITE_STOPS); \
	  $(PERF_ENV) $(PYTHON) bench/peers/run_peers.py --suite $(PERF_SUITE) --results $(PERF_RESULTS) \
	    --trainbench ./$(BUILD)/trainbench || rc=$$?; \
	  $(PERF_ENV) $(PYTHON) bench/peers/paired_ratio.py --suite $(PERF_SUITE) --results $(PERF_RESULTS) \
	    --trainbench ./$(BUILD)/trainbench || rc=$$?; \
	  $(PERF_ENV) $(PYTHON) bench/peers/sgemm_rate.py --threads all --out $(PERF_RESULTS)/sgemm-after.json || rc=$$?; \
	  $(PERF_ENV) ./$(BUILD)/bench/tb_gemm_vs_blas --threads all --out $(PERF_RESULTS)/gemm-vs-blas.json || rc=$$?; \
	  { echo "$$load0"; cat /proc/loadavg; } > $(PERF_RESULTS)/loadavg.txt 2>/dev/null; \
	  { echo "before $$stat0"; echo "after $$(head -n 1 /proc/stat)"; \
	    echo "wall_s $$(awk "BEGIN { print $$(date +%s.%N) - $$t0 }")"; echo "cpus $$(nproc)"; \
	    times; } > $(PERF_RESULTS)/cpu_usage.txt; \
	  $(PYTHON) bench/peers/perf_summary.py $(PERF_RESULTS) || rc=$$?; \
	  $(PYTHON) reports/render.py $(PERF_RESULTS) && echo "report: $(PERF_RESULTS)/report.html" || rc=$$?; exit $$rc

# The CSV schema's copies (README.md's table, reports/schema.json) rewritten from the
# binary (harness/result_schema.cpp is the source); ctest's schema_docs_match checks them.
schema: configure
	$(BUILD_LOCK) cmake --build $(BUILD) -j $(JOBS) --target trainbench
	cmake -DTRAINBENCH=$(BUILD)/trainbench -DSOURCE_DIR=$(CURDIR) -DMODE=update -P cmake/schema_sync.cmake

fuzz:
ifneq ($(TB_SKIP_DEPS),1)
	@bash cmake/install-deps.sh fuzz
endif
	cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DTB_FUZZ=ON \
	  -DTB_ENABLE_CUDA=OFF -DTB_ENABLE_MPI=OFF -DTB_BUILD_TESTS=OFF -DTB_BUILD_MICROBENCH=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target tb_fuzz_targets
	@rc=0; for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/artifacts/$$t; \
	  echo "fuzz $$t for $(FUZZ_SECONDS) s"; dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
	  ./$(FUZZ_BUILD)/tests/fuzz/tb_fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=4096 \
	    -max_len=4096 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/artifacts/$$t/ $$dict \
	    $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t > $(FUZZ_BUILD)/fuzz-$$t.log 2>&1 \
	    || { rc=1; echo "fuzz $$t: FAILED, input in $(FUZZ_BUILD)/artifacts/$$t/ (log $(FUZZ_BUILD)/fuzz-$$t.log)"; \
	         grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz: invariant)' $(FUZZ_BUILD)/fuzz-$$t.log | head -n 3; }; \
	  grep -E '^stat::(number_of_executed_units|new_units_added)' $(FUZZ_BUILD)/fuzz-$$t.log | tr '\n' ' '; echo; \
	done; exit $$rc

# A GPU machine's first check (.ci/gpu-check): build for its GPUs, GPU tests, sanitizers,
# bench/suites/gpu-check.suite, micro-benchmarks, the NCCL sweep on 2+ GPUs, all in one
# bundle folder (results/gpu-check-<time>-<host>/) within ten minutes; without a usable
# GPU it says why and fails. TB_DEPS_PREFIX: packages unpacked with dpkg -x.
GPU_CHECK_BUILD ?= $(or $(TB_GPU_CHECK_BUILD),build-gpu-check)
gpu-check:
	@PYTHON=$(PYTHON) TB_GPU_CHECK_BUILD=$(GPU_CHECK_BUILD) bash .ci/gpu-check

microbench: build
	./$(BUILD)/bench/tb_microbench_cpu --benchmark_counters_tabular=true
	@if [ -x ./$(BUILD)/bench/tb_microbench_cuda ]; then ./$(BUILD)/bench/tb_microbench_cuda --benchmark_counters_tabular=true; fi

clean:
	rm -rf $(BUILD)
