"""String ops (string tensors are numpy object arrays of str): StringNormalizer, StringConcat,
StringSplit, RegexFullMatch, and TfIdfVectorizer (n-gram counts over int64 or string tokens).
RegexFullMatch uses Python's re where the spec names re2: the two agree on the common syntax."""
from .. import dtypes
from . import shapes as S
from .registry import op

STRING = dtypes.BY_NAME["object"]
FLOAT32 = dtypes.FLOAT32


def _strings(node, inputs, idxs):
    for i in idxs:
        vi = S.need(node, inputs, i)
        if vi.dtype is not None and vi.dtype != STRING:
            S.fail(node, f"input {i} must be a string tensor, got {vi.dtype.name}")


def _check_str(node, *xs):
    for x in xs:
        if x.dtype != object:
            S.fail(node, f"needs string tensors, got {x.dtype}")


# --- StringNormalizer -------------------------------------------------------------------------------

CASE_ACTIONS = ("NONE", "LOWER", "UPPER")


def infer_string_normalizer(node, inputs, consts):
    _strings(node, inputs, (0,))
    if node.attr("case_change_action", "NONE") not in CASE_ACTIONS:
        S.fail(node, f"case_change_action must be one of {CASE_ACTIONS}")
    xs = S.shape(inputs[0])
    if xs is not None and not (len(xs) == 1 or len(xs) == 2 and (xs[0] == 1 or not S.known(xs[0]))):
        S.fail(node, f"input must be [C] or [1, C], got shape {list(xs)}")
    if xs is None:
        return [(STRING, None)]
    return [(STRING, (None,) if len(xs) == 1 else (1, None))]


def _strip_accents(s):
    import unicodedata
    if s.isascii():
        return s
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


@op("StringNormalizer", 10, infer_string_normalizer)
def string_normalizer(node, x):
    """Accents stripped, stopwords removed (word by word, before or after the case change as
    is_case_sensitive says), case changed; strings left empty are dropped (one "" if none is left)."""
    import numpy as np
    _check_str(node, x)
    if not (x.ndim == 1 or x.ndim == 2 and x.shape[0] == 1):
        S.fail(node, f"input must be [C] or [1, C], got shape {list(x.shape)}")
    action = node.attr("case_change_action", "NONE")
    if action not in CASE_ACTIONS:
        S.fail(node, f"case_change_action must be one of {CASE_ACTIONS}")
    change = {"NONE": lambda s: s, "LOWER": str.lower, "UPPER": str.upper}[action]
    sensitive = node.attr("is_case_sensitive", 0)
    stops = set(node.attr("stopwords") or ())
    if not sensitive:
        stops = {change(w) for w in stops}

    def drop(s):
        return " ".join(w for w in s.split(" ") if w not in stops) if stops else s

    out = []
    for s in x.reshape(-1).tolist():
        s = _strip_accents(s if isinstance(s, str) else "")
        s = change(drop(s)) if sensitive else drop(change(s))
        if s:
            out.append(s)
    y = np.array(out or [""], dtype=object)
    return y.reshape(1, -1) if x.ndim == 2 else y


# --- StringConcat, RegexFullMatch -------------------------------------------------------------------

def infer_string_concat(node, inputs, consts):
    _strings(node, inputs, (0, 1))
    return [(STRING, S.broadcast(node, S.shape(inputs[0]), S.shape(inputs[1])))]


@op("StringConcat", 20, infer_string_concat)
def string_concat(node, x, y):
    import numpy as np
    _check_str(node, x, y)
    return np.asarray(np.frompyfunc(lambda a, b: a + b, 2, 1)(x, y), dtype=object)


def _regex(node):
    import re
    pattern = node.attr("pattern")
    if pattern is None:
        S.fail(node, "attribute pattern is required")
    try:
        return re.compile(pattern)
    except re.error as e:
        S.fail(node, f"pattern {pattern!r} is not a valid regular expression: {e}")


def infer_regex_full_match(node, inputs, consts):
    _strings(node, inputs, (0,))
    _regex(node)
    return [(S.BOOL, S.shape(inputs[0]))]


@op("RegexFullMatch", 20, infer_regex_full_match)
def regex_full_match(node, x):
    import numpy as np
    _check_str(node, x)
    regex = _regex(node)
    return np.array([regex.fullmatch(s) is not None for s in x.reshape(-1).tolist()], bool).reshape(x.shape)


# --- StringSplit ------------------------------------------------------------------------------------

def infer_string_split(node, inputs, consts):
    _strings(node, inputs, (0,))
    m = node.attr("maxsplit")
    if m is not None and m < 0:
        S.fail(node, f"maxsplit must be >= 0, got {m}")
    xs = S.shape(inputs[0])
    return [(STRING, None if xs is None else (*xs, None)), (S.INT64, xs)]


@op("StringSplit", 20, infer_string_split)
def string_split(node, x):
    """Each string split at delimiter (runs of whitespace if it is absent or empty, dropping empty
    pieces), at most maxsplit times; Y pads the rows with "" to the longest, Z counts the pieces."""
    import numpy as np
    _check_str(node, x)
    sep = node.attr("delimiter") or None
    m = node.attr("maxsplit")
    parts = [s.split(sep, -1 if m is None else m) for s in x.reshape(-1).tolist()]
    width = max((len(p) for p in parts), default=0)
    y = np.array([p + [""] * (width - len(p)) for p in parts], dtype=object).reshape(*x.shape, width)
    return y, np.array([len(p) for p in parts], np.int64).reshape(x.shape)


# --- TfIdfVectorizer --------------------------------------------------------------------------------

MODES = ("TF", "IDF", "TFIDF")


def _tfidf_table(node):
    """({n-gram tuple: output column}, output size) for the n-gram lengths counted."""
    ints, strs = node.attr("pool_int64s"), node.attr("pool_strings")
    if (ints is None) == (strs is None):
        S.fail(node, "needs exactly one of pool_int64s and pool_strings")
    pool = list(ints if ints is not None else strs)
    counts = S.ints_attr(node, "ngram_counts") or []
    indexes = S.ints_attr(node, "ngram_indexes") or []
    lo, hi = node.attr("min_gram_length"), node.attr("max_gram_length")
    if lo is None or hi is None or not 1 <= lo <= hi:
        S.fail(node, f"needs 1 <= min_gram_length ({lo}) <= max_gram_length ({hi})")
    if node.attr("mode") not in MODES:
        S.fail(node, f"mode must be one of {MODES}, got {node.attr('mode')!r}")
    if any(b < a for a, b in zip(counts, counts[1:] + [len(pool)])) or any(c < 0 or c > len(pool) for c in counts):
        S.fail(node, f"ngram_counts {counts} are not ascending start offsets into the pool of {len(pool)}")
    table, k = {}, 0
    for n, start in enumerate(counts, 1):
        end = counts[n] if n < len(counts) else len(pool)
        for j in range(start, end - n + 1, n):
            if k >= len(indexes):
                S.fail(node, f"ngram_indexes has {len(indexes)} entries, fewer than the pool's n-grams")
            if lo <= n <= hi:
                table[tuple(pool[j:j + n])] = indexes[k]
            k += 1
    size = max(indexes, default=-1) + 1
    w = node.attr("weights")
    if w is not None and len(w) < size:
        S.fail(node, f"weights has {len(w)} entries, fewer than the {size} outputs")
    return table, size


def infer_tfidf(node, inputs, consts):
    x = S.need(node, inputs, 0)
    size = _tfidf_table(node)[1]
    xs = S.shape(x)
    if xs is not None and len(xs) not in (1, 2):
        S.fail(node, f"input must be [C] or [N, C], got shape {list(xs)}")
    return [(FLOAT32, None if xs is None else (size,) if len(xs) == 1 else (xs[0], size))]


@op("TfIdfVectorizer", 9, infer_tfidf)
def tfidf(node, x):
    """Counts, per row, each pool n-gram of min..max_gram_length items taken every d-th token
    (d = 1 .. max_skip_count + 1; a unigram counts once), then weighs them by mode."""
    import numpy as np
    table, size = _tfidf_table(node)
    if x.ndim not in (1, 2):
        S.fail(node, f"input must be [C] or [N, C], got shape {list(x.shape)}")
    lo, hi = node.attr("min_gram_length"), node.attr("max_gram_length")
    skips = node.attr("max_skip_count", 0) + 1
    rows = x.reshape(1, -1) if x.ndim == 1 else x
    tf = np.zeros((rows.shape[0], size), np.float32)
    for r, row in enumerate(rows.tolist()):
        t = len(row)
        for n in range(lo, hi + 1):
            for d in range(1, skips + 1 if n > 1 else 2):
                for s in range(t - (n - 1) * d):
                    col = table.get(tuple(row[s:s + (n - 1) * d + 1:d]))
                    if col is not None:
                        tf[r, col] += 1
    w = node.attr("weights")
    w = None if w is None else np.array(w[:size], np.float32)
    mode = node.attr("mode")
    if mode == "IDF":
        tf = np.where(tf > 0, 1 if w is None else w, 0).astype(np.float32)
    elif mode == "TFIDF" and w is not None:
        tf = tf * w
    return tf.reshape(size) if x.ndim == 1 else tf
