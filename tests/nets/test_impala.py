"""net.type=impala: the IMPALA ResNet as a module network, for evolution and learners."""

from __future__ import annotations

import pytest
import torch

from neuroplug.app import run_job
from neuroplug.errors import ConfigError
from neuroplug.nets.impala import ImpalaResNet
from neuroplug.testing import check_network_contract

PONG = ["env=pong", "env.max_episode_steps=25", "logger=none", "run.eval_episodes=1"]


def test_the_resnet_reads_frames_and_honours_the_network_contract():
    network = ImpalaResNet((4, 84, 84), 6, {"channels": [8, 8, 8], "hidden": 32})
    frames = network.example_inputs(3, torch.Generator().manual_seed(0))
    params = network.initial_params(torch.Generator().manual_seed(1))
    assert network.forward_single(params, frames).shape == (3, 6)
    check_network_contract(network)


@pytest.mark.parametrize(
    "algo",
    [
        ["algo=es", "algo.population_size=2", "run.max_generations=1"],
        [
            "algo=ppo",
            "algo.num_envs=2",
            "algo.rollout_length=8",
            "algo.segment_steps=32",
            "run.max_segments=1",
        ],
    ],
    ids=["es", "ppo"],
)
def test_evolution_and_learners_run_it_on_atari(algo, compose, tmp_path):
    overrides = [*algo, *PONG, "net.type=impala", "net.kwargs.channels=[4,4,4]"]
    summary = run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    assert summary["frames"] > 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        (["net.kwargs.channels=[]"], "net.kwargs.channels"),
        (["net.kwargs.depth=2"], "net.kwargs.depth"),
        (["env=cartpole"], "net.type"),
    ],
)
def test_bad_impala_settings_are_refused_naming_the_field(compose, tmp_path, overrides, field):
    base = ["algo=es", *PONG, "net.type=impala"]
    with pytest.raises(ConfigError) as raised:
        run_job(compose([*base, *overrides, f"run.output_dir={tmp_path}"]))
    assert raised.value.field == field
