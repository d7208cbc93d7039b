# Set-up and checks. `make demo` and `make test` each create .venv and install
# what is missing, so they work on a fresh machine.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
TORCH   := torch==2.13.0
STAMP   := $(VENV)/.installed

.PHONY: demo test venv bench clean

venv: $(STAMP)

# torch is installed first and pinned: an unpinned `torch` requirement with no
# torch present would pull a multi-GB CUDA build.
$(STAMP): pyproject.toml
	test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip
	$(VPY) -c "import torch" 2>/dev/null || $(VPY) -m pip install -q $(TORCH)
	$(VPY) -m pip install -q -e ".[test]"
	touch $(STAMP)

# The JupyterLab extension is built (and reinstalled) when Node.js is present and
# its sources changed; without Node.js, labextension/build.sh says so and goes on.
demo: $(STAMP)
	labextension/build.sh --install
	mkdir -p build
	$(VPY) scripts/demo.py

# The linters (configured in pyproject.toml) run before the tests, which take minutes.
test: $(STAMP)
	labextension/build.sh --install
	$(VPY) -m ruff check nbprofiler tests bench scripts
	$(VPY) -m mypy
	$(VPY) -m pytest -q

bench: $(STAMP)
	$(VPY) bench/overhead.py
	$(VPY) bench/analysis_speed.py
	$(VPY) bench/leak.py
	$(VPY) bench/fuzz.py
	$(VPY) bench/big_trace.py
	$(VPY) bench/interrupt_sweep.py
	$(VPY) bench/advice_accuracy.py

clean:
	rm -rf build dist .pytest_cache
