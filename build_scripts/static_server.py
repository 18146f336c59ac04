"""What demo/serve.py and notebook/serve.py share: a static file server on 127.0.0.1 with the MIME
types the pages need and cross-origin isolation (`python -m http.server` sets neither).

StaticServer(directory, port=0) binds at once; run it with serve_forever() in a thread and stop it
with shutdown(), or from a script with serve_until_interrupted(). IsolatedHandler is the handler
class to subclass (demo/serve.py's serves only some URL prefixes).
"""
import functools
import http.server

MIME_TYPES = {".wasm": "application/wasm", ".mjs": "text/javascript", ".js": "text/javascript",
              ".json": "application/json", ".whl": "application/zip", ".zip": "application/zip",
              ".onnx": "application/octet-stream", ".nnwp": "application/octet-stream",
              ".ipynb": "application/json", ".png": "image/png", ".css": "text/css", ".html": "text/html"}

# Cross-origin isolation (COOP + COEP) keeps SharedArrayBuffer available to the page (the demo's
# threads; JupyterLite's kernel reads the notebook's files through it); CORP lets our own files
# load under require-corp and no other origin embed them.
ISOLATION_HEADERS = {"Cross-Origin-Opener-Policy": "same-origin", "Cross-Origin-Embedder-Policy": "require-corp",
                     "Cross-Origin-Resource-Policy": "same-origin"}


class IsolatedHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}

    def end_headers(self):
        for name, value in ISOLATION_HEADERS.items():
            self.send_header(name, value)
        if self.server.csp:
            self.send_header("Content-Security-Policy", self.server.csp)
        # Rebuilt wheels and edited modules must show up on reload.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format, *args):
        if self.server.verbose:
            super().log_message(format, *args)


class StaticServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    # A page asks for many files at once (the demo ~20 with its preloads, JupyterLab more);
    # socketserver's default backlog of 5 refused some on a busy machine ("Failed to fetch").
    request_queue_size = 64

    def __init__(self, directory, port=0, handler=IsolatedHandler, verbose=False, csp=None):
        """handler: an IsolatedHandler subclass; verbose: log requests; csp: a
        Content-Security-Policy header for every response, None: none."""
        self.verbose = verbose
        self.csp = csp
        super().__init__(("127.0.0.1", port), functools.partial(handler, directory=str(directory)))

    @property
    def port(self):
        return self.server_address[1]

    @property
    def origin(self):
        return f"http://127.0.0.1:{self.port}"


def serve_until_interrupted(server, name):
    """Serves until Ctrl-C, having printed the server's .url."""
    with server:
        print(f"nnwasm {name}: {server.url}  (Ctrl-C stops)", flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
