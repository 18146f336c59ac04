"""Profiling as onnxruntime's: with SessionOptions.enable_profiling, a session records Chrome-trace
events ("X" complete events: ts and dur in microseconds since profiling started) and
end_profiling() writes them as a JSON list to `<profile_file_prefix>_<date>_<time>.json`:

    {"cat": "Session", "name": "model_loading_uri" | "model_loading_array" | "session_initialization"
            | "prepare_input_shapes" | "model_run", ...}
    {"cat": "Node", "name": "<node>_kernel_time", "args": {"op_name": ONNX op type,
            "provider": execution provider, "kernel": what ran it}, ...}

A WASM plan is timed op by op on the host's clock (time.perf_counter_ns) around one
nnw_plan_run_ops call per op (kernels.wasm has no clock import): a duration includes one host
call (~1.6 us in wasmtime, ~1 us in Pyodide). "kernel" is the plan op (kernels_c/ops.def) for
WASM ops, the registry function for numpy nodes, "host" for host ops and the runner for
If/Loop/Scan, whose bodies' ops get events of their own inside the control node's span.
Without profiling nothing here runs: runners get prof=None and take their usual path.
"""
import json
import os
import threading
import time

WASM = "WasmExecutionProvider"


def node_label(node):
    """The name a node goes by in traces and plan files: its name, or for an unnamed node its
    first output's (unique within a graph)."""
    return node.name or next((o for o in node.outputs if o), node.op_type)


class Profiler:
    clock = staticmethod(time.perf_counter_ns)

    def __init__(self, prefix):
        self.prefix = prefix
        self.start_ns = time.time_ns()   # get_profiling_start_time_ns(): wall clock, as onnxruntime's
        self._t0 = self.clock()
        self.pid = os.getpid()
        self.tid = getattr(threading, "get_native_id", threading.get_ident)()
        self.events = []

    def add(self, cat, name, t0, t1, args=None):
        """An event from t0 to t1 (clock() readings); events are listed as they end."""
        self.events.append({"cat": cat, "pid": self.pid, "tid": self.tid, "dur": (t1 - t0) / 1000,
                            "ts": (t0 - self._t0) / 1000, "ph": "X", "name": name, "args": args or {}})

    def session(self, name, t0):
        self.add("Session", name, t0, self.clock())

    def node(self, name, op_type, kernel, provider, t0, t1):
        self.add("Node", f"{name}_kernel_time", t0, t1, {"op_name": op_type, "provider": provider, "kernel": kernel})

    def write(self):
        """Writes the trace into the working directory; returns the file name."""
        now = time.time()
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(now)) + f"_{int(now * 1000) % 1000:03d}"
        name = f"{self.prefix}_{stamp}.json"
        with open(name, "w", encoding="utf-8") as f:
            f.write(to_json(self.events))
        return name


def to_json(events):
    """The trace file's text: one event a line, as onnxruntime writes it."""
    return "[\n" + ",\n".join(json.dumps(e, separators=(",", ":")) for e in events) + "\n]\n"
