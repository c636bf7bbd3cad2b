"""Every kernel compiles for the Hopper target (sm_90) without a GPU.

The interpreter checks the numbers; this checks that the same source lowers through
Triton's real compiler (TTIR -> TTGIR -> LLVM -> PTX -> cubin) for an H100, so code the
interpreter tolerates but the compiler rejects is caught on a CPU-only machine. It runs in
a fresh interpreter because the kernels must be imported with TRITON_INTERPRET unset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from neuroplug_triton.kernels.conv import population_conv_kernel
    from neuroplug_triton.kernels.linear import population_linear_kernel
    from neuroplug_triton.kernels.lowrank import (
        lowrank_linear_kernel,
        lowrank_projection_kernel,
    )

    POINTERS = {
        "x_ptr": "*fp32", "out_ptr": "*fp32", "rows_ptr": "*i64", "base_index_ptr": "*i64",
        "scale_ptr": "*fp32", "seed_ptr": "*i64", "params_ptr": "*fp32", "sigma_ptr": "*fp32",
        "projected_ptr": "*fp32", "slot_row_ptr": "*i64", "slot_member_ptr": "*i64",
    }
    FLOATS = {"input_scale", "correction_scale"}

    def compile_for_hopper(kernel, constexprs, **types):
        signature = {}
        for name in kernel.arg_names:
            if name in constexprs:
                signature[name] = "constexpr"
            elif name in types:
                signature[name] = types[name]
            elif name in POINTERS:
                signature[name] = POINTERS[name]
            else:
                signature[name] = "fp32" if name in FLOATS else "i32"
        source = ASTSource(fn=kernel, signature=signature, constexprs=constexprs)
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32))
        assert compiled.asm["cubin"], kernel
        assert ".target sm_90" in compiled.asm["ptx"], kernel
        return compiled

    linear = dict(ACTIVATION=1, BLOCK_N=64, BLOCK_K=32)
    for perturb, sigma, aligned, dot, block_m in [
        (1, 0, 1, 0, 1), (1, 0, 0, 0, 4), (1, 0, 1, 1, 16), (0, 0, 0, 1, 16),
        (1, 1, 1, 0, 1), (1, 1, 0, 0, 4), (1, 1, 1, 1, 16),  # per-parameter sigma
    ]:
        compile_for_hopper(
            population_linear_kernel,
            dict(linear, PERTURB=perturb, SIGMA=sigma, ALIGNED=aligned, USE_DOT=dot,
                 BLOCK_M=block_m),
        )
    # Dense members stored as bfloat16, and uint8 inputs.
    compile_for_hopper(
        population_linear_kernel,
        dict(linear, PERTURB=0, SIGMA=0, ALIGNED=0, USE_DOT=0, BLOCK_M=1),
        params_ptr="*bf16",
        sigma_ptr="*bf16",
        x_ptr="*u8",
    )
    for dot, block_m, aligned in [(1, 16, 1), (1, 16, 0), (0, 1, 1), (0, 1, 0)]:
        compile_for_hopper(
            lowrank_linear_kernel,
            dict(ACTIVATION=1, RANK=4, BLOCK_R=4, ALIGNED=aligned, USE_DOT=dot,
                 BLOCK_M=block_m, BLOCK_N=64, BLOCK_K=32),
        )
    for aligned, rank, block_r in [(1, 4, 4), (0, 3, 4)]:
        compile_for_hopper(
            lowrank_projection_kernel,
            dict(RANK=rank, BLOCK_R=block_r, ALIGNED=aligned, BLOCK_M=16, BLOCK_K=32),
        )
    for perturb, sigma, aligned in [(1, 0, 1), (1, 0, 0), (0, 0, 0), (1, 1, 1), (1, 1, 0)]:
        compile_for_hopper(
            population_conv_kernel,
            dict(KSIZE=8, ACTIVATION=2, PERTURB=perturb, SIGMA=sigma, ALIGNED=aligned,
                 BLOCK_P=64, BLOCK_CO=32, BLOCK_K=32),
            x_ptr="*u8",
        )
    print("compiled")
    """
)


def test_kernels_compile_for_sm90_without_a_gpu():
    triton = pytest.importorskip("triton")
    try:
        from triton.backends.compiler import GPUTarget  # noqa: F401
        from triton.compiler import ASTSource  # noqa: F401
    except ImportError as error:
        pytest.skip(f"triton {triton.__version__} has no ahead-of-time compile API: {error}")
    env = {key: value for key, value in os.environ.items() if key != "TRITON_INTERPRET"}
    env.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "compiled" in done.stdout
