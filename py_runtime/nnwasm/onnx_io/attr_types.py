"""The type of each attribute of the ai.onnx domain, by name: every op of every opset that onnx
1.23 defines gives an attribute of that name one of these types (generated from
onnx.defs.get_all_schemas_with_history()). The loader refuses a node of ai.onnx whose attribute
has another type, as onnx's checker and onnxruntime do, instead of letting a FLOAT `axis` or an
INTS `transB` reach a shape function or a kernel."""
from .messages import AttributeProto as A

ATTRIBUTE_TYPES = {}
for _types, _names in (
        ((A.FLOAT,), ['alpha', 'beta', 'bias', 'clip', 'cubic_coeff_a', 'epsilon', 'extrapolation_value', 'gamma', 'height_scale', 'high', 'lambd', 'low', 'max', 'mean', 'min', 'momentum', 'ratio', 'scale', 'softcap', 'spatial_scale', 'value_float', 'width_scale']),
        ((A.FLOAT, A.INT,), ['p', 'seed']),
        ((A.FLOAT, A.TENSOR,), ['value']),
        ((A.FLOATS,), ['activation_alpha', 'activation_beta', 'scales', 'value_floats', 'weights']),
        ((A.GRAPH,), ['body', 'else_branch', 'then_branch']),
        ((A.INT,), ['align_corners', 'allowzero', 'antialias', 'axis', 'batch_axis', 'batch_dims', 'block_size', 'blocksize', 'broadcast', 'ceil_mode', 'center_point_box', 'chunk_size', 'count_include_pad', 'detect_negative', 'detect_positive', 'dtype', 'end', 'exclude_outside', 'exclusive', 'fmod', 'group', 'hidden_size', 'ignore_index', 'input_forget', 'interleaved', 'inverse', 'is_case_sensitive', 'is_causal', 'is_test', 'k', 'keepdims', 'kv_num_heads', 'largest', 'layout', 'left_window_size', 'linear_before_reset', 'max_gram_length', 'max_skip_count', 'maxsplit', 'min_gram_length', 'new_axis', 'noop_with_empty_axes', 'num_groups', 'num_heads', 'num_outputs', 'num_scan_inputs', 'offset_group', 'onesided', 'output_datatype', 'output_dtype', 'output_height', 'output_sequence', 'output_width', 'periodic', 'precision', 'q_num_heads', 'qk_matmul_output_mode', 'reverse', 'right_window_size', 'rotary_embedding_dim', 'sample_size', 'sampling_ratio', 'saturate', 'select_last_index', 'size', 'softmax_precision', 'sorted', 'spatial', 'start', 'stash_type', 'storage_order', 'time_axis', 'training_mode', 'transA', 'transB', 'upper', 'value_int']),
        ((A.INT, A.STRING,), ['to']),
        ((A.INTS,), ['axes', 'consumed_inputs', 'dilations', 'directions', 'ends', 'kernel_shape', 'ngram_counts', 'ngram_indexes', 'output_padding', 'output_shape', 'paddings', 'pads', 'perm', 'pool_int64s', 'pooled_shape', 'scan_input_axes', 'scan_input_directions', 'scan_output_axes', 'scan_output_directions', 'shape', 'split', 'starts', 'strides', 'value_ints']),
        ((A.SPARSE_TENSOR,), ['sparse_value']),
        ((A.STRING,), ['activation', 'approximate', 'auto_pad', 'case_change_action', 'coordinate_transformation_mode', 'delimiter', 'direction', 'equation', 'keep_aspect_ratio_policy', 'locale', 'mode', 'nearest_mode', 'padding_mode', 'pattern', 'pixel_format', 'reduction', 'round_mode', 'update_rule', 'value_string']),
        ((A.STRINGS,), ['activations', 'pool_strings', 'stopwords', 'value_strings']),
        ((A.TYPE_PROTO,), ['type']),
):
    for _name in _names:
        ATTRIBUTE_TYPES[_name] = frozenset(_types)
