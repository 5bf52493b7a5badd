"""The built-in ops: one module per op, each a short declaration on the
``cutlax.Op`` its C++ declaration put in the extension's table (checks,
shape rule, derivatives, batching, sharding). Every module here is imported,
and the names in its ``__all__`` become cutlax's public ops; adding an op
needs no list edited anywhere else (docs/architecture.md has the checklist).
"""

import importlib
import pkgutil

PUBLIC: dict = {}
for _module in pkgutil.iter_modules(__path__):
    _ops = importlib.import_module(f"{__name__}.{_module.name}")
    PUBLIC.update({name: getattr(_ops, name) for name in _ops.__all__})
