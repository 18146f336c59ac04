"""Pages for Chromium tests on loopback only: a static server on 127.0.0.1 serving folders under
URL prefixes plus pages held in memory, and a page run that aborts (and lists) every request
leaving that server. Used by tests/test_transformers_js.py and tests/test_generative_page.py."""
import http.server
import threading
import urllib.parse


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
