"""FFI target names of the built-in ops.

Each name carries an ABI version (``_v1``): an exported artifact names the
target it calls, so a change to a handler's operands, attributes or semantics
gets a new version and the old name keeps meaning the old kernel.
"""

VECTOR_ADD = "cutlax_vector_add_v1"
