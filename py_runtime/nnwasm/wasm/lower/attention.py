"""com.microsoft MultiHeadAttention (the unpacked form optimizer/transformer.py's fuse_attention
emits) as one attention op (kernels_c/linalg/attention.c)."""
import math


def _inputs(node):
    return list(node.inputs) + [""] * (6 - len(node.inputs))


def check_attention(node, g):
    q, k, v, bias, pad, mask = _inputs(node)[:6]
    if len(node.inputs) > 6 or bias or pad or node.attr("unidirectional", 0) or not (q and k and v):
        return "MultiHeadAttention with biases, a key padding mask, past state or causal masking"
    qs, ks, vs = (g.values[n].shape for n in (q, k, v))
    h = node.attr("num_heads", 0)
    if len(qs) != 3 or len(ks) != 3 or tuple(ks) != tuple(vs) or h <= 0 or qs[2] % h or qs[2] != ks[2] \
            or qs[0] != ks[0]:
        return "MultiHeadAttention of packed or mismatched Q, K, V"
    if mask:
        ms = g.values[mask].shape
        if len(ms) != 4 or ms[0] not in (1, qs[0]) or ms[1] not in (1, h) or tuple(ms[2:]) != (qs[1], ks[1]):
            return "MultiHeadAttention attention_bias that is not [B|1, H|1, S, L]"
    return None


def lower_attention(node, b):
    q, k, v, _, _, mask = _inputs(node)[:6]
    batch, s, hd = b.shape(q)
    l = b.shape(k)[1]
    heads = node.attr("num_heads")
    d = hd // heads
    scale = node.attr("scale", 0.0) or 1 / math.sqrt(d)
    m_bs = m_hs = m_rs = 0
    if mask:
        mb, mh = b.shape(mask)[:2]
        m_rs = l
        m_hs = s * l if mh != 1 else 0
        m_bs = mh * s * l if mb != 1 else 0
    b.emit("attention", q=b.ref(q), k=b.ref(k), v=b.ref(v), mask=b.ref(mask) if mask else None,
           y=b.ref(node.outputs[0]), scratch=b.scratch(4 * (d * l + s * l)), batch=batch, heads=heads, s=s, l=l,
           d=d, m_bs=m_bs, m_hs=m_hs, m_rs=m_rs, scale=float(scale))
