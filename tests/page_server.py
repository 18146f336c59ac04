"""Pages for Chromium tests on loopback only: running(server), the one way a test's fixture serves
a page (demo/serve.py's DemoServer from demo_serve(), notebook/serve.py's NotebookServer, a plain
folder); serve(), a static server on 127.0.0.1 serving folders under URL prefixes plus pages held
in memory; and run_page(), a page run that aborts (and lists) every request leaving that server."""
import contextlib
import functools
import http.server
import importlib.util
import threading
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@functools.lru_cache(maxsize=None)
def demo_serve():
    """demo/serve.py as a module (a script, not in a package: loaded by path under the name
    demo_serve, so that notebook/serve.py, imported as `serve`, does not shadow it)."""
    spec = importlib.util.spec_from_file_location("demo_serve", ROOT / "demo" / "serve.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.contextmanager
def running(server):
    """server (bound, not yet serving) serving in a daemon thread for the block; then shut down,
    closed and its thread joined."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def serve(roots, pages):
    """A static server on 127.0.0.1 (port picked by the OS): pages maps a path to its HTML, roots a
    URL prefix to the folder it serves (nothing outside that folder). Call .shutdown() when done."""
    class Handler(http.server.SimpleHTTPRequestHandler):
        extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, ".mjs": "text/javascript",
                          ".js": "text/javascript", ".wasm": "application/wasm", ".json": "application/json"}

        def translate_path(self, path):
            path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
            for prefix, folder in roots.items():
                if path.startswith(prefix):
                    target = (folder / path[len(prefix):]).resolve()
                    return str(target) if target.is_relative_to(folder.resolve()) else "/nonexistent"
            return "/nonexistent"

        def do_GET(self):
            page = pages.get(urllib.parse.urlsplit(self.path).path)
            if page is not None:
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            super().do_GET()

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64   # a page asks for many files at once (see demo/serve.py)

    server = Server(("127.0.0.1", 0), Handler)
    server.origin = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def run_page(page, url, origin, timeout_ms=600_000):
    """window.results of the page at url once set, the page errors, and the requests that would
    have left origin (aborted)."""
    outside, errors = [], []

    def route(r):
        if r.request.url.startswith(origin):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    def on_error(e):
        errors.append(str(e))

    page.route("**/*", route)
    page.on("pageerror", on_error)
    try:
        page.goto(url)
        page.wait_for_function("window.results !== undefined", timeout=timeout_ms)
        return page.evaluate("window.results"), errors, outside
    finally:
        page.remove_listener("pageerror", on_error)
        page.unroute("**/*")
