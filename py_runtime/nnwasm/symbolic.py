"""Symbolic dims: one prepared variant serves every input shape that makes the same decisions.

A model whose inputs have symbolic dims (a decoder's past length) used to be prepared again (shape
inference, optimizer, partitioning, lowering, plan load) for every new input shape. Instead, the
first preparation runs with each symbolic dim as a `Sym`, an integer expression whose value comes
from the dims bound at the moment (`bound`): the value of the run being traced while preparing,
the value of the current run while running. Arithmetic on a Sym gives a Sym, so the sizes,
offsets and arguments a lowering computes stay expressions of the dims, and a plan's words are
evaluated again for each run's dims (wasm/runner.py). Every decision taken on a Sym while
tracing (a comparison, a conversion to int, a hash) is recorded as a guard: a later binding may
reuse the prepared variant only where every guard comes out the same (torch.dynamo's guards;
tract's TDim for the expressions). A conversion to int (range(), struct.pack, a kernel's
workspace query) records `expr == value`: whatever was computed from it holds for that value
only. So reuse is never wrong, only sometimes impossible, and then the variant is traced anew.

Sym is deliberately not an int subclass: C code reads an int subclass's value without asking it,
which would leak the traced value unguarded. It registers as numbers.Integral.
"""
import ast
import numbers
import os
import operator
import re
import threading

DEBUG = bool(os.environ.get("NNWASM_SYMBOLIC_DEBUG"))   # print where a dim was specialised
_state = threading.local()   # .bind: {name: int} or None; .key: an object per binding; .guards: set or None


class Sym:
    """An integer expression over named dims: a polynomial (sums of products of dims, normalised,
    so (P + S) - P is S and P - P is the int 0), whose atoms are dim names or `//` / `%` nodes."""
    __slots__ = ("poly", "op", "a", "b", "_key", "_val")

    def __init__(self, poly=None, op=None, a=None, b=None):
        self.poly = poly   # ((monomial, coef), ...): a monomial is a sorted tuple of atoms
        self.op, self.a, self.b = op, a, b   # a // or % node when poly is None
        self._key = self._val = None

    @staticmethod
    def var(name):
        return Sym(poly=(((name,), 1),))

    # --- value under the current binding -----------------------------------------------
    def _value(self):
        key = getattr(_state, "key", None)
        if key is None:
            raise RuntimeError(f"symbolic dim {self!r} read with no dims bound")
        if self._key is not key:
            self._val, self._key = self._compute(), key
        return self._val

    def _compute(self):
        if self.poly is None:
            return _OPS[self.op](_v(self.a), _v(self.b))
        total = 0
        for mono, coef in self.poly:
            for atom in mono:
                coef *= _atom_value(atom)
            total += coef
        return total

    # --- arithmetic: a new expression --------------------------------------------------
    def __add__(self, o): return _combine(self, o, 1)
    def __radd__(self, o): return _combine(self, o, 1)
    def __sub__(self, o): return _combine(self, o, -1)
    def __rsub__(self, o): return _combine(o, self, -1) if _intlike(o) else NotImplemented
    def __mul__(self, o): return _product(self, o)
    def __rmul__(self, o): return _product(self, o)
    def __floordiv__(self, o): return _divide("//", self, o)
    def __rfloordiv__(self, o): return _divide("//", o, self) if _intlike(o) else NotImplemented
    def __mod__(self, o): return _divide("%", self, o)
    def __rmod__(self, o): return _divide("%", o, self) if _intlike(o) else NotImplemented
    def __neg__(self): return _product(self, -1)
    def __pos__(self): return self
    def __abs__(self): return self if self >= 0 else -self

    def __divmod__(self, o): return self // o, self % o
    def __rdivmod__(self, o): return o // self, o % self

    # --- decisions: guarded while tracing ----------------------------------------------
    def _cmp(self, op, other):
        if isinstance(other, float):
            other_v = other
        elif isinstance(other, (int, Sym)):
            other_v = _v(other)
        else:
            return NotImplemented
        result = _CMP[op](self._value(), other_v)
        _guard(self, op, other, result)
        return result

    def __eq__(self, o): return self._cmp("==", o)
    def __ne__(self, o): return self._cmp("!=", o)
    def __lt__(self, o): return self._cmp("<", o)
    def __le__(self, o): return self._cmp("<=", o)
    def __gt__(self, o): return self._cmp(">", o)
    def __ge__(self, o): return self._cmp(">=", o)

    def __index__(self):
        v = self._value()
        _guard(self, "==", v, True, conversion=True)
        return v

    __int__ = __index__

    def __float__(self): return float(self.__index__())
    def __bool__(self): return self._cmp("!=", 0)
    def __hash__(self): return hash(self.__index__())
    def __truediv__(self, o): return self.__index__() / (o.__index__() if isinstance(o, Sym) else o)
    def __rtruediv__(self, o): return o / self.__index__()
    def __round__(self, n=None): return self.__index__()
    def __trunc__(self): return self.__index__()
    def __floor__(self): return self.__index__()
    def __ceil__(self): return self.__index__()
    def __and__(self, o): return self.__index__() & o
    def __or__(self, o): return self.__index__() | o
    def __lshift__(self, o): return self.__index__() << o
    def __rshift__(self, o): return self.__index__() >> o
    def __pow__(self, o): return self.__index__() ** o
    def __format__(self, spec): return format(self.__index__(), spec)

    def __str__(self):   # a string may become a key or a name: guarded as a conversion to int
        return str(self.__index__()) if getattr(_state, "key", None) is not None else self.expr()

    def __repr__(self):
        return f"Sym({self.expr()})"

    def expr(self):
        if self.poly is None:
            a, b = (x.expr() if isinstance(x, Sym) else str(x) for x in (self.a, self.b))
            return f"max({a}, {b})" if self.op == "max" else f"({a} {self.op} {b})"
        terms = []
        for mono, coef in self.poly:
            factors = [a if isinstance(a, str) else a.expr() for a in mono]
            terms.append("*".join(([str(coef)] if coef != 1 or not factors else []) + factors))
        return " + ".join(terms)


numbers.Integral.register(Sym)

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod,
        "max": max}
_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
        ">=": operator.ge}


def _intlike(o):
    return isinstance(o, Sym) or (isinstance(o, int) and not isinstance(o, bool))


def _atom_value(atom):
    if isinstance(atom, str):
        try:
            return _state.bind[atom]
        except (KeyError, TypeError):
            raise RuntimeError(f"symbolic dim '{atom}' is not bound") from None
    return atom._value()


def _akey(atom):
    return (0, atom) if isinstance(atom, str) else (1, id(atom))


def _mkey(mono):
    return tuple(_akey(a) for a in mono)


def _terms(x):
    """x as {monomial key: [monomial, coef]} (keys by identity: hashing a Sym is a decision)."""
    if isinstance(x, Sym):
        pairs = x.poly if x.poly is not None else (((x,), 1),)
        return {_mkey(m): [m, c] for m, c in pairs}
    return {(): [(), x]} if x else {}


def _make(terms):
    items = [(m, c) for m, c in terms.values() if c]
    if not items:
        return 0
    if len(items) == 1:
        mono, coef = items[0]
        if not mono:
            return coef
        if coef == 1 and len(mono) == 1 and isinstance(mono[0], Sym):
            return mono[0]
    return Sym(poly=tuple(sorted(items, key=lambda mc: _mkey(mc[0]))))


def _combine(a, b, sign):
    if not (_intlike(a) and _intlike(b)):
        return NotImplemented
    terms = _terms(a)
    for k, (m, c) in _terms(b).items():
        terms.setdefault(k, [m, 0])[1] += sign * c
    return _make(terms)


def _product(a, b):
    if not (_intlike(a) and _intlike(b)):
        return NotImplemented
    terms = {}
    for ma, ca in _terms(a).values():
        for mb, cb in _terms(b).values():
            m = tuple(sorted(ma + mb, key=_akey))
            terms.setdefault(_mkey(m), [m, 0])[1] += ca * cb
    return _make(terms)


def _exact_quotient(a, b):
    """a / b as a polynomial when b is one monomial dividing every term of a exactly, else None."""
    tb = list(_terms(b).values())
    if len(tb) != 1 or tb[0][1] == 0:
        return None
    mb, cb = tb[0]
    out = {}
    for ma, ca in _terms(a).values():
        if ca % cb:
            return None
        rest = list(ma)
        for atom in mb:
            k = next((i for i, x in enumerate(rest) if _akey(x) == _akey(atom)), None)
            if k is None:
                return None
            del rest[k]
        m = tuple(rest)
        out.setdefault(_mkey(m), [m, 0])[1] += ca // cb
    return _make(out)


def _divide(op, a, b):
    if not (_intlike(a) and _intlike(b)):
        return NotImplemented
    if isinstance(a, Sym) and a.poly is not None and (isinstance(b, Sym) and b.poly is not None or
                                                      isinstance(b, int) and b > 0):
        q = _exact_quotient(a, b)   # (4*P + 8) // 4 is P + 2, 64*S // 16*S is 4; their % is 0
        if q is not None:
            return q if op == "//" else 0
    return Sym(op=op, a=a, b=b)


def smax(a, b):
    """max(a, b) as an expression, deciding nothing (an arena slot's size over the values it holds)."""
    if isinstance(a, Sym) or isinstance(b, Sym):
        return Sym(op="max", a=a, b=b)
    return max(a, b)


def _v(x):
    return x._value() if isinstance(x, Sym) else x


def value(x):
    """x's value under the current binding, recording no guard: for the runtime's own bookkeeping
    (plan words, arena sizes), never for a decision that shapes what is prepared."""
    return x._value() if isinstance(x, Sym) else x


def is_sym(x):
    return isinstance(x, Sym)


def _guard(a, op, b, result, conversion=False):
    guards = getattr(_state, "guards", None)
    if guards is not None:   # keyed by identity: hashing a Sym is itself a guarded decision
        k = (id(a), op, id(b) if isinstance(b, Sym) else b)
        if k not in guards:
            guards[k] = (a, op, b, result)
            if DEBUG and conversion:
                import traceback
                print(f"nnwasm.symbolic: {a.expr()} specialised to {b} at\n" + "".join(traceback.format_stack(limit=8)[:-2]))


def current_dims():
    """The dims bound now, as a hashable tuple (None when none are)."""
    return getattr(_state, "dims", None)


class Binding:
    """Dims bound for a trace or a run: `with binding:` makes them current in this thread."""
    __slots__ = ("dims", "guards", "_saved")

    def __init__(self, dims, trace=False, guards=None):
        """trace: record the guards of decisions taken under this binding in a new dict; guards: in
        this one (a variant's, while a run compiles a control-flow branch it had not taken)."""
        self.dims, self.guards = dict(dims), ({} if trace else guards)

    def __enter__(self):
        self._saved = tuple(getattr(_state, k, None) for k in ("bind", "key", "guards", "dims"))
        _state.bind, _state.key, _state.guards = self.dims, object(), self.guards
        _state.dims = tuple(sorted(self.dims.items()))
        return self

    def __exit__(self, *exc):
        _state.bind, _state.key, _state.guards, _state.dims = self._saved


def holds(guards, dims):
    """Whether every guard comes out as it did while tracing, with these dims bound (Checker is the
    compiled form the runtime uses; this one is the reference)."""
    with Binding(dims):
        try:
            return all(_CMP[op](_v(a), _v(b)) == result for a, op, b, result in guards.values())
        except (ZeroDivisionError, RuntimeError):
            return False


def derived_dims(dims):
    """{name: Sym} for the dim names that are sums, differences and products of other dims' names
    and integers (an exporter's "past_sequence_length + sequence_length" on an attention mask) and
    whose value in `dims` agrees: such a dim is that expression, not a dim of its own, so shapes
    built from it and from its terms agree as expressions."""
    out = {}
    for name, v in dims.items():
        e = _parse(name, dims)
        if e is not None and isinstance(e, Sym):
            with Binding(dims):
                if e._value() == v:
                    out[name] = e
    return out


def _parse(name, dims):
    try:
        tree = ast.parse(name, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp):
        return None   # a plain name is a dim of its own

    def walk(n):
        if isinstance(n, ast.Name) and n.id in dims:
            return Sym.var(n.id)
        if isinstance(n, ast.Constant) and type(n.value) is int:
            return n.value
        if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Add, ast.Sub, ast.Mult)):
            a, b = walk(n.left), walk(n.right)
            if a is None or b is None:
                return None
            return a + b if isinstance(n.op, ast.Add) else a - b if isinstance(n.op, ast.Sub) else a * b
        return None
    return walk(tree)


# --- compiled evaluation: a variant's guards and plan words, checked and evaluated per run ---------

def compile_values(exprs):
    """f(dims) -> [value of each expression] for {name: int} dims, as one generated Python function:
    each shared node of the expressions computed once (a plan's offsets are running sums of slot
    sizes), no per-node dispatch. Evaluating thousands of words this way takes well under a
    millisecond, where Sym's own evaluation took tens."""
    gen = _Gen()
    out = [gen.ref(e) for e in exprs]
    return gen.function(f"return [{', '.join(out)}]")


def compile_stores(stores, exprs=()):
    """f(dims, m) that writes each (index, expression) of `stores` into m[index] as an int32 (m: a
    memoryview cast to "i", a plan's words) and returns [value of each of `exprs`]: compile_values'
    way, the stores done by the generated code itself, no Python loop over thousands of words."""
    gen = _Gen()
    lines = [f"m[{i}] = (({gen.ref(e)}) + 2147483648) % 4294967296 - 2147483648" for i, e in stores]
    out = [gen.ref(e) for e in exprs]
    gen.lines += lines
    return gen.function(f"return [{', '.join(out)}]", args="dims, m")


class Checker:
    """holds(guards, dims), compiled (compile_values' way) and compiled again when guards were added
    (a branch first taken in a later run records its decisions in the same dict)."""

    def __init__(self, guards):
        self.guards, self._n, self._fn = guards, -1, None

    def __call__(self, dims):
        if self._n != len(self.guards):
            gen = _Gen()
            unique = {(_ident(a), op, _ident(b)): (a, op, b, bool(r)) for a, op, b, r in self.guards.values()}
            lines = [f"if ({gen.ref(a)} {op} {gen.ref(b)}) is not {result}: return False"
                     for a, op, b, result in unique.values()]
            self._fn, self._n = gen.function("\n    ".join(lines + ["return True"])), len(self.guards)
        try:
            return self._fn(dims)
        except (ZeroDivisionError, KeyError):
            return False


def _ident(x):
    return ("sym", id(x)) if isinstance(x, Sym) else x


class _Gen:
    def __init__(self):
        self.names, self.lines, self.memo = {}, [], {}

    def ref(self, x):
        """Python source for x: a literal, a dim's local, or the temporary holding a node."""
        if not isinstance(x, Sym):
            return repr(x)
        t = self.memo.get(id(x))
        if t is not None:
            return t[0]
        if x.poly is None:
            a, b = self.ref(x.a), self.ref(x.b)
            src = f"max({a}, {b})" if x.op == "max" else f"({a} {x.op} {b})"
        else:
            terms = []
            for mono, coef in x.poly:
                f = [self.names.setdefault(a, f"d{len(self.names)}") if isinstance(a, str) else self.ref(a)
                     for a in mono]
                terms.append("*".join(([repr(coef)] if coef != 1 or not f else []) + f))
            src = " + ".join(terms) if terms else "0"
        t = f"t{len(self.memo)}"
        self.memo[id(x)] = (t, x)   # holds x, so its id stays its own
        self.lines.append(f"{t} = {src}")
        return t

    def function(self, tail, args="dims"):
        """The generated function; tail: its last statements (lines joined by "\n    "). Past
        CHUNK_LINES lines, compiled as a chain of functions of that many lines each (_chunked)."""
        body = self.lines + [line.strip() for line in tail.split("\n")]
        if len(body) > CHUNK_LINES:
            return self._chunked(body, args)
        head = [f"{v} = dims[{n!r}]" for n, v in self.names.items()]
        src = f"def f({args}):\n    " + "\n    ".join(head + body) + "\n"
        scope = {}
        exec(compile(src, "<nnwasm.symbolic>", "exec"), scope)
        return scope["f"]

    def _chunked(self, body, args):
        """function() for a long body: CPython's compiler holds the whole source's syntax tree and
        symbol tables at once, about 3.5 KB a line (a 125M decoder's guards, 32,000 lines: a 113 MB
        peak, which in Pyodide stays as heap for good), so the body is compiled a chunk at a time
        into functions run one after another. A chunk's temporaries are its locals, stored into a
        list T at its end for the chunks after it, which read them as T[n]; a chunk that returns
        (a guard that fails) ends the chain with its value."""
        fns, done = [], 0   # done: temporaries t0 .. t{done - 1} are in T
        for at in range(0, len(body), CHUNK_LINES):
            chunk, lo = body[at:at + CHUNK_LINES], done
            lines = [_TEMP.sub(lambda m: f"T[{m.group(1)}]" if int(m.group(1)) < lo else m.group(0), line)
                     for line in chunk]
            here = [int(m.group(1)) for m in map(_DEF.match, chunk) if m]
            if here and at + CHUNK_LINES < len(body):
                done = here[-1] + 1
                lines.append(f"T[{here[0]}:{done}] = ({', '.join(f't{i}' for i in here)},)")
            used = set(_DIM.findall("\n".join(lines)))
            head = [f"{v} = dims[{n!r}]" for n, v in self.names.items() if v in used]
            src = f"def f({args}, T):\n    " + "\n    ".join(head + lines) + "\n"
            scope = {}
            exec(compile(src, "<nnwasm.symbolic>", "exec"), scope)
            fns.append(scope["f"])
            del src, scope, lines
        first, last, size = fns[:-1], fns[-1], len(self.memo)

        def f(*a):
            T = [None] * size
            for g in first:
                r = g(*a, T)
                if r is not None:
                    return r
            return last(*a, T)
        return f


CHUNK_LINES = 2000   # lines of generated code compiled at once (_Gen._chunked)
_TEMP = re.compile(r"\bt(\d+)\b")
_DEF = re.compile(r"t(\d+) = ")
_DIM = re.compile(r"\bd\d+\b")
