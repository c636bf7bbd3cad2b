"""Triton kernels for the population forward pass (imported only by ``backend=triton``).

One module per job: :mod:`.noise` rebuilds eps(seed) inside a kernel, :mod:`.linear` a
fully connected layer of every alive member (in-kernel noise or dense weights),
:mod:`.lowrank` a layer under EGGROLL low-rank perturbations, :mod:`.conv` a convolution
of every alive member. ``TRITON_INTERPRET=1`` must be set before these modules are
imported to run them on the CPU interpreter.
"""
