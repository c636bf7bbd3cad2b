"""A ``net.type=module`` population whose matrices move by low-rank products, never built
(feed-forward modules and recurrent encoders, whose state goes in and out per row).

EGGROLL (Sarkar et al. 2025) for any ``torch.nn.Module``: member i's ``nn.Linear`` weight
``W (out, in)`` is ``W_b + c_i A_i B_iᵀ`` (:mod:`neuroplug.population.lowrank`: ``A_i``
``(out, r)`` and ``B_i`` ``(in, r)`` read from the member's noise, ``c_i = scale_i /
sqrt(r)``), so its layer is ``x W_bᵀ + c_i (x B_i) A_iᵀ``. The module runs **once per base**
on every row of that base, with the base's tensors (``torch.func.functional_call``): the
shared product is one batched computation, as one model's inference. Forward hooks on
its layers then add each row's own part:

- ``nn.Linear``: ``c_i (x B_i) A_iᵀ`` (a low-rank weight) or ``x (W_i - W_b)ᵀ`` (a small
  one, kept dense), and its bias's own noise; GPT-2's ``Conv1D`` (``transformers``: a linear
  layer whose weight is stored ``(in, out)``, ``x W + b``) likewise, ``c_i (x A_i) B_iᵀ``;
- ``nn.Embedding``: the rows ``c_i A_i[ids] B_iᵀ`` of its low-rank table (or the dense
  difference's rows);
- ``nn.LayerNorm``: the normalised input scaled and shifted by the member's own weight
  and bias (the norm's forward replaced while the module runs, so it normalises once); an RMSNorm (``nn.RMSNorm``, and the Llama family's in ``transformers``:
  :data:`RMS_NORMS`) likewise, scaled by the member's own weight;
- ``nn.MultiheadAttention``: written out (:mod:`neuroplug.nets.attention`), each of its
  projections with the row's own part (the packed ``in_proj_weight``'s thirds read from
  the one matrix's factors).

A row is one member's input, and every layer sees the rows first (``(n, ...)``, the batch
the module was given: a transformer's ``(n, L, d)`` keeps it). Rows in runs of one member
each, all of one length (an evaluation's usual call: each member's episodes side by side)
are taken a run at a time, ``(runs, length x ..., d)``, so a member's tensors are read
once per run and, for the whole population in order, used as stored: gathering them per
row cost as much as the shared product at width 256
(``benchmarks/results/module_lowrank_forward.md``). A member's factors are
``r (in + out)`` numbers per matrix, its dense tensors (biases, norms, small matrices) its
own: memory is the bases plus ``n`` rows of factors, never ``n x D``. Modules with
parameters of another kind (``nn.Conv2d``, a user's ``nn.Parameter``) are not supported
here (:func:`unsupported_module`): their population is materialised as before.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call

from neuroplug.nets.attention import batched_attention, written_out
from neuroplug.nets.module_network import ModuleNetwork
from neuroplug.population.members import Population
from neuroplug.population.noise import noise_vectors

SUPPORTED = (nn.Linear, nn.Embedding, nn.LayerNorm, nn.RMSNorm)
"""The layers whose members' own parts are added by hooks; any other module with
parameters of its own rules the factored path out."""
RMS_NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm", "Qwen3RMSNorm", "MistralRMSNorm")
"""``transformers``' RMSNorms that compute ``weight * x / rms(x)`` in float32, as
``nn.RMSNorm`` does (Gemma's, ``(1 + weight) * ...``, is not one of them)."""


def _is_conv1d(module: nn.Module) -> bool:
    """``transformers``' ``Conv1D`` (GPT-2's linear layers: ``x W + b``, ``W`` ``(in, out)``)."""
    return type(module).__name__ == "Conv1D" and hasattr(module, "nf") and hasattr(module, "nx")


def _is_norm(module: nn.Module) -> bool:
    """A LayerNorm or an RMSNorm (``nn.RMSNorm``, :data:`RMS_NORMS`)."""
    return isinstance(module, (nn.LayerNorm, nn.RMSNorm)) or type(module).__name__ in RMS_NORMS


def _supported(module: nn.Module) -> bool:
    return isinstance(module, SUPPORTED) or _is_norm(module) or _is_conv1d(module)


def _rms_epsilon(module: nn.Module) -> float | None:
    """An RMSNorm's epsilon (None: the dtype's, as ``nn.RMSNorm`` takes it)."""
    return getattr(module, "variance_epsilon", getattr(module, "eps", None))


def unsupported_module(network: ModuleNetwork) -> str | None:
    """The first submodule (``name (Type)``) with parameters of a kind this path cannot
    add per member, or None when every parameter belongs to a supported layer."""
    for name, module in network.module.named_modules():
        own = list(module.parameters(recurse=False))
        attention = isinstance(module, nn.MultiheadAttention) and written_out(module)
        if own and not (_supported(module) or attention):
            return f"{name or 'the module'} ({type(module).__name__})"
    return None


def factored_module(network) -> bool:
    """Whether ``network`` is a ``net.type=module`` network (feed-forward or a recurrent
    encoder) every parameter of which belongs to a supported layer (:data:`SUPPORTED`)."""
    return isinstance(network, ModuleNetwork) and unsupported_module(network) is None


class _Factors:
    """One low-rank matrix's per-member factors, ``c A`` and ``B``, for the rows run."""

    def __init__(self, scaled_a: torch.Tensor, b: torch.Tensor) -> None:
        self.scaled_a = scaled_a
        """``(P, rows, r)``: ``c_i A_i`` (the scale folded in)."""
        self.b = b
        """``(P, cols, r)``."""


class FactoredModule:
    """Forward passes of a module population whose big matrices stay factored (see the
    module docstring)."""

    def __init__(self, network: ModuleNetwork, population: Population, device: torch.device):
        if population.lowrank is None or population.sigma is not None:
            raise ValueError("FactoredModule needs a low-rank population without sigma")
        self.network = network
        self.device = device
        network.place_constants(device)
        self.module = network.module
        self.base_index = population.base_index.to(device)
        self.bases = population.base_params(device)
        self.base_tensors = [network.layout.split(base) for base in self.bases]
        seeds, scales = population.seed, population.scale
        rank = population.lowrank.rank
        self.factors: dict[str, _Factors] = {}
        self.deltas: dict[str, torch.Tensor] = {}
        """Dense tensors' member-minus-base noise ``(P, *shape)`` (biases, norms, small
        matrices)."""
        for name, slot in network.layout.slots.items():
            matrix = population.lowrank.matrix_at(slot.offset)
            if matrix is not None:
                size = (matrix.rows + matrix.cols) * rank
                noise = noise_vectors(
                    seeds, network.num_params, slot.offset, slot.offset + size, device=device
                )
                coefficient = (scales / math.sqrt(rank)).to(device).view(-1, 1, 1)
                scaled_a = noise[:, : matrix.rows * rank].reshape(-1, matrix.rows, rank)
                b = noise[:, matrix.rows * rank :].reshape(-1, matrix.cols, rank)
                self.factors[name] = _Factors(scaled_a * coefficient, b)
                continue
            noise = noise_vectors(
                seeds, network.num_params, slot.offset, slot.offset + slot.size, device=device
            )
            delta = scales.to(device).unsqueeze(1) * noise
            self.deltas[name] = delta.view(len(seeds), *slot.shape)
        self._runs: torch.Tensor | None = None
        """The running forward's member of each run of rows; None: the whole population in
        order, every per-member tensor used as stored."""
        self._run_count = 0
        """How many runs of rows the running forward has (one row each when they are not
        in equal runs of one member)."""
        self._own: dict[str, torch.Tensor] = {}
        """Norms' tensors of each member, base plus noise ``(P, *shape)``, built on first
        use."""
        self.prefixes = {
            module: f"{name}." if name else "" for name, module in self.module.named_modules()
        }
        self.parameter_names = {id(tensor): name for name, tensor in self.module.named_parameters()}
        """Each parameter's name in the layout (a tied one's, the first name it has)."""

    # ------------------------------------------------------------------ forward

    @torch.no_grad()
    def forward(
        self, members: torch.Tensor, inputs: torch.Tensor, state: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Outputs ``(n, out)`` of ``members[j]`` on ``inputs[j]`` (a recurrent module's from
        ``state[j]``, with the new states; None without): the module once per base, each
        row's own part added by the layers' hooks."""
        members = members.to(self.device, torch.int64)
        inputs = inputs.to(self.device)
        if self.network.state_size and state is None:  # an episode's start: zeros
            state = inputs.new_zeros((len(inputs), self.network.state_size), dtype=torch.float32)
        outputs = new_state = None
        rows_of_base = self.base_index[members]
        bases = torch.unique(rows_of_base).tolist()
        for base in bases:
            # One base (an ES population's): every row, as given, without a copy.
            rows = slice(None) if len(bases) == 1 else torch.nonzero(rows_of_base == base).flatten()
            chosen = members[rows]
            arguments = (self._inputs(inputs[rows]),)
            if self.network.state_size:  # an encoder's call names the part it runs
                arguments = (*arguments, state[rows].to(self.device))
                if self.network.encoder_features:
                    arguments = (*arguments, "all")
            self._runs, self._run_count = self._runs_of(chosen)
            attention = self._attention(len(chosen))
            with (
                self._member_parts(len(chosen)),
                batched_attention(self.module, attention, fused=True),
            ):
                part = functional_call(self.module, self.base_tensors[base], arguments)
            part_state = None
            if self.network.state_size:
                part, part_state = part
            if len(bases) == 1:
                return part, part_state
            if part_state is not None:
                if new_state is None:
                    new_state = part_state.new_empty((len(members), *part_state.shape[1:]))
                new_state[rows] = part_state
            if outputs is None:
                outputs = part.new_empty((len(members), *part.shape[1:]))
            outputs[rows] = part
        if outputs is None:
            empty = torch.zeros((0, self.network.output_size), device=self.device)
            return empty, (None if state is None else state[:0])
        return outputs, new_state

    def _inputs(self, inputs: torch.Tensor) -> torch.Tensor:
        from neuroplug.nets.layers import as_float

        return as_float(inputs, torch.float32) if inputs.dtype != torch.float32 else inputs

    def _runs_of(self, members: torch.Tensor) -> tuple[torch.Tensor | None, int]:
        """The rows as runs of one member: (each run's member, or None for the whole
        population in order; how many runs). Rows that are not in runs of one length are
        runs of one row."""
        count = len(members)
        starts = torch.ones(count, dtype=torch.bool, device=members.device)
        starts[1:] = members[1:] != members[:-1]
        first = torch.nonzero(starts).flatten()
        runs = len(first)
        length = count // max(runs, 1)
        if runs == 0 or runs * length != count:
            return members, count
        if not torch.equal(first, torch.arange(0, count, length, device=members.device)):
            return members, count
        owners = members[first]
        whole = runs == len(self.base_index) and torch.equal(
            owners, torch.arange(runs, device=owners.device)
        )
        return (None if whole else owners), runs

    @contextlib.contextmanager
    def _member_parts(self, rows: int) -> Iterator[None]:
        """Within: each supported layer adds every row's own part, the linear layers and
        embeddings by forward hooks on their own forwards, the norms by forwards of their
        own in place of the module's (theirs would be thrown away)."""
        handles, replaced = [], []
        for module, prefix in self.prefixes.items():
            if _is_norm(module):
                module.forward = self._norm(module, prefix, rows)
                replaced.append(module)
            elif _supported(module):
                handles.append(module.register_forward_hook(self._hook(module, prefix, rows)))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()
            for module in replaced:
                del module.forward

    def _check_rows(self, module: nn.Module, prefix: str, tensor: torch.Tensor, rows: int) -> None:
        if tensor.shape[0] != rows:
            raise RuntimeError(
                f"{prefix.rstrip('.') or 'the module'} ({type(module).__name__}) got a batch "
                f"of {tensor.shape[0]} rows for {rows} members: a factored low-rank "
                "population needs every layer to see the members' rows first"
            )

    def _hook(self, module: nn.Module, prefix: str, rows: int):
        runs = self._run_count
        # The layout's names of its tensors: a tied weight (an output layer sharing the
        # embedding's) is the tensor it is tied to, with that tensor's factors.
        weight_name = self.parameter_names.get(id(getattr(module, "weight", None)))
        bias_name = self.parameter_names.get(id(getattr(module, "bias", None)))

        def linear(_, args, output):
            x = args[0]
            self._check_rows(module, prefix, x, rows)
            flat = x.reshape(runs, -1, x.shape[-1])
            bias = None if module.bias is None else self._take(self.deltas[bias_name])
            # A view of the layer's fresh output (a copy if it is not contiguous): the
            # rows' parts go in in place.
            grouped = output.reshape(runs, -1, output.shape[-1])
            self._add_matrix_part(grouped, weight_name, flat, bias=bias)
            return grouped.reshape(output.shape)

        def conv1d(_, args, output):  # x W + b with W (in, out): the transposed product
            x = args[0]
            self._check_rows(module, prefix, x, rows)
            flat = x.reshape(runs, -1, x.shape[-1])
            grouped = output.reshape(runs, -1, output.shape[-1])
            self._add_matrix_part(
                grouped, weight_name, flat, stored_in_by_out=True,
                bias=self._take(self.deltas[bias_name]),
            )  # fmt: skip
            return grouped.reshape(output.shape)

        def embedding(_, args, output):
            ids = args[0]
            self._check_rows(module, prefix, ids, rows)
            flat = ids.reshape(runs, -1)
            name = weight_name
            if name in self.factors:
                factors = self.factors[name]
                scaled_a = self._take(factors.scaled_a)
                picked = torch.gather(  # c A_i[ids]: (runs, k, r)
                    scaled_a, 1, flat.unsqueeze(-1).expand(-1, -1, scaled_a.shape[-1])
                )
                extra = torch.bmm(picked, self._take(factors.b).transpose(1, 2))
            else:
                delta = self._take(self.deltas[name])
                extra = torch.gather(delta, 1, flat.unsqueeze(-1).expand(-1, -1, delta.shape[-1]))
            return output + extra.reshape(output.shape)

        if isinstance(module, nn.Linear):
            return linear
        if _is_conv1d(module):
            return conv1d
        return embedding

    def _norm(self, module: nn.Module, prefix: str, rows: int):
        """A LayerNorm's or RMSNorm's forward with each row's own weight (and bias)."""
        runs = self._run_count
        weight_name = self.parameter_names.get(id(getattr(module, "weight", None)))
        bias_name = self.parameter_names.get(id(getattr(module, "bias", None)))
        layer = isinstance(module, nn.LayerNorm)
        normalized = tuple(getattr(module, "normalized_shape", ()))

        def own(name: str) -> torch.Tensor:  # (runs, 1, *normalized)
            return self._take(self._own_tensor(name)).reshape(runs, 1, *normalized)

        def forward(x: torch.Tensor) -> torch.Tensor:
            self._check_rows(module, prefix, x, rows)
            if layer:
                normalised = F.layer_norm(x, normalized, eps=module.eps)
                if not module.elementwise_affine:
                    return normalised
                grouped = normalised.reshape(runs, -1, *normalized)
                if module.bias is not None:
                    return torch.addcmul(own(bias_name), grouped, own(weight_name)).reshape(x.shape)
                return (grouped * own(weight_name)).reshape(x.shape)
            return rms(x)

        def rms(x: torch.Tensor) -> torch.Tensor:
            epsilon = _rms_epsilon(module)
            wide = x.float()
            if epsilon is None:
                epsilon = torch.finfo(wide.dtype).eps
            # nn.RMSNorm may normalise over several trailing axes; transformers' over one.
            shape = normalized or (x.shape[-1],)
            axes = tuple(range(-len(shape), 0))
            normalised = wide * torch.rsqrt(wide.pow(2).mean(axes, keepdim=True) + epsilon)
            if getattr(module, "weight", None) is None:
                return normalised.to(x.dtype)
            weight = self._take(self._own_tensor(weight_name)).reshape(runs, 1, *shape)
            grouped = normalised.reshape(runs, -1, *shape) * weight
            return grouped.reshape(x.shape).to(x.dtype)

        return forward

    def _attention(self, rows: int):
        """For :func:`~neuroplug.nets.attention.batched_attention`: an attention module's
        projections, each with every row's own part added (its packed ``in_proj_weight``'s
        thirds read from the one matrix's factors)."""
        runs = self._run_count

        def linear_for(module: nn.MultiheadAttention):
            prefix = self.prefixes[module]
            embed = module.embed_dim

            def linear(x, name, weight, bias):
                self._check_rows(module, prefix, x, rows)
                flat = x.reshape(runs, -1, x.shape[-1])
                if name == "out_proj":
                    matrix, third = prefix + "out_proj.weight", None
                    bias_name, part = prefix + "out_proj.bias", slice(None)
                elif name == "qkv":  # the whole packed projection
                    matrix, third = prefix + "in_proj_weight", None
                    bias_name, part = prefix + "in_proj_bias", slice(None)
                else:
                    part = slice("qkv".index(name) * embed, ("qkv".index(name) + 1) * embed)
                    packed = module._qkv_same_embed_dim
                    matrix = prefix + ("in_proj_weight" if packed else f"{name}_proj_weight")
                    third = part if packed else None
                    bias_name = prefix + "in_proj_bias"
                own_bias = None if bias is None else self._take(self.deltas[bias_name])[:, part]
                output = F.linear(x, weight, bias)
                grouped = output.reshape(runs, -1, output.shape[-1])
                self._add_matrix_part(grouped, matrix, flat, third, bias=own_bias)
                return grouped.reshape(output.shape)

            return linear

        return linear_for

    def _own_tensor(self, name: str) -> torch.Tensor:
        """Tensor ``name`` of every member ``(P, *shape)``: its base's plus its own noise
        (a norm's: small), built once."""
        if name not in self._own:
            stacked = torch.stack([tensors[name] for tensors in self.base_tensors])
            self._own[name] = stacked[self.base_index] + self.deltas[name]
        return self._own[name]

    def _take(self, tensor: torch.Tensor) -> torch.Tensor:
        """A per-member tensor ``(P, ...)`` for the running forward's runs of rows
        ``(runs, ...)``: itself for the whole population in order, else each run's member's
        (``index_select``: a fifth of indexing's cost here)."""
        return tensor if self._runs is None else tensor.index_select(0, self._runs)

    def _add_matrix_part(
        self, output: torch.Tensor, name: str, x: torch.Tensor, rows: slice | None = None,
        stored_in_by_out: bool = False, bias: torch.Tensor | None = None,
    ) -> None:  # fmt: skip
        """Adds each run's own part of ``x Wᵀ`` for weight ``name`` (its output ``rows``
        alone, when given: a packed projection's third) to ``output`` in place: ``x``
        ``(runs, k, in)``, ``output`` ``(runs, k, out)``; ``stored_in_by_out``: of ``x W``
        for a weight stored ``(in, out)`` (``Conv1D``'s); ``bias`` ``(runs, out)``: each
        run's own bias part."""
        if bias is not None:
            output.add_(bias.unsqueeze(1))
        if stored_in_by_out:
            if name in self.factors:
                factors = self.factors[name]
                projected = torch.bmm(x, self._take(factors.scaled_a))  # (runs, k, r): x c A_i
                output.baddbmm_(projected, self._take(factors.b).transpose(1, 2))
            else:
                output.baddbmm_(x, self._take(self.deltas[name]))
            return
        rows = slice(None) if rows is None else rows
        if name in self.factors:
            factors = self.factors[name]
            if factors.b.shape[-1] == 1:
                # Rank 1 (EGGROLL's usual): a dot product and a scaled row, elementwise; a
                # batched product of (k, in) by (in, 1) per member cost more than the two
                # (benchmarks/results/module_lowrank_forward.md).
                b_row = self._take(factors.b).transpose(1, 2)  # (runs, 1, in)
                a_row = self._take(factors.scaled_a)[:, rows].transpose(1, 2)
                projected = (x * b_row).sum(-1, keepdim=True)  # (runs, k, 1): x B_i
                output.addcmul_(projected, a_row)
                return
            projected = torch.bmm(x, self._take(factors.b))  # (runs, k, r): x B_i
            output.baddbmm_(projected, self._take(factors.scaled_a)[:, rows].transpose(1, 2))
        else:
            output.baddbmm_(x, self._take(self.deltas[name])[:, rows].transpose(1, 2))
