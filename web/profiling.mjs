// Profiling in JS: the trace a session records between startProfiling() (or create() with
// {enableProfiling: true}) and endProfiling(), which returns it as an array of Chrome-trace events,
// the same as CPython's end_profiling() writes (py_runtime/nnwasm/profiling.py): "X" events with
// ts and dur in microseconds since profiling started, listed as they end. Save it with
// JSON.stringify(events) and open it in Perfetto or chrome://tracing.
// Times come from performance.now(): in a page that is not cross-origin isolated, browsers coarsen
// it (Chromium: to 100 us), so short ops read 0 there; Node and isolated pages give microseconds.

const PID = globalThis.process?.pid ?? 0;

export class Trace {
  t0 = performance.now();
  events = [];

  /** An event from t0 to t1 (performance.now() readings). */
  add(cat, name, t0, t1, args = {}) {
    const us = (ms) => Math.round(ms * 1e6) / 1e3; // ms -> us, kept to the ns
    this.events.push({ cat, pid: PID, tid: 0, dur: us(t1 - t0), ts: us(t0 - this.t0), ph: "X", name, args });
  }

  session(name, t0) {
    this.add("Session", name, t0, performance.now());
  }

  node(name, opType, kernel, provider, t0, t1) {
    this.add("Node", `${name}_kernel_time`, t0, t1, { op_name: opType, provider, kernel });
  }
}
