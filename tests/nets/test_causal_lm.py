"""``net.type=causal_lm``: a step with the KV cache (a prompt at once, then a token a step)
is the whole context's causal forward;
a population runs batched as each member alone, and in factored low rank, cache and all;
an env without token ids is refused."""

from __future__ import annotations

import pytest
import torch

from neuroplug.config.schema import EnvConfig, NetConfig
from neuroplug.envs.make import make_spec
from neuroplug.errors import ConfigError
from neuroplug.nets.causal_lm import CausalLM, CausalLMNetwork
from neuroplug.population.lowrank import lowrank_for
from neuroplug.population.members import Population

CONTEXT = 9


def _contexts(count: int, generator: torch.Generator) -> torch.Tensor:
    """Contexts of 1 to CONTEXT tokens (ids 0..10 observed as 1..11), zero-padded."""
    ids = torch.randint(1, 12, (count, CONTEXT), generator=generator)
    lengths = torch.randint(1, CONTEXT + 1, (count, 1), generator=generator)
    return ids * (torch.arange(CONTEXT) < lengths)


def _steps(network_step, ids: torch.Tensor, state: torch.Tensor, prompts=None):
    """Show each row its first ``prompts[r]`` tokens at once (the env's prompt; default 1),
    then one more a step until the whole context (a full row shows itself again: a step
    that adds no token); returns each step's outputs and the last state."""
    rows, context = ids.shape
    prompts = torch.ones(rows, dtype=torch.long) if prompts is None else prompts
    outputs = []
    for step in range(context - int(prompts.min()) + 1):
        shown = ids * (torch.arange(context) < (prompts + step).unsqueeze(1))
        result, state = network_step(shown.float(), state)
        outputs.append(result)
    return torch.stack(outputs, dim=1), state


def _places(prompts: torch.Tensor, steps: int, context: int) -> torch.Tensor:
    """The newest place each row's step shows ``(rows, steps)``."""
    return (prompts.unsqueeze(1) - 1 + torch.arange(steps)).clamp(max=context - 1)


@pytest.mark.parametrize("prompts", [[1, 1, 1], [4, 4, 4], [1, 5, 9], [9, 9, 9]])
def test_a_cached_step_is_the_whole_context_s_causal_forward(prompts):
    """Token by token, a prompt read at once (the prefill), and rows of different prompts in
    one batch (each step's block as wide as the longest's) all give the numbers of the whole
    context's causal forward; a state counts the tokens it holds."""
    torch.manual_seed(0)
    model = CausalLM((CONTEXT,), 16, 11, d_model=16, heads=4, layers=2).eval()
    ids = torch.randint(1, 12, (3, CONTEXT), generator=torch.Generator().manual_seed(1))
    prompts = torch.tensor(prompts)
    with torch.no_grad():
        stepped, state = _steps(model, ids, torch.zeros(3, model.state_size), prompts)
        whole = model.forward_sequence(ids)
    places = _places(prompts, stepped.shape[1], CONTEXT)
    expected = torch.gather(whole, 1, places.unsqueeze(-1).expand(-1, -1, whole.shape[-1]))
    torch.testing.assert_close(stepped, expected, atol=1e-5, rtol=1e-5)
    assert state.shape == (3, 2 * 2 * CONTEXT * 16 + 1) and state[:, :-1].abs().sum() > 0
    assert state[:, -1].tolist() == [CONTEXT] * 3


def _network() -> CausalLMNetwork:
    return CausalLMNetwork(
        (CONTEXT,), 11, {"d_model": 16, "heads": 2, "layers": 2, "vocabulary": 11}
    )


def test_a_population_of_cached_models_runs_as_each_alone():
    network = _network()
    generator = torch.Generator().manual_seed(2)
    params = torch.stack([network.initial_params(generator) for _ in range(4)])
    ids = _contexts(4, generator)  # a first step: prompts of different lengths
    state = torch.zeros(4, network.state_size)
    batched = network.forward_population_with_state(params, ids.float(), state)
    assert batched[1][:, -1].tolist() == (ids != 0).sum(dim=1).tolist()
    for row in range(4):
        features, new_state = network.features_with_state(
            params[row], ids[row : row + 1].float(), state[row : row + 1]
        )
        logits = network.head(params[row], features)
        torch.testing.assert_close(batched[0][row : row + 1], logits, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(batched[1][row : row + 1], new_state, atol=1e-5, rtol=1e-5)


def test_a_low_rank_population_generates_factored_as_materialised():
    from neuroplug_backends.module_lowrank import FactoredModule, factored_module

    network = _network()
    assert factored_module(network)
    generator = torch.Generator().manual_seed(3)
    population = Population(
        bases=torch.stack([network.initial_params(generator) for _ in range(2)]),
        base_index=torch.tensor([0, 1, 0, 1, 1]),
        scale=torch.full((5,), 0.05),
        seed=torch.arange(5) + 3,
        lowrank=lowrank_for(network.layout, 2, 150),
    )
    assert (64, 16) in {(m.rows, m.cols) for m in population.lowrank.matrices}
    members = torch.tensor([4, 0, 2, 2, 1, 3])  # a member's rows: several prompts
    ids = torch.randint(1, 12, (6, CONTEXT), generator=generator)
    factored = FactoredModule(network, population, torch.device("cpu"))
    prompts = torch.tensor([3, 1, 5, 3, 2, 4])
    got, got_state = _steps(
        lambda x, s: factored.forward(members, x, s),
        ids,
        torch.zeros(6, network.state_size),
        prompts,
    )
    materialised = population.materialize(members)
    expected, expected_state = _steps(
        lambda x, s: network.forward_population_with_state(materialised, x, s),
        ids,
        torch.zeros(6, network.state_size),
        prompts,
    )
    torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(got_state, expected_state, atol=2e-5, rtol=1e-4)


def test_built_for_a_text_task_and_refused_for_an_env_without_token_ids():
    text = make_spec(
        EnvConfig(id="neuroplug.envs.text.registration:Addition-v0", kwargs={"digits": 2})
    )
    network = CausalLMNetwork.from_config(NetConfig(type="causal_lm", kwargs={"d_model": 32}), text)
    assert network.output_size == text.num_actions and network.state_size == 2 * 2 * 9 * 32 + 1
    assert "KV cache" in network.describe()
    cartpole = make_spec(EnvConfig(task_id="CartPole-v1"))
    with pytest.raises(ConfigError, match=r"net.type: causal_lm reads token ids .* CartPole-v1"):
        CausalLMNetwork.from_config(NetConfig(type="causal_lm"), cartpole)
