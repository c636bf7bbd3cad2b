"""Triton kernels for the population forward pass (imported only by ``backend=triton``).

One module per job: :mod:`.noise` rebuilds eps(seed) inside a kernel, :mod:`.linear` a
fully connected layer of every alive member (in-kernel noise, optionally scaled per
parameter by the base's sigma, or dense weights), :mod:`.lowrank` a layer under EGGROLL
low-rank perturbations, :mod:`.conv` a convolution of every alive member,
:mod:`.activation` the activations. ``TRITON_INTERPRET=1`` must be
set before triton is first imported to run them on the CPU interpreter.

What is fused, and why: the work that would otherwise cost memory traffic per member —
generating the perturbation and adding it to the weight tile, bias, activation, scaling
uint8 frames — happens inside each layer's kernel, so perturbed weights and float copies
of frames never reach memory. Layers are separate launches: between two layers a member
writes and reads back only its activations (hundreds of floats against hundreds of
thousands of weights), well under 1% of a layer's weight traffic.
"""
