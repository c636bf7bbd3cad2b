"""Virtual batch norm in a run: chosen where the paper used it, its reference batch
collected once, checkpointed, and used again by a resume and a replay."""

from __future__ import annotations

import pytest
import torch

from neuroplug.app import run_job
from neuroplug.experiment.typed import typed_experiment
from neuroplug.testing import check_resume_is_exact
from neuroplug.tools.watch import watch
from neuroplug.training.checkpoint import BEST_POLICY, checkpoint_dir, load_checkpoint
from neuroplug.training.components import build_components
from neuroplug.training.policy_sources import PolicySourceError

VBN_CARTPOLE = ["net.vbn=true", "algo.obs_norm=false", "net.vbn_reference_size=16"]


@pytest.mark.parametrize(
    ("overrides", "vbn", "note"),
    [
        (["algo=es", "env=pong"], True, "es's default on atari"),
        (["algo=ns_es", "env=pong"], True, "default on atari"),
        (["algo=es", "env=pong", "net.vbn=false"], False, ""),
        (["algo=ga", "env=pong"], False, ""),
        (["algo=es", "env=cartpole"], False, ""),
    ],
)
def test_es_on_atari_normalizes_by_default_and_says_so(compose, overrides, vbn, note):
    parts = build_components(typed_experiment(compose(overrides)))
    assert parts.config.net.vbn is vbn and parts.network.normalized is vbn
    assert note in parts.network_note and bool(parts.network_note) is bool(note)


def test_a_run_collects_its_reference_batch_once_and_checkpoints_it(compose, tmp_path):
    run_dir = tmp_path / "run"
    overrides = ["logger=none", "algo.population_size=4", "run.max_generations=2"]
    run_job(
        compose([*overrides, *VBN_CARTPOLE, "run.eval_episodes=3", f"run.output_dir={run_dir}"])
    )
    latest = load_checkpoint(run_dir)
    reference = latest["reference_batch"]
    assert reference.shape == (16, 4) and reference.std(0).min() > 0
    best = torch.load(checkpoint_dir(run_dir) / BEST_POLICY, weights_only=False)
    assert torch.equal(best["reference_batch"], reference)
    assert "vbn: true" in (run_dir / "config.yaml").read_text()
    # A replay normalizes by the same batch: it plays the run's last evaluation again.
    result = watch(run_dir, video=False)
    assert result.returns.mean() == best["eval_return_mean"]
    # Without its batch, a normalized policy cannot be rebuilt: said, not guessed.
    del best["reference_batch"]
    torch.save(best, checkpoint_dir(run_dir) / BEST_POLICY)
    with pytest.raises(PolicySourceError, match="no reference batch"):
        watch(run_dir, video=False)


def test_a_resumed_run_normalizes_by_its_checkpoints_batch(compose, tmp_path, monkeypatch):
    from neuroplug.envs import reference_batch

    collect = reference_batch.collect_reference_batch
    calls = []

    def counted(*args, **kwargs):
        calls.append(args)
        return collect(*args, **kwargs)

    monkeypatch.setattr(reference_batch, "collect_reference_batch", counted)
    left, right = check_resume_is_exact(
        compose, ["algo.population_size=4", "net.hidden_sizes=[8]", *VBN_CARTPOLE], tmp_path
    )
    assert len(calls) == 2  # the straight run and the first half; the resume loads its own
    assert left["reference_batch"] is not None
