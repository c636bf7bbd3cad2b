"""The trainer's side of the algorithm contract: each tell ends the generation or asks for
one more round, and a plugin that does neither fails with a message naming it."""

from __future__ import annotations

import pytest
from neuroplug_algorithms.es import OpenAIES

from neuroplug.errors import PluginError
from neuroplug.experiment.typed import typed_experiment
from neuroplug.testing import check_algorithm_contract
from neuroplug.testing.algorithm_contract import ContractViolation
from neuroplug.training.trainer import Trainer

TINY = ["logger=none", "algo.population_size=4", "net.hidden_sizes=[4]", "run.eval_episodes=1"]


class _EndlessRounds(OpenAIES):
    """Asks for another round after every tell: its generation never ends."""

    def _tell(self, population, fitness, result):
        stats = super()._tell(population, fitness, result)
        self.continue_generation()
        return stats


class _SilentTell(OpenAIES):
    """A tell that neither ends the generation nor asks for another round."""

    def tell(self, population, result):
        return {}


def _trainer_with(algorithm_class, compose, tmp_path) -> Trainer:
    config = typed_experiment(compose([*TINY, f"run.output_dir={tmp_path}"]))
    trainer = Trainer(config, tmp_path)
    built = trainer.parts.algorithm
    trainer.parts.algorithm = algorithm_class(built.config, built.context)
    return trainer


def test_a_generation_that_never_ends_stops_the_trainer_naming_the_plugin(compose, tmp_path):
    trainer = _trainer_with(_EndlessRounds, compose, tmp_path)
    try:
        with pytest.raises(PluginError, match="_EndlessRounds asked for more than 8 rounds"):
            trainer.train_unit()
    finally:
        trainer.lock.release()


def test_a_tell_that_neither_ends_nor_continues_stops_the_trainer(compose, tmp_path):
    trainer = _trainer_with(_SilentTell, compose, tmp_path)
    try:
        with pytest.raises(PluginError, match=r"_SilentTell.tell\(\) must either end"):
            trainer.train_unit()
    finally:
        trainer.lock.release()


@pytest.mark.parametrize(
    ("algorithm_class", "message"),
    [(_EndlessRounds, "did not advance within 8"), (_SilentTell, "must either end")],
)
def test_the_contract_check_catches_both(algorithm_class, message):
    with pytest.raises(ContractViolation, match=message):
        check_algorithm_contract(algorithm_class)


def test_a_generation_where_half_the_episodes_solve_the_task_is_evaluated_at_once(
    compose, tmp_path
):
    """With stop_when_solved the policy is evaluated after any generation whose median
    return reached the solved return, not only every eval_interval generations."""
    import csv
    import math

    from neuroplug.app import run_job

    summary = run_job(
        compose(
            [
                "env=cartpole",
                "logger=console",
                "run.eval_interval=1000",
                f"run.output_dir={tmp_path}",
            ]
        )
    )
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    evaluated = [row for row in rows if not math.isnan(float(row["eval_return_mean"]))]
    assert evaluated, "no generation was evaluated before the budget"
    assert all(float(row["return_median"]) >= 475 for row in evaluated)
    assert summary["eval_return_mean"] >= 475 and int(rows[-1]["generation"]) < 100


def test_a_stop_inside_a_deferred_block_is_raised_when_the_block_ends():
    """The generation's record (log, state, checkpoint) is never cut in half by a stop:
    a signal arriving there is raised right after it."""
    import os
    import signal

    from neuroplug.training.trainer import _StopSignals

    stop = _StopSignals()
    finished_block = False
    with stop.installed(), pytest.raises(KeyboardInterrupt):
        with stop.deferred():
            os.kill(os.getpid(), signal.SIGUSR1)
            finished_block = True
    assert finished_block and stop.requested


def test_a_second_stop_while_the_first_ones_checkpoint_is_written_does_not_cut_it(
    compose, tmp_path, monkeypatch
):
    """Ctrl-C twice, or a launcher signalling every process of the job: the stop's own
    checkpoint is still written whole and the run ends as interrupted, resumable."""
    import os
    import signal

    from neuroplug.app import run_job
    from neuroplug.training.checkpoint import load_checkpoint

    train_unit, write = Trainer.train_unit, Trainer._write_checkpoint
    second_stops = []

    def stopped_in_the_third_generation(self):
        if self.completed == 2:
            os.kill(os.getpid(), signal.SIGUSR1)  # the first stop
        return train_unit(self)

    def stopped_again_while_writing(self, state=None):
        if self._stop.requested:
            second_stops.append(True)
            os.kill(os.getpid(), signal.SIGUSR1)  # the second, inside the stop's checkpoint
        return write(self, state)

    monkeypatch.setattr(Trainer, "train_unit", stopped_in_the_third_generation)
    monkeypatch.setattr(Trainer, "_write_checkpoint", stopped_again_while_writing)
    overrides = ["algo=es", "env=cartpole", *TINY, "run.stop_when_solved=false"]
    try:
        summary = run_job(
            compose([*overrides, "run.max_generations=5", f"run.output_dir={tmp_path}"])
        )
    except KeyboardInterrupt:  # caught: pytest would read it as the user stopping the suite
        pytest.fail("the second stop broke into the first stop's checkpoint")
    assert second_stops  # the second stop came while the checkpoint was being written
    assert summary["status"] == "interrupted"
    assert load_checkpoint(tmp_path)["generation"] == 2


def test_a_checkpoint_is_put_off_while_writing_them_would_take_more_than_its_share():
    from neuroplug.training.trainer import checkpoint_due

    # Cheap writes: every interval.
    assert checkpoint_due(4, 2, 0.1, last_write=0.01, since_write=1.0)
    assert not checkpoint_due(5, 2, 0.1, last_write=0.01, since_write=1.0)
    # A 3.5 s write (CMA-ES's covariance) after 1 s of training: put off...
    assert not checkpoint_due(4, 1, 0.1, last_write=3.5, since_write=1.0)
    # ...until 10% of the time since the write began is the write.
    assert checkpoint_due(4, 1, 0.1, last_write=3.5, since_write=31.5)
    # Share 0: every interval whatever it costs.
    assert checkpoint_due(4, 1, 0.0, last_write=3.5, since_write=0.1)


def test_eval_seconds_is_each_evaluations_share_of_elapsed(compose, tmp_path):
    """A row's ``eval_seconds`` is the wall time of the evaluation logged with it (0 in a
    row without one), inside the row's ``elapsed``: ``elapsed`` less their running sum is
    the training clock (the parity suite times runs by it)."""
    import csv

    from neuroplug.app import run_job

    overrides = [*TINY, "env=cartpole", "run.eval_interval=2", "run.max_generations=3"]
    run_job(compose([*overrides, f"run.output_dir={tmp_path}"]))
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    seconds = [float(row["eval_seconds"]) for row in rows]
    assert seconds[0] == 0.0 and seconds[1] > 0 and seconds[2] > 0  # every 2, and the last
    before = 0.0
    for row, evaluating in zip(rows, seconds, strict=True):
        elapsed = float(row["elapsed"])
        assert evaluating <= elapsed - before
        before = elapsed


def test_eval_at_start_logs_the_starting_policy_as_unit_zero(compose, tmp_path):
    """``run.eval_at_start``: the first row is the starting policy's evaluation, at frame 0;
    the first generation follows it as generation 1, and a resumed run logs no second one."""
    import csv

    from neuroplug.app import run_job

    overrides = [*TINY, "env=cartpole", "run.eval_at_start=true", "run.max_generations=2"]
    run_job(compose([*overrides, "logger=console", f"run.output_dir={tmp_path}"]))
    with open(tmp_path / "metrics.csv") as file:
        rows = list(csv.DictReader(file))
    assert [int(row["generation"]) for row in rows] == [0, 1, 2]
    assert int(rows[0]["frames"]) == 0 and 8 <= float(rows[0]["eval_return_mean"]) <= 500
    assert int(rows[1]["frames"]) > 0
    run_job(compose([*overrides[:-1], "run.max_generations=3", f"run.resume={tmp_path}"]))
    with open(tmp_path / "metrics.csv") as file:
        generations = [int(row["generation"]) for row in csv.DictReader(file)]
    assert generations == [0, 1, 2, 3]
