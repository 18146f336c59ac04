"""Loading and driving kernels.wasm: plan opcodes, plan building, execution."""
