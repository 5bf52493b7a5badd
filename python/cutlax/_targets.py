"""FFI target names of the built-in ops.

Each name carries an ABI version (``_v1``): an exported artifact names the
target it calls, so a change to a handler's operands, attributes or semantics
gets a new version and the old name keeps meaning the old kernel. The C++
side spells the same names in src/ops/*.hpp.
"""

VECTOR_ADD = "cutlax_vector_add_v1"
SAXPY = "cutlax_saxpy_v1"
SAXPY_DYNAMIC = "cutlax_saxpy_dynamic_v1"
RELU = "cutlax_relu_v1"
BIAS_RELU = "cutlax_bias_relu_v1"
RELU_BACKWARD = "cutlax_relu_backward_v1"
BIAS_RELU_BACKWARD = "cutlax_bias_relu_backward_v1"
GEMM_TILED = "cutlax_gemm_tiled_v1"
