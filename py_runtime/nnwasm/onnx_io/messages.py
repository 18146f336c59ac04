"""The ONNX protobuf messages nnwasm reads, with field numbers from onnx.proto (IR version 14).

Only the fields the runtime uses are decoded; every other field is skipped after its bounds are
checked. Absent singular fields read as None, repeated ones as lists (see wire.Message).
ModelProto.functions and the non-tensor TypeProto kinds are kept undecoded (memoryview slices).
"""
from .wire import (BYTES, DOUBLE_LE, FLOAT, FLOAT_LE, INT32, INT64, MESSAGE, RAW, STRING, UINT64,
                   Field, Message, define, parse)


class StringStringEntryProto(Message):
    pass


class OperatorSetIdProto(Message):
    pass


class Segment(Message):
    """TensorProto.Segment: nnwasm rejects segmented tensors, but must notice them."""


class TensorProto(Message):
    """float_data and double_data hold lists of little-endian byte chunks (memoryviews), one per
    packed run or unpacked value, so a big float_data payload is not turned into Python floats."""


class SparseTensorProto(Message):
    pass


class Dimension(Message):
    """TensorShapeProto.Dimension; `value` names the oneof member set: "dim_value", "dim_param" or None."""


class TensorShapeProto(Message):
    pass


class TypeTensor(Message):
    """TypeProto.Tensor (also used for TypeProto.SparseTensor, which has the same fields)."""


class TypeProto(Message):
    """`value` names the oneof member set: "tensor_type", "sequence_type", "map_type",
    "optional_type", "sparse_tensor_type", "opaque_type" or None. map_type and opaque_type stay
    raw."""


class TypeElem(Message):
    """TypeProto.Sequence and TypeProto.Optional: one field, the element's TypeProto."""


class ValueInfoProto(Message):
    pass


class AttributeProto(Message):
    # AttributeProto.AttributeType
    UNDEFINED, FLOAT, INT, STRING, TENSOR, GRAPH, FLOATS, INTS, STRINGS, TENSORS, GRAPHS = range(11)
    SPARSE_TENSOR, SPARSE_TENSORS, TYPE_PROTO, TYPE_PROTOS = 11, 12, 13, 14


class NodeProto(Message):
    pass


class GraphProto(Message):
    pass


class ModelProto(Message):
    pass


define(StringStringEntryProto,
       (1, Field("key", STRING)),
       (2, Field("value", STRING)))
define(OperatorSetIdProto,
       (1, Field("domain", STRING)),
       (2, Field("version", INT64)))
define(Segment,
       (1, Field("begin", INT64)),
       (2, Field("end", INT64)))
define(TensorProto,
       (1, Field("dims", INT64, True)),
       (2, Field("data_type", INT32)),
       (3, Field("segment", MESSAGE, msg=Segment)),
       (4, Field("float_data", FLOAT_LE, True)),
       (5, Field("int32_data", INT32, True)),
       (6, Field("string_data", BYTES, True)),
       (7, Field("int64_data", INT64, True)),
       (8, Field("name", STRING)),
       (9, Field("raw_data", BYTES)),
       (10, Field("double_data", DOUBLE_LE, True)),
       (11, Field("uint64_data", UINT64, True)),
       (13, Field("external_data", MESSAGE, True, StringStringEntryProto)),
       (14, Field("data_location", INT32)))
define(SparseTensorProto,
       (1, Field("values", MESSAGE, msg=TensorProto)),
       (2, Field("indices", MESSAGE, msg=TensorProto)),
       (3, Field("dims", INT64, True)))
define(Dimension,
       (1, Field("dim_value", INT64, oneof="value")),
       (2, Field("dim_param", STRING, oneof="value")),
       (3, Field("denotation", STRING)))
define(TensorShapeProto,
       (1, Field("dim", MESSAGE, True, Dimension)))
define(TypeTensor,
       (1, Field("elem_type", INT32)),
       (2, Field("shape", MESSAGE, msg=TensorShapeProto)))
define(TypeProto,
       (1, Field("tensor_type", MESSAGE, msg=TypeTensor, oneof="value")),
       (4, Field("sequence_type", MESSAGE, msg=TypeElem, oneof="value")),
       (5, Field("map_type", RAW, oneof="value")),
       (7, Field("opaque_type", RAW, oneof="value")),
       (8, Field("sparse_tensor_type", MESSAGE, msg=TypeTensor, oneof="value")),
       (9, Field("optional_type", MESSAGE, msg=TypeElem, oneof="value")),
       (6, Field("denotation", STRING)))
define(TypeElem,
       (1, Field("elem_type", MESSAGE, msg=TypeProto)))
define(ValueInfoProto,
       (1, Field("name", STRING)),
       (2, Field("type", MESSAGE, msg=TypeProto)),
       (3, Field("doc_string", STRING)))
define(AttributeProto,
       (1, Field("name", STRING)),
       (21, Field("ref_attr_name", STRING)),
       (13, Field("doc_string", STRING)),
       (20, Field("type", INT32)),
       (2, Field("f", FLOAT)),
       (3, Field("i", INT64)),
       (4, Field("s", BYTES)),
       (5, Field("t", MESSAGE, msg=TensorProto)),
       (6, Field("g", MESSAGE, msg=GraphProto)),
       (22, Field("sparse_tensor", MESSAGE, msg=SparseTensorProto)),
       (14, Field("tp", MESSAGE, msg=TypeProto)),
       (7, Field("floats", FLOAT, True)),
       (8, Field("ints", INT64, True)),
       (9, Field("strings", BYTES, True)),
       (10, Field("tensors", MESSAGE, True, TensorProto)),
       (11, Field("graphs", MESSAGE, True, GraphProto)),
       (23, Field("sparse_tensors", MESSAGE, True, SparseTensorProto)),
       (15, Field("type_protos", MESSAGE, True, TypeProto)))
define(NodeProto,
       (1, Field("input", STRING, True)),
       (2, Field("output", STRING, True)),
       (3, Field("name", STRING)),
       (4, Field("op_type", STRING)),
       (7, Field("domain", STRING)),
       (8, Field("overload", STRING)),
       (5, Field("attribute", MESSAGE, True, AttributeProto)),
       (6, Field("doc_string", STRING)),
       # decoded only so that a corrupt entry is refused, as onnxruntime's protobuf parser does
       (9, Field("metadata_props", MESSAGE, True, StringStringEntryProto)))
define(GraphProto,
       (1, Field("node", MESSAGE, True, NodeProto)),
       (2, Field("name", STRING)),
       (5, Field("initializer", MESSAGE, True, TensorProto)),
       (15, Field("sparse_initializer", MESSAGE, True, SparseTensorProto)),
       (10, Field("doc_string", STRING)),
       (11, Field("input", MESSAGE, True, ValueInfoProto)),
       (12, Field("output", MESSAGE, True, ValueInfoProto)),
       (13, Field("value_info", MESSAGE, True, ValueInfoProto)))
define(ModelProto,
       (1, Field("ir_version", INT64)),
       (8, Field("opset_import", MESSAGE, True, OperatorSetIdProto)),
       (2, Field("producer_name", STRING)),
       (3, Field("producer_version", STRING)),
       (4, Field("domain", STRING)),
       (5, Field("model_version", INT64)),
       (6, Field("doc_string", STRING)),
       (7, Field("graph", MESSAGE, msg=GraphProto)),
       (14, Field("metadata_props", MESSAGE, True, StringStringEntryProto)),
       (25, Field("functions", RAW, True)))


def parse_model_proto(buf):
    """ModelProto decoded from bytes-like buf; raises InvalidModel on malformed bytes."""
    return parse(ModelProto, buf)


def parse_tensor_proto(buf):
    """TensorProto decoded from bytes-like buf; raises InvalidModel on malformed bytes."""
    return parse(TensorProto, buf)
