"""`python -X importtime` for Pyodide, whose interpreter ignores the flag: a meta path finder
that times every module's execution (cumulative and self, in ms). Run inside Pyodide before the
imports to measure; `report()` gives [(module, self ms, cumulative ms)], slowest first."""
import importlib.abc
import importlib.machinery
import sys
import time

_times = {}
_stack = []


class _TimedLoader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        _stack.append(0.0)
        t = time.perf_counter()
        try:
            self._loader.exec_module(module)
        finally:
            total = (time.perf_counter() - t) * 1000
            nested = _stack.pop()
            if _stack:
                _stack[-1] += total
            _times[module.__name__] = (total - nested, total)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _TimedFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _TimedLoader(spec.loader)
                return spec
        return None


sys.meta_path.insert(0, _TimedFinder())


def report():
    return sorted(((m, s, c) for m, (s, c) in _times.items()), key=lambda r: -r[1])
