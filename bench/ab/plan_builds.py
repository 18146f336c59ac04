"""What the Python halves of the A/B scripts (ab_kernels.py, ab_ops_hosts.py, ab_plans.py) share, as
plan_builds.mjs does for their Node halves: a plan file loaded on a build of kernels.wasm in
wasmtime (with the host's hints; each build compiled here, not taken from the compilation cache),
the warm-up, and timing whole runs or single plan ops with the builds interleaved."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT / "py_runtime"))
os.environ["NNWASM_WASMTIME_CACHE"] = "0"   # read when a host is made: every build compiled afresh

from nnwasm import planfile  # noqa: E402
from nnwasm.host.wasmtime_host import WasmtimeHost  # noqa: E402
from nnwasm.tensor import numel  # noqa: E402
from nnwasm.wasm.runner import WasmRunner  # noqa: E402


def start_node_half(script, *args):
    """Starts the Node half (bench/SCRIPT with ARGS), which then runs alongside the caller's wasmtime
    timing, under the same load; returns a function that waits for it and gives its JSON output
    (raising, with its exit status, if it failed)."""
    proc = subprocess.Popen(["node", str(ROOT / "bench" / "ab" / script), *map(str, args)], stdout=subprocess.PIPE, text=True)

    def result():
        out = proc.communicate()[0]
        if proc.returncode != 0:
            raise RuntimeError(f"bench/ab/{script} exited with status {proc.returncode}")
        return json.loads(out)
    return result


def read_plan(path):
    """The plan file at `path`, read (planfile.PlanFile: .plan, .arena_bytes, .inputs, .ops)."""
    return planfile.read(Path(path).read_bytes())


class Build:
    """A plan file on one build of kernels.wasm: run() runs the whole plan, its inputs zeroed first
    (the memory plan reuses their space once read, and zeros are valid ids); op(i) runs plan op i
    alone (nnw_plan_run_ops) on whatever the arena holds."""

    def __init__(self, pf, wasm_path):
        self.pf = pf
        self.runner = r = WasmRunner(WasmtimeHost(Path(wasm_path).read_bytes()), pf.plan, pf.arena_bytes, [], [], pf.ops)
        self._zeros = [(r.arena + v.offset, bytes(v.dtype.size * numel(v.shape))) for v in pf.inputs]

    def run(self):
        r = self.runner
        for at, zeros in self._zeros:
            r.host.write(at, zeros)
        r.host.call("nnw_plan_run", r.plan, r.arena)

    def op(self, i):
        self.runner.host.call("nnw_plan_run_ops", self.runner.plan, self.runner.arena, i, 1)


def warm_up(builds, rounds=5):
    """Whole runs of every build in turn (wasmtime compiles ahead of time: this only fills caches)."""
    for _ in range(rounds):
        for b in builds:
            b.run()


def time_runs(builds, seconds, per_turn=2, min_runs=5):
    """Whole runs, `per_turn` of one build then the next's, for `seconds` and at least `min_runs`
    each: -> times[build] = [ms, ...]."""
    times = [[] for _ in builds]
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times[0]) < min_runs:
        for b, build in enumerate(builds):
            for _ in range(per_turn):
                t = time.perf_counter()
                build.run()
                times[b].append((time.perf_counter() - t) * 1e3)
    return times


def time_ops(builds, ops, seconds, min_rounds=5):
    """Plan ops `ops` (indices) each run alone on every build, builds interleaved op by op, for
    `seconds` and at least `min_rounds`: -> times[build][j] = [ms, ...] for op ops[j]."""
    times = [[[] for _ in ops] for _ in builds]
    end, rounds = time.perf_counter() + seconds, 0
    while time.perf_counter() < end or rounds < min_rounds:
        for j, i in enumerate(ops):
            for b, build in enumerate(builds):
                t = time.perf_counter()
                build.op(i)
                times[b][j].append((time.perf_counter() - t) * 1e3)
        rounds += 1
    return times
