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

.PHONY: run demo-password test fuzz bench bench-perf-data bench-symbols bench-browser bench-upload bench-load bench-offcpu bench-dwarf bench-size screenshots clean

# the compiled loops (analysis/perfdata/_scan.c, analysis/offcpu/_intervals.c,
# analysis/aggregate/_weigh.c, analysis/importers/_script.c, analysis/export/_fold.c) need a
# C compiler and the Python headers; on a fresh Debian machine they are installed first
$(STAMP): pyproject.toml analysis/_column.h analysis/perfdata/_scan.c analysis/offcpu/_intervals.c \
  analysis/aggregate/_weigh.c analysis/importers/_script.c analysis/export/_fold.c
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

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	DEBUG=1 $(PY) manage.py rundev

# a new password for the demo user, printed (and shown by the next `make run`)
demo-password: $(STAMP)
	$(PY) manage.py load_demo --reset-password

test: $(STAMP)
	$(PY) -m pytest -q -n 2

# the long fuzz run: 100,000 inputs per target (make test runs 150 each)
FUZZ_EXAMPLES ?= 100000
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/fuzz \
	  --hypothesis-show-statistics -k "not crash"

bench: $(STAMP)
	$(PY) benchmarks/bench_script_import.py $(BENCH_ARGS)

bench-perf-data: $(STAMP)
	$(PY) benchmarks/bench_perf_data_import.py $(BENCH_ARGS)

bench-symbols: $(STAMP)
	$(PY) benchmarks/bench_symbols.py $(BENCH_ARGS)

bench-upload: $(STAMP)
	$(PY) benchmarks/bench_upload.py $(BENCH_ARGS)

bench-load: $(STAMP)
	$(PY) benchmarks/bench_load.py $(BENCH_ARGS)

bench-offcpu: $(STAMP)
	$(PY) benchmarks/bench_offcpu.py $(BENCH_ARGS)

bench-dwarf: $(STAMP)
	$(PY) benchmarks/bench_dwarf.py $(BENCH_ARGS)

bench-size: $(STAMP)
	$(PY) benchmarks/bench_size.py $(BENCH_ARGS)

bench-browser: $(STAMP)
	$(PY) benchmarks/bench_browser.py $(BENCH_ARGS)

screenshots: $(STAMP)
	$(PY) docs/screenshots/make.py

clean:
	rm -rf $(VENV) benchmarks/out
