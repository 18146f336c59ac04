"""Serves the JupyterLite site of `make notebook` (build/notebook/site) on 127.0.0.1, offline.

    python notebook/serve.py [--port 8001] [--site build/notebook/site]   (--port 0 picks a free port)

With the MIME types the site needs and cross-origin isolation (COOP + COEP): JupyterLite's kernel
then reaches the notebook's files (the `open()` of a notebook file) through SharedArrayBuffer.
Importable: NotebookServer(site, port=0) binds at once; .url is the site's notebook page.
"""
import argparse
import functools
import http.server
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "notebook" / "site"
NOTEBOOK = "nnwasm-demo.ipynb"
MIME_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
              ".json": "application/json", ".whl": "application/zip", ".zip": "application/zip",
              ".onnx": "application/octet-stream", ".nnwp": "application/octet-stream",
              ".ipynb": "application/json", ".png": "image/png", ".css": "text/css", ".html": "text/html"}
ISOLATION_HEADERS = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp",
                     "Cross-Origin-Resource-Policy": "same-origin"}


class Handler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}

    def end_headers(self):
        for name, value in ISOLATION_HEADERS.items():
            self.send_header(name, value)
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):
        if self.server.verbose:
            super().log_message(format, *args)


class NotebookServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64   # JupyterLab asks for many files at once

    def __init__(self, site=SITE, port=0, verbose=False):
        site = Path(site)
        if not (site / "jupyter-lite.json").exists():
            raise FileNotFoundError(f"{site} has no JupyterLite site: run `make notebook`")
        self.verbose = verbose
        super().__init__(("127.0.0.1", port), functools.partial(Handler, directory=str(site)))
        self.origin = f"http://127.0.0.1:{self.server_address[1]}"
        self.url = f"{self.origin}/notebooks/index.html?path={NOTEBOOK}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--site", type=Path, default=SITE)
    opts = parser.parse_args()
    server = NotebookServer(opts.site, opts.port, verbose=True)
    print(f"nnwasm notebook: {server.url}  (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
