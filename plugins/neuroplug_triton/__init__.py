"""``backend=triton``: population inference in Triton kernels, as a plugin of its own.

:mod:`.backend` is the backend (registered through the ``neuroplug.backends`` entry
point); :mod:`.kernels` holds the Triton kernels it launches. Importing the backend does
not import triton — neuroplug reads every backend's config schema at start-up — so
triton is needed only when the backend is built: ``pip install 'neuroplug[triton]'``.
"""
