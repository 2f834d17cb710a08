# make run: create .venv, migrate, create the demo user, load the demo, start web + worker.
# make test: create .venv from pyproject.toml and run the whole suite (PostgreSQL + Redis).
# make bench: the import benchmark against perf script and stackcollapse-perf.pl.
# make bench-size: the worker's time and peak memory on a 2M-sample perf.data and a 1 GB
#   perf script text, against their halves (inputs: benchmarks/record_size.sh, as root).
# make screenshots: the README's pictures of the capture page, taken again on the demo
#   (docs/screenshots/make.py: Chromium at /usr/bin/chromium).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: bytecode run demo-password test fuzz fuzz-native bench bench-perf-data bench-symbols bench-browser bench-upload bench-load bench-offcpu bench-dwarf bench-size screenshots clean

# the compiled loops (analysis/perfdata/_scan.c, analysis/offcpu/_intervals.c,
# analysis/importers/_script.c) need a C compiler and the Python headers; on a fresh Debian
# machine they are installed first
$(STAMP): pyproject.toml analysis/_column.h analysis/perfdata/_scan.c \
  analysis/offcpu/_intervals.c analysis/importers/_script.c
	@command -v gcc > /dev/null || { echo "installing gcc"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev; }
	@$(PYTHON) -c "import os, sys, sysconfig; \
	  sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
	  || { echo "installing python3-dev"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-dev; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

# the front-end files the pages load (package.json: plotly.js's basic bundle for the
# service page's charts, perfweb/static_storage.py), pinned by package-lock.json's hashes
NODE_STAMP := node_modules/.package-lock.json
$(NODE_STAMP): package.json package-lock.json
	@command -v npm > /dev/null || { echo "installing npm"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; }
	npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@touch $(NODE_STAMP)

# the modules' bytecode, written beside them as a wheel install does (pip compiles a wheel's
# modules; an editable install leaves them to the first import, and with
# PYTHONDONTWRITEBYTECODE set, as on these machines, every start compiles them again: 40 ms
# of the 0.5 s a report of the diverse capture takes). compileall skips what is up to date.
bytecode: $(STAMP) $(NODE_STAMP)
	@$(PY) -m compileall -q analysis perfweb > /dev/null

# the port `make run` serves on: `make run PORT=8500` when 8000 is taken
PORT ?= 8000

run: bytecode
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	DEBUG=1 $(PY) manage.py rundev 127.0.0.1:$(PORT)

# a new password for the demo user, printed (and shown by the next `make run`)
demo-password: $(STAMP)
	$(PY) manage.py load_demo --reset-password

test: $(STAMP) $(NODE_STAMP)
	$(PY) -m pytest -q -n 2

# the long fuzz run: 100,000 inputs per target (make test runs 150 each)
FUZZ_EXAMPLES ?= 100000
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/fuzz \
	  --hypothesis-show-statistics -k "not crash"

# the compiled extensions built with AddressSanitizer and UndefinedBehaviorSanitizer into
# build/fuzz-native (never over the checkout's .so files) and fuzzed in 2 processes under
# nice: FUZZ_NATIVE_INPUTS in all (make test runs a short one: tests/fuzz/test_native.py)
FUZZ_NATIVE_INPUTS ?= 1000000
fuzz-native: $(STAMP)
	$(PY) -m tests.fuzz.native.run --inputs $(FUZZ_NATIVE_INPUTS)

bench: bytecode
	$(PY) benchmarks/bench_script_import.py $(BENCH_ARGS)

bench-perf-data: bytecode
	$(PY) benchmarks/bench_perf_data_import.py $(BENCH_ARGS)

bench-symbols: bytecode
	$(PY) benchmarks/bench_symbols.py $(BENCH_ARGS)

bench-upload: bytecode
	$(PY) benchmarks/bench_upload.py $(BENCH_ARGS)

bench-load: bytecode
	$(PY) benchmarks/bench_load.py $(BENCH_ARGS)

bench-offcpu: bytecode
	$(PY) benchmarks/bench_offcpu.py $(BENCH_ARGS)

bench-dwarf: bytecode
	$(PY) benchmarks/bench_dwarf.py $(BENCH_ARGS)

bench-size: bytecode
	$(PY) benchmarks/bench_size.py $(BENCH_ARGS)

bench-browser: bytecode
	$(PY) benchmarks/bench_browser.py $(BENCH_ARGS)

screenshots: $(STAMP)
	$(PY) docs/screenshots/make.py

clean:
	rm -rf $(VENV) benchmarks/out
