"""Lowerings of ONNX nodes to plan ops, one file per op family (elementwise, linalg, movement,
reduce, conv, ...). The table that says which ONNX op uses which (check, lower) pair is
wasm/lowering.py's LOWERINGS; these files hold the functions it names.

check(node, graph) -> None | str   None when kernels.wasm can run the node, else why not.
lower(node, b)                     emits plan ops into a plan.PlanBuilder b.
"""
