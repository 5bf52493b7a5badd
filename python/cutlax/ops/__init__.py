"""The built-in ops: small specs over FFI targets, one per kernel."""

from cutlax.ops.elementwise import bias_relu, bias_relu_backward, relu, relu_backward, saxpy, vector_add
from cutlax.ops.gemm import gemm

__all__ = ["vector_add", "saxpy", "relu", "bias_relu", "gemm", "relu_backward", "bias_relu_backward"]
