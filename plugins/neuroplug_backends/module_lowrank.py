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
  and bias; an RMSNorm (``nn.RMSNorm``, and the Llama family's in ``transformers``:
  :data:`RMS_NORMS`) likewise, scaled by the member's own weight;
- ``nn.MultiheadAttention``: written out (:mod:`neuroplug.nets.attention`), each of its
  projections with the row's own part (the packed ``in_proj_weight``'s thirds read from
  the one matrix's factors).

A row is one member's input, and every layer sees the rows first (``(n, ...)``, the batch
the module was given: a transformer's ``(n, L, d)`` keeps it). A member's factors are
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


def _supported(module: nn.Module) -> bool:
    return isinstance(module, SUPPORTED) or type(module).__name__ in RMS_NORMS or _is_conv1d(module)


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
        self._in_order = False
        """Whether the running forward's members are the whole population in order."""
        self._stacked: dict[str, torch.Tensor] = {}
        """Per-member norms' base tensors, ``(B, *shape)``, stacked on first use."""
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
        for base in torch.unique(rows_of_base).tolist():
            rows = torch.nonzero(rows_of_base == base).flatten()
            chosen = members[rows]
            arguments = (self._inputs(inputs[rows]),)
            if self.network.state_size:  # an encoder's call names the part it runs
                arguments = (*arguments, state[rows].to(self.device))
                if self.network.encoder_features:
                    arguments = (*arguments, "all")
            # The whole population in order (an evaluation's usual call): every per-member
            # tensor is used as stored, without a gather per layer.
            self._in_order = len(chosen) == len(self.base_index) and bool(
                torch.equal(chosen, torch.arange(len(chosen), device=chosen.device))
            )
            with self._hooks(chosen), batched_attention(self.module, self._attention(chosen)):
                part = functional_call(self.module, self.base_tensors[base], arguments)
            if self.network.state_size:
                part, part_state = part
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

    @contextlib.contextmanager
    def _hooks(self, members: torch.Tensor) -> Iterator[None]:
        handles = []
        for module, prefix in self.prefixes.items():
            if _supported(module):
                hook = self._hook(module, prefix, members)
                handles.append(module.register_forward_hook(hook))
        try:
            yield
        finally:
            for handle in handles:
                handle.remove()

    def _hook(self, module: nn.Module, prefix: str, members: torch.Tensor):
        count = len(members)
        # The layout's names of its tensors: a tied weight (an output layer sharing the
        # embedding's) is the tensor it is tied to, with that tensor's factors.
        weight_name = self.parameter_names.get(id(getattr(module, "weight", None)))
        bias_name = self.parameter_names.get(id(getattr(module, "bias", None)))

        def rows_first(tensor: torch.Tensor) -> None:
            if tensor.shape[0] != count:
                raise RuntimeError(
                    f"{prefix.rstrip('.') or 'the module'} ({type(module).__name__}) got a batch "
                    f"of {tensor.shape[0]} rows for {count} members: a factored low-rank "
                    "population needs every layer to see the members' rows first"
                )

        def linear(_, args, output):
            x = args[0]
            rows_first(x)
            flat = x.reshape(count, -1, x.shape[-1])
            bias = None if module.bias is None else self._take(self.deltas[bias_name], members)
            extra = self._matrix_part(weight_name, flat, members, bias=bias)
            return output.add_(extra.reshape(output.shape))  # a fresh tensor: no copy

        def conv1d(_, args, output):  # x W + b with W (in, out): the transposed product
            x = args[0]
            rows_first(x)
            flat = x.reshape(count, -1, x.shape[-1])
            extra = self._matrix_part(weight_name, flat, members, stored_in_by_out=True)
            extra = extra + self.deltas[bias_name][members].unsqueeze(1)
            return output + extra.reshape(output.shape)

        def embedding(_, args, output):
            ids = args[0]
            rows_first(ids)
            flat = ids.reshape(count, -1)
            name = weight_name
            if name in self.factors:
                factors = self.factors[name]
                picked = torch.gather(  # c A_i[ids]: (n, k, r)
                    factors.scaled_a[members], 1,
                    flat.unsqueeze(-1).expand(-1, -1, factors.scaled_a.shape[-1]),
                )  # fmt: skip
                extra = torch.bmm(picked, factors.b[members].transpose(1, 2))
            else:
                delta = self.deltas[name][members]
                extra = torch.gather(delta, 1, flat.unsqueeze(-1).expand(-1, -1, delta.shape[-1]))
            return output + extra.reshape(output.shape)

        def layer_norm(_, args, output):
            x = args[0]
            rows_first(x)
            if not module.elementwise_affine:
                return output
            normalised = F.layer_norm(x, module.normalized_shape, eps=module.eps)
            shape = (
                count,
                *[1] * (x.dim() - 1 - len(module.normalized_shape)),
                *module.normalized_shape,
            )
            weight = self.base_tensors_of(weight_name, members)
            scaled = normalised * weight.reshape(shape)
            if module.bias is not None:
                scaled = scaled + self.base_tensors_of(bias_name, members).reshape(shape)
            return scaled

        def rms_norm(_, args, output):
            x = args[0]
            rows_first(x)
            if getattr(module, "weight", None) is None:
                return output
            epsilon = _rms_epsilon(module)
            wide = x.float()
            if epsilon is None:
                epsilon = torch.finfo(wide.dtype).eps
            # nn.RMSNorm may normalise over several trailing axes; transformers' over one.
            normalized = tuple(getattr(module, "normalized_shape", (x.shape[-1],)))
            axes = tuple(range(-len(normalized), 0))
            normalised = wide * torch.rsqrt(wide.pow(2).mean(axes, keepdim=True) + epsilon)
            weight = self.base_tensors_of(weight_name, members)
            shape = (count, *[1] * (x.dim() - 1 - len(normalized)), *normalized)
            return (normalised * weight.reshape(shape)).to(output.dtype)

        if isinstance(module, nn.Linear):
            return linear
        if _is_conv1d(module):
            return conv1d
        if isinstance(module, nn.Embedding):
            return embedding
        if isinstance(module, nn.LayerNorm):
            return layer_norm
        return rms_norm

    def _attention(self, members: torch.Tensor):
        """For :func:`~neuroplug.nets.attention.batched_attention`: an attention module's
        projections, each with every row's own part added (its packed ``in_proj_weight``'s
        thirds read from the one matrix's factors)."""

        def linear_for(module: nn.MultiheadAttention):
            prefix = self.prefixes[module]
            embed = module.embed_dim

            def linear(x, name, weight, bias):
                if x.shape[0] != len(members):
                    raise RuntimeError(
                        f"{prefix.rstrip('.')} (MultiheadAttention) got a batch of "
                        f"{x.shape[0]} rows for {len(members)} members: a factored low-rank "
                        "population needs every layer to see the members' rows first"
                    )
                flat = x.reshape(len(members), -1, x.shape[-1])
                if name == "out_proj":
                    extra = self._matrix_part(prefix + "out_proj.weight", flat, members)
                    bias_name, part = prefix + "out_proj.bias", slice(None)
                else:
                    part = slice("qkv".index(name) * embed, ("qkv".index(name) + 1) * embed)
                    packed = module._qkv_same_embed_dim
                    matrix = prefix + ("in_proj_weight" if packed else f"{name}_proj_weight")
                    extra = self._matrix_part(matrix, flat, members, part if packed else None)
                    bias_name = prefix + "in_proj_bias"
                if bias is not None:
                    extra = extra + self.deltas[bias_name][members][:, part].unsqueeze(1)
                output = F.linear(x, weight, bias)
                return output + extra.reshape(output.shape)

            return linear

        return linear_for

    def base_tensors_of(self, name: str, members: torch.Tensor) -> torch.Tensor:
        """Tensor ``name`` of each member ``(n, *shape)``: its base's plus its own noise."""
        if name not in self._stacked:  # the bases' copies, stacked once, not per call
            self._stacked[name] = torch.stack([tensors[name] for tensors in self.base_tensors])
        return self._stacked[name][self.base_index[members]] + self.deltas[name][members]

    def _take(self, tensor: torch.Tensor, members: torch.Tensor) -> torch.Tensor:
        """``tensor[members]``, or ``tensor`` itself when the members are the whole
        population in order."""
        return tensor if self._in_order else tensor[members]

    def _matrix_part(
        self, name: str, x: torch.Tensor, members: torch.Tensor, rows: slice | None = None,
        stored_in_by_out: bool = False, bias: torch.Tensor | None = None,
    ) -> torch.Tensor:  # fmt: skip
        """Each row's own part of ``x Wᵀ`` for weight ``name`` (its output ``rows`` alone,
        when given: a packed projection's third): ``x`` ``(n, k, in)`` -> ``(n, k, out)``;
        ``stored_in_by_out``: of ``x W`` for a weight stored ``(in, out)`` (``Conv1D``'s);
        ``bias`` ``(n, out)``: each row's own bias part, added in the same product."""
        if stored_in_by_out:
            if name in self.factors:
                factors = self.factors[name]
                projected = torch.bmm(x, factors.scaled_a[members])  # (n, k, r): x c A_i
                return torch.bmm(projected, factors.b[members].transpose(1, 2))
            return torch.bmm(x, self.deltas[name][members])
        rows = slice(None) if rows is None else rows
        if name in self.factors:
            factors = self.factors[name]
            if factors.b.shape[-1] == 1:
                # Rank 1 (EGGROLL's usual): a dot product and a scaled row, elementwise; a
                # batched product of (k, in) by (in, 1) per member cost more than the two
                # (benchmarks/results/module_lowrank_forward.md).
                b_row = self._take(factors.b, members).transpose(1, 2)  # (n, 1, in)
                a_row = self._take(factors.scaled_a, members)[:, rows].transpose(1, 2)
                projected = (x * b_row).sum(-1, keepdim=True)  # (n, k, 1): x B_i
                if bias is None:
                    return projected * a_row
                return torch.addcmul(bias.unsqueeze(1), projected, a_row)
            projected = torch.bmm(x, self._take(factors.b, members))  # (n, k, r): x B_i
            right = self._take(factors.scaled_a, members)[:, rows].transpose(1, 2)
        else:
            projected, right = x, self._take(self.deltas[name], members)[:, rows].transpose(1, 2)
        if bias is None:
            return torch.bmm(projected, right)
        return torch.baddbmm(bias.unsqueeze(1), projected, right)
