"""Bounded memory: the bytes a session may hold in kernels.wasm's linear memory.

`SessionOptions.add_session_config_entry("session.memory_limit_bytes", "N")` (JS: the session
option `memoryLimitBytes`, or onnxruntime-web's `extra: {session: {memory_limit_bytes: "N"}}`)
caps what the session's plans hold there: each plan's op words and its arena (init ops' buffers,
activations), summed over every plan of every prepared variant, and the weights blocks they share
(wasm/weights.py: each counted once, charged before it is allocated). A plan that would pass it
is refused before anything is allocated or copied, with the bytes it needs: at creation for static
shapes, at the run for symbolic dims (an arena grown per run, wasm/runner.py), where the session
first drops its variants for other shapes, as when kernels.wasm's memory runs out
(session._drop_other_variant). A plan that alone needs more than the limit is refused at once
(`hopeless`), so the variants that fit are kept and the next run with smaller dims reuses them.
Feeds are refused before any copy when their bytes together pass the limit. Without the entry the
bound is what wasm32 addresses (plans past it are refused by wasm/plan.py's own check).

What the limit does not count: the numpy provider's arrays (host memory, not kernels.wasm's), and
outputs kept on the "wasm" device (IOBinding), which belong to the caller once made.
"""
import weakref

from .errors import InvalidArgument, MemoryLimitExceeded

CONFIG_KEY = "session.memory_limit_bytes"
WASM32_BYTES = 1 << 32


def parse(value, where):
    """The limit a config value gives (a decimal string of an int >= 1), or InvalidArgument."""
    try:
        n = int(value, 10)
    except (TypeError, ValueError):
        n = None
    if n is None or n < 1 or str(value).strip() != str(value):
        raise InvalidArgument(f"{where} must be a number of bytes (an integer >= 1, such as '1073741824'), got {value!r}")
    return n


def budget(sess_options):
    """The session's Budget, or None without the config entry."""
    value = sess_options._config.get(CONFIG_KEY)
    return None if value is None else Budget(parse(value, f"session config '{CONFIG_KEY}'"))


class Budget:
    """The session's bytes in kernels.wasm: every live holder (a WasmRunner: `held_bytes()`) is
    counted; a holder asks `charge` before it allocates."""

    def __init__(self, limit):
        self.limit = limit
        self._holders = weakref.WeakSet()

    def used(self, but=None):
        return sum(h.held_bytes() for h in list(self._holders) if h is not but)

    def charge(self, holder, nbytes, what):
        """Lets holder hold nbytes from now on (instead of what it holds), or raises
        MemoryLimitExceeded saying how many bytes `what` needs."""
        if nbytes > self.limit:
            raise MemoryLimitExceeded(f"{what} needs {nbytes} bytes of kernels.wasm memory, more than the session's "
                                      f"memory limit of {self.limit} bytes ({CONFIG_KEY})", hopeless=True)
        others = self.used(but=holder)
        if others + nbytes > self.limit:
            raise MemoryLimitExceeded(f"{what} needs {nbytes} bytes of kernels.wasm memory and the session's other "
                                      f"plans hold {others}: more than its memory limit of {self.limit} bytes "
                                      f"({CONFIG_KEY})")
        self._holders.add(holder)


def check_feeds(budget, feeds, nbytes):
    """Refuses feeds ({name: value}) whose bytes (nbytes(value)) together pass the limit, before
    anything is copied."""
    if budget is None:
        return
    sizes = {name: nbytes(v) for name, v in feeds.items()}
    total = sum(sizes.values())
    if total > budget.limit:
        big = max(sizes, key=sizes.get)
        raise MemoryLimitExceeded(f"the feeds hold {total} bytes ('{big}': {sizes[big]}), more than the session's "
                                  f"memory limit of {budget.limit} bytes ({CONFIG_KEY}): refused before any copy",
                                  hopeless=True)
