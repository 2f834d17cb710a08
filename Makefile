# make run: create .venv, migrate, create the demo user, load the demo, start web + worker.
# make test: create .venv from pyproject.toml and run the whole suite (PostgreSQL + Redis).
# make bench: the import benchmark against perf script and stackcollapse-perf.pl.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test fuzz bench bench-perf-data bench-symbols bench-browser bench-load bench-offcpu bench-dwarf clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo
	DEBUG=1 $(PY) manage.py rundev

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

bench-load: $(STAMP)
	$(PY) benchmarks/bench_load.py $(BENCH_ARGS)

bench-offcpu: $(STAMP)
	$(PY) benchmarks/bench_offcpu.py $(BENCH_ARGS)

bench-dwarf: $(STAMP)
	$(PY) benchmarks/bench_dwarf.py $(BENCH_ARGS)

bench-browser: $(STAMP)
	$(PY) benchmarks/bench_browser.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) benchmarks/out
