"""Chorus: a Horovod-style distributed training runtime. PyTorch users import
chorus.torch (the API of horovod.torch)."""
import os as _os
import sys as _sys

# Open MPI loads its components with dlopen and they need libmpi's symbols:
# load the extension (and with it libmpi) with RTLD_GLOBAL, as mpi4py does.
_flags = _sys.getdlopenflags()
_sys.setdlopenflags(_flags | _os.RTLD_GLOBAL)
try:
    import torch as _torch  # noqa: F401  (LibTorch's libraries before ours)
    from . import _chorus
finally:
    _sys.setdlopenflags(_flags)

ChorusError = _chorus.ChorusError
ChorusValueError = _chorus.ChorusValueError

__version__ = "0.1.0"
