"""The learner, its snapshots and its bots acting in one call: each lane's choice is its
player's, the networks' in one batched forward."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")
pytest.importorskip("openskill")

from frozen_models import perturbed, value_alone  # noqa: E402

from neuroplug.experiment.typed import typed_experiment  # noqa: E402
from neuroplug.opponents.pool import LIVE  # noqa: E402
from neuroplug.rl.distributions import Categorical  # noqa: E402
from neuroplug.training.components import build_components  # noqa: E402

GAME = ["algo=ppo", "env=pong_duel", "selfplay=pool", "logger=none"]


def test_each_lane_acts_as_its_player_and_the_networks_in_one_forward(compose, tmp_path):
    config = compose(
        [*GAME, "algo.num_envs=12", "selfplay.bots=[random]", f"run.output_dir={tmp_path}"]
    )
    learner = build_components(typed_experiment(config)).algorithm
    loop = learner.rollout_loop
    league, acting = loop.leagues.each[0], loop.acting
    first = league.pool.add_snapshot(perturbed(learner.model, 1), segment=1)
    second = league.pool.add_snapshot(perturbed(learner.model, 2), segment=2)
    bot = next(entry.id for entry in league.pool.entries.values() if entry.kind == "bot")
    acting.refresh()
    acting.begin(np.arange(12), loop.leagues)  # its worlds seated in this process
    seats, rng = acting.seatings[0].seats, np.random.default_rng(0)
    # Six worlds: against itself, the first snapshot twice, the second, the bot twice.
    for world, opponent in enumerate([LIVE, first.id, first.id, second.id, bot, bot]):
        seats.seat(world, opponent, rng)
    calls = []
    forward = acting.inner.act_members
    acting.inner.act_members = lambda *args: calls.append(args[1]) or forward(*args)
    observations = torch.randn(12, 6, generator=torch.Generator().manual_seed(0))
    acted = acting.act(observations, slice(0, 12), None, torch.Generator().manual_seed(1))
    assert len(calls) == 1  # the learner and both snapshots in one forward
    players = seats.policy_ids(slice(0, 12))
    models = {LIVE: learner.model, first.id: first.model, second.id: second.model}
    for lane, player in enumerate(players.tolist()):
        if player == bot:
            assert acted.log_probs[lane] == 0 and acted.values[lane] == 0
            assert 0 <= int(acted.actions[lane]) < 3
            continue
        model = models[player]
        torch.testing.assert_close(acted.values[lane], value_alone(model, observations[lane]))
        logits = model.network.forward_single(model.policy_vector(), observations[lane : lane + 1])
        expected = Categorical(logits).log_prob(acted.actions[lane : lane + 1])[0]
        torch.testing.assert_close(acted.log_probs[lane], expected)
    # Only the learner's lanes are learned from: its own paddle, and both in a game with itself.
    assert (seats.learnable(slice(0, 12)) == (players == LIVE)).all()
    assert seats.learnable(slice(0, 2)).all()
