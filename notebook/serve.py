"""Serves the JupyterLite site of `make notebook` (build/notebook/site) on 127.0.0.1, offline.

    python notebook/serve.py [--port 8001] [--site build/notebook/site]   (--port 0 picks a free port)

With the MIME types the site needs and cross-origin isolation (COOP + COEP; build_scripts/static_server.py):
JupyterLite's kernel then reaches the notebook's files (the `open()` of a notebook file) through
SharedArrayBuffer. Importable: NotebookServer(site, port=0) binds at once; .url is the site's notebook page.
"""
import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build_scripts"))
from static_server import StaticServer, serve_until_interrupted  # noqa: E402

SITE = ROOT / "build" / "notebook" / "site"
NOTEBOOK = "nnwasm-demo.ipynb"


class NotebookServer(StaticServer):
    def __init__(self, site=SITE, port=0, verbose=False):
        site = Path(site)
        if not (site / "jupyter-lite.json").exists():
            raise FileNotFoundError(f"{site} has no JupyterLite site: run `make notebook`")
        super().__init__(site, port, verbose=verbose)
        self.url = f"{self.origin}/notebooks/index.html?path={NOTEBOOK}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--site", type=Path, default=SITE)
    opts = parser.parse_args()
    serve_until_interrupted(NotebookServer(opts.site, opts.port, verbose=True), "notebook")


if __name__ == "__main__":
    main()
