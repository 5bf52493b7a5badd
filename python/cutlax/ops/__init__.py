"""The built-in ops: one small module per op, each a spec over one FFI target."""

from cutlax.ops.vector_add import vector_add

__all__ = ["vector_add"]
