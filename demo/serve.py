"""Serves the demo on 127.0.0.1 from the repository root, so /demo/, /web/ and /dist/web/ resolve,
with the MIME types and cross-origin isolation headers it needs (build_scripts/static_server.py).

    python demo/serve.py [--port 8000]      (--port 0 picks a free port)

Importable: DemoServer(port=0) binds at once; .url is the demo's address; run it in a thread
with serve_forever() and stop it with shutdown(). The handler class is DemoRequestHandler.
"""
import argparse
import posixpath
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "build_scripts"))
from bundle_demo import ensure_bundle  # noqa: E402
from static_server import IsolatedHandler, StaticServer, serve_until_interrupted  # noqa: E402

# A strict Content-Security-Policy the demo and the library work under (no inline script, no eval,
# workers from this origin; tests/test_browser_csp.py): `--csp` or DemoServer(csp=STRICT_CSP).
STRICT_CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'"


# Only what the demo loads; the rest of the tree (.git, .venv, ...) stays private.
SERVED_PREFIXES = ("/demo/", "/web/", "/dist/web/")


class DemoRequestHandler(IsolatedHandler):
    def send_head(self):
        raw = urllib.parse.unquote(self.path.split("?", 1)[0].split("#", 1)[0])
        path = posixpath.normpath(raw) + ("/" if raw.endswith("/") and raw != "/" else "")
        if path in ("/", "/demo"):
            self.send_response(302)
            self.send_header("Location", "/demo/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if not path.startswith(self.server.prefixes):
            self.send_error(404, "Not served by the demo server")
            return None
        return super().send_head()


class DemoServer(StaticServer):
    def __init__(self, port=8000, root=ROOT, verbose=False, extra_prefixes=(), handler=DemoRequestHandler,
                 csp=None):
        """extra_prefixes: more URL path prefixes to serve; handler: a DemoRequestHandler subclass
        (bench/startup/bench_startup.py serves onnxruntime-web with one that counts the bytes it sends);
        csp: a Content-Security-Policy header for every response (STRICT_CSP), None: none.
        Serving this checkout, it first rebuilds demo/app.bundle.mjs if a module changed since."""
        if Path(root).resolve() == ROOT and ensure_bundle() and verbose:
            print("rebuilt demo/app.bundle.mjs (a module had changed)")
        self.prefixes = SERVED_PREFIXES + tuple(extra_prefixes)
        super().__init__(root, port, handler, verbose=verbose, csp=csp)

    @property
    def url(self):
        return f"{self.origin}/demo/"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--csp", action="store_true", help=f"send Content-Security-Policy: {STRICT_CSP}")
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    args = parser.parse_args(argv)
    if not (ROOT / "dist" / "web" / "nnwasm-web.json").exists():
        print("warning: dist/web/ is not built yet: run `python build_scripts/build_web.py`")
    serve_until_interrupted(DemoServer(args.port, verbose=not args.quiet, csp=STRICT_CSP if args.csp else None), "demo")


if __name__ == "__main__":
    main()
