"""``backend=triton``: the population's forward pass in Triton kernels.

Modes (``backend.mode``):

- ``auto`` (default): what measured fastest on an H100 (``benchmarks/results/triton_inference.md``):
  ``dense`` float32 whenever the materialised population fits ``max_materialized_mb``
  (faster than ``noise`` for the MLP and the Nature CNN at every population measured),
  ``noise`` when it does not (large Nature CNN populations, where ``backend=torch`` runs
  out of memory), and low-rank populations through their factored kernel (faster than
  materialising them for the MLP).
- ``noise``: each layer's weight tiles are rebuilt in registers as
  ``base[b_i] + scale_i * sigma[b_i] * eps(seed_i)`` (the Philox layout of
  :mod:`neuroplug.population.noise`; the sigma tile, when the population has one, is read like the
  base tile), so perturbed weights are never written to memory and device memory holds
  only the bases (and sigmas). Bases given as init draws are built on the device once per
  load. Populations with low-rank perturbations (``algo.perturbation=lowrank``) run their
  low-rank matrices as ``x W + s (x A) Bᵀ`` instead
  (:mod:`neuroplug_triton.kernels.lowrank`) — except with a sigma (``sigma ⊙ (A Bᵀ)`` does
  not factor that way) or with low-rank convolution kernels (the convolution kernels
  build dense noise): such a population runs as in ``dense`` mode (in float32).
- ``dense``: members are materialised once per evaluation (``dense_dtype`` float32 or
  bfloat16) and each row reads its own weights: for populations that are not a few bases
  plus noise, or to compare against the noise mode.

Either way the members are exactly :meth:`neuroplug.population.members.Population.materialize`'s.

Only the rows passed to :meth:`TritonBackend.forward` run; the member index tensor is
copied to the device and read there, so a step costs no device-to-host sync. Needs a CUDA
GPU, or ``TRITON_INTERPRET=1`` (set before start-up) to run the same kernels on the CPU
interpreter — slow, meant for tests. triton itself is imported only when the backend is
built (``pip install 'neuroplug[triton]'``), so this module loads without it.
"""

from __future__ import annotations

import os

import torch

from neuroplug.api import Backend
from neuroplug.errors import ConfigError, require
from neuroplug.nets.layers import CONV2D, LINEAR, fan_in, kernel_size, out_channels
from neuroplug.nets.network import Network
from neuroplug.population.members import Population
from neuroplug.runtime.devices import resolve_device
from neuroplug_triton.backend_config import DENSE_DTYPE_NAMES, TritonBackendConfig

DENSE_DTYPES = {name: getattr(torch, name) for name in DENSE_DTYPE_NAMES}
_MATERIALIZE_CHUNK_BYTES = 1 << 30


def interpreting() -> bool:
    """Whether Triton kernels run on the CPU interpreter (``TRITON_INTERPRET=1``)."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


def triton_device(name: str) -> torch.device:
    """The device the kernels run on, or a :class:`ConfigError` saying what to use instead."""
    fallback = (
        "backend=torch (PyTorch on CPU or GPU), or TRITON_INTERPRET=1 in the environment to "
        "run these kernels on the CPU interpreter (slow; meant for tests)"
    )
    try:
        import triton  # noqa: F401
    except ImportError as error:
        raise ConfigError(
            "backend",
            f"backend=triton needs triton, which is not installed ({error})",
            "pip install 'neuroplug[triton]', or backend=torch",
        ) from None
    if interpreting():
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(
            "backend", "backend=triton needs a CUDA GPU and none is visible", fallback
        )
    device = resolve_device(name)  # a GPU is visible, so auto means CUDA
    require(
        device.type == "cuda",
        "backend.device",
        f"got {name!r}",
        f"auto, cuda, cuda:N; or {fallback}",
    )
    return device


def unsupported_layers(network: Network, activation_codes: dict[str, int]) -> str:
    """Why the kernels cannot run ``network``'s layer table ("" when they can): they run
    linear layers and square convolutions with the activations they know."""
    if not network.layers:
        return f"{type(network).__name__} has no layer table"
    for layer in network.layers:
        if layer.kind not in (LINEAR, CONV2D):
            return f"layer {layer.weight} is a {layer.kind}"
        if layer.activation not in activation_codes:
            return f"layer {layer.weight} ends in {layer.activation}"
        if layer.measurements:
            return f"layer {layer.weight} joins {layer.measurements} measurements to its input"
        shape = network.layout.slots[layer.weight].shape
        if layer.kind == CONV2D and shape[2] != shape[3]:
            return f"convolution {layer.weight} has a non-square kernel {shape[2:]}"
    return ""


class TritonBackend(Backend):
    """Heterogeneous batched inference in Triton kernels, layer by layer as the network's
    table lists them (linear layers and convolutions: the MLP and the Nature CNN)."""

    config_class = TritonBackendConfig

    def __init__(self, config: TritonBackendConfig, network: Network) -> None:
        super().__init__(config, network)
        self._device = triton_device(config.device)
        # Imported here: the kernels are compiled (or interpreted) only when this backend runs.
        from neuroplug_triton.kernels import activation, conv, linear, lowrank

        unsupported = unsupported_layers(network, activation.ACTIVATION_CODES)
        if unsupported:
            raise ConfigError(
                "backend",
                f"backend=triton cannot run {network.describe()}: {unsupported}",
                "backend=torch",
            )

        self._population_linear = linear.population_linear
        self._lowrank_linear = lowrank.lowrank_linear
        self._row_tiles = lowrank.row_tiles
        self._row_block = lowrank.ROW_BLOCK
        self._lowrank = None
        self._tiles = None
        self._population_conv = conv.population_conv
        self._activation_codes = activation.ACTIVATION_CODES
        self._population: Population | None = None

    @property
    def device(self) -> torch.device:
        return self._device

    def load(self, population: Population) -> None:
        device = self._device
        self._population = population
        self._scale = population.scale.to(device, torch.float32)
        self._seed = population.seed.to(device, torch.int64)
        # Populations of bases only (the trainer's evaluations, a GA's elites alone) skip
        # the noise generation; the check reads the CPU scales once per load.
        perturb = bool((population.scale != 0).any())
        lowrank = population.lowrank if perturb else None
        dense = self._dense(population, lowrank)
        # sigma ⊙ (A Bᵀ) does not factor as (x A) Bᵀ: such populations run as dense float32.
        sigma_lowrank = population.sigma is not None and bool(lowrank and lowrank.matrices)
        # The convolution kernels generate dense noise; low-rank kernels run materialised.
        conv_lowrank = lowrank is not None and any(
            len(slot.shape) == 4 and lowrank.matrix_at(slot.offset) is not None
            for slot in self.network.layout.slots.values()
        )
        if dense or sigma_lowrank or conv_lowrank:
            dtype = DENSE_DTYPES[self.config.dense_dtype] if dense else torch.float32
            self._params = self._materialize(population, dtype)
            self._base_index = torch.arange(len(population), dtype=torch.int64, device=device)
            self._perturb = False
            self._lowrank = None
            self._sigma = None
        else:
            self._params = population.base_params(device).to(torch.float32).contiguous()
            self._base_index = population.base_index.to(device, torch.int64)
            self._perturb = perturb
            self._lowrank = lowrank
            self._sigma = (
                population.sigma.to(device, torch.float32).contiguous()
                if perturb and population.sigma is not None
                else None
            )
        self._one_base = population.num_bases == 1

    def _materialized_mb(self, population_size: int) -> float:
        return population_size * self.network.num_params * 4 / 2**20

    def _materialize_budget_mb(self) -> float:
        if self.config.max_materialized_mb:
            return float(self.config.max_materialized_mb)
        if self._device.type != "cuda":
            return 4096.0
        free, _ = torch.cuda.mem_get_info(self._device)
        return free / 2 / 2**20

    def _dense(self, population: Population, lowrank) -> bool:
        """Whether this population is materialised (``dense`` mode, or ``auto`` choosing it)."""
        mode = self.config.mode
        if mode != "auto":
            return mode == "dense"
        if lowrank is not None and lowrank.matrices:
            return False  # the factored kernel (or, where it cannot run, float32 dense below)
        return self._materialized_mb(len(population)) <= self._materialize_budget_mb()

    def plan(self, population_size: int) -> str:
        if self.config.mode != "auto":
            return ""
        size_mb = self._materialized_mb(population_size)
        budget = self._materialize_budget_mb()
        if size_mb <= budget:
            return ""
        return (
            f"triton auto mode: noise (members would take {size_mb:,.0f} MB > {budget:,.0f} MB; "
            "weights rebuilt from seeds in the kernels)"
        )

    def _materialize(self, population: Population, dtype: torch.dtype) -> torch.Tensor:
        """All members as a ``(P, D)`` matrix of ``dtype``, built a chunk at a time so the
        float32 temporaries stay near ``_MATERIALIZE_CHUNK_BYTES`` however big P is."""
        size, num_params = len(population), population.num_params
        params = torch.empty((size, num_params), dtype=dtype, device=self._device)
        step = max(1, _MATERIALIZE_CHUNK_BYTES // (4 * num_params))
        on_device = population.to(self._device)
        for start in range(0, size, step):
            chunk = torch.arange(start, min(size, start + step), dtype=torch.int64)
            params[start : start + len(chunk)] = on_device.materialize(chunk, self._device)
        return params

    @torch.no_grad()
    def forward(self, members: torch.Tensor, observations: torch.Tensor) -> torch.Tensor:
        """Outputs ``(n, out)``; observations ``(n, M, *input_shape)`` give ``(n, M, out)``.

        Several observations of one member share its weight tiles (and its noise) in the
        kernels.
        """
        if self._population is None:
            raise RuntimeError("TritonBackend.forward called before load(population)")
        rows = members.to(self._device, torch.int64, non_blocking=True)
        single = observations.dim() == len(self.network.input_shape) + 1
        x = observations.to(self._device, non_blocking=True)
        x = x.unsqueeze(1) if single else x
        self._tiles = None
        if self._lowrank is not None and self._lowrank.matrices:
            # The low-rank kernel tiles rows, not a member's observations: one row per
            # observation, placed in the member's fixed slot (worked out on the host).
            flat = members.cpu().to(torch.int64)
            flat = flat if x.shape[1] == 1 else flat.repeat_interleave(x.shape[1])
            block = self._row_block if self._one_base else 1
            self._tiles = self._row_tiles(flat, len(self._population), block, self._device)
        out = self._layers(rows, x)
        return out.squeeze(1) if single else out

    def _layers(self, rows: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The network's layer table on ``hidden`` ``(n, M, *input_shape)``: ``(n, M, out)``.

        uint8 frames are scaled by the first convolution as it reads them; a first linear
        layer gets them scaled here.
        """
        layout = self.network.layout
        input_scale = 1.0 / 255.0 if hidden.dtype == torch.uint8 else 1.0
        for layer in self.network.layers:
            code = self._activation_codes[layer.activation]
            if layer.kind == CONV2D:
                hidden = self._population_conv(
                    hidden,
                    rows,
                    self._params,
                    self._base_index,
                    self._scale,
                    self._seed,
                    layout.slots[layer.weight].offset,
                    layout.slots[layer.bias].offset,
                    out_channels(layout, layer),
                    kernel_size(layout, layer),
                    layer.stride,
                    layer.padding,
                    self._perturb,
                    input_scale,
                    sigma=self._sigma,
                    activation=code,
                )
            else:
                hidden = hidden.float()
                if input_scale != 1.0:
                    hidden = hidden * input_scale
                hidden = hidden.reshape(*hidden.shape[:2], fan_in(layout, layer))
                hidden = self._linear(rows, hidden, layer.weight, layer.bias, code)
            input_scale = 1.0
        return hidden

    def _linear(
        self, rows: torch.Tensor, x: torch.Tensor, weight: str, bias: str, activation: int
    ) -> torch.Tensor:
        """One fully connected layer of every row: ``x`` ``(n, M, K)`` -> ``(n, M, N)``."""
        slot = self.network.layout.slots[weight]
        b_offset = self.network.layout.slots[bias].offset
        fan_out = slot.shape[1]
        matrix = self._lowrank.matrix_at(slot.offset) if self._lowrank else None
        if matrix is None:
            return self._population_linear(
                x,
                rows,
                self._params,
                self._base_index,
                self._scale,
                self._seed,
                slot.offset,
                b_offset,
                fan_out,
                activation,
                self._perturb,
                sigma=self._sigma,
            )
        n, m, fan_in = x.shape
        out = self._lowrank_linear(
            x.reshape(n * m, fan_in),
            self._tiles,
            self._params,
            self._base_index,
            self._scale,
            self._seed,
            slot.offset,
            b_offset,
            fan_out,
            self._lowrank.rank,
            activation,
        )
        return out.reshape(n, m, fan_out)
