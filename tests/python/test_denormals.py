"""What the property models (properties.py) assume of the platforms: XLA's
own denormal handling on each device."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from properties import DEVICES, F32, _flushes, _on, _platform


@pytest.mark.parametrize("dev", DEVICES, ids=_platform)
def test_platform_denormal_modes(dev):
    """The models' denormal assumption (_flushes) is XLA's own on the
    device: jnp arithmetic there reads float32 subnormals as zero (DAZ) and
    flushes subnormal results (FTZ) exactly where cutlax's models say the
    kernels do, for float32 and bfloat16."""
    flush = _flushes(dev)
    mul = jax.jit(lambda x, y: x * y)
    for dtype in (F32, np.dtype(jnp.bfloat16)):
        daz = float(mul(*_on(dev, np.array(2.0**-130, dtype), np.array(2.0**30, dtype))))
        ftz = float(mul(*_on(dev, np.array(2.0**-100, dtype), np.array(2.0**-30, dtype))))
        assert (daz == 0) == flush and (ftz == 0) == flush, (dev, dtype, daz, ftz)
