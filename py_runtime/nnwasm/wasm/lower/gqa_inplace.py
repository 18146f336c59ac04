"""GroupQueryAttention's present written into its past's own block when the cache is kept on the
device (RegionTensors; JS `preferredOutputLocation: "wasm"`), as lower/attention_concat.py does for
Optimum's present = Concat(past, new): the past's and the present's blocks get a row capacity
(`@cap:NAME` dims bound per run, wasm/region.py), and kv_append_rows writes the present at the
capacity the runner chose. GQA differs in one way: where the new rows go is data, n_b =
seqlens_k[b] + 1 - S. The runner computes n_b on the host before the run (wasm/kv_lengths.py, from
the plan input seqlens_k derives from) and takes the past's block only when every row appends at
the past's end (n_b == P: no padding); otherwise (right padding, a past fed twice, a full block)
the present goes into a new block, the past's first n_b rows copied, zeros after the new rows, as
kv_append does. The kernel checks n_b against the tensors' lengths, not the blocks' rows.

A shared past/present buffer (onnxruntime-genai's past_present_share_buffer: the present bound to
the past's OrtValue, PlanBuilder.in_place) is the same op in place with t == p: the plan serves both."""
from ...symbolic import Sym
from .. import kv_lengths


def usable(b, names, seqlens):
    """The recipe of seqlens on the host (wasm/kv_lengths.py) if the runner places every past and
    present of `names` and knows the lengths before a run, else None (then kv_append, as before)."""
    if not all(b.will_place(n) for n in names):
        return None
    return kv_lengths.trace(b, seqlens)


def append_rows(b, recipe, past, present, p, x, xs, batch, heads, t, s, d, seqlens, lens_add):
    """kv_append_rows of present = past[:n_b] ++ new into blocks with a row capacity: (present
    Ref, its strides at the capacity, its plain strides, for emit_unchecked's checks)."""
    cap_in, cap_out = b.capacity_dim(past), b.capacity_dim(present)
    b.capacity[present] = (past, cap_in, cap_out)
    b.lengths[present] = (recipe, lens_add)
    args = dict(past=b.ref(past), x=x, lens=b.ref(seqlens), y=b.ref(present), batch=batch, heads=heads, p=p, t=t,
                p_rows=Sym.var(cap_in), t_rows=Sym.var(cap_out), s=s, d=d, x_bs=xs[0], x_rs=xs[1], x_hs=xs[2],
                lens_add=lens_add)
    b.emit_unchecked("kv_append_rows", {**args, "p_rows": p, "t_rows": t}, args)
    cap = Sym.var(cap_out)
    return b.ref(present), (heads * cap * d, d, cap * d), (heads * t * d, d, t * d)
