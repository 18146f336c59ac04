"""Helpers for tests/test_onnx_reader.py: a protobuf encoder for hand-made wire bytes, and
comparisons of nnwasm's parse against the onnx package's."""
