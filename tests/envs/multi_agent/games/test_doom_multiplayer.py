"""ViZDoom multiplayer as a parallel env: players on localhost stepped together, games that
end for every player at once, frags and deaths as rewards, Doom's bots beside them, and a
port that is taken refused naming the field.

The tests that start Doom engines run in a child process (:mod:`child_process`), each from
a directory of its own without ``./_vizdoom/``, as a fresh clone is: a game's players
start their engines at once, and engines racing to make that directory crashed the
interpreter (a worker of the suite, in CI) before the env made it first."""

from __future__ import annotations

import csv
import os
import shutil
import socket

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
vizdoom = pytest.importorskip("vizdoom")

from child_process import run_in_child  # noqa: E402

from neuroplug.envs.multi_agent.games.doom_multiplayer import SCREEN, DoomMultiplayer  # noqa: E402
from neuroplug.errors import ConfigError  # noqa: E402

SHORT = 0.05
"""Minutes of game time a test's game lasts (105 tics: 26 steps of 4)."""


def _play(env: DoomMultiplayer, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """One game of random actions: its steps and each player's return."""
    totals, steps = np.zeros(len(env.possible_agents)), 0
    while True:
        actions = {agent: int(rng.integers(8)) for agent in env.possible_agents}
        observations, rewards, terminated, truncated, _ = env.step(actions)
        steps += 1
        totals += [rewards[agent] for agent in env.possible_agents]
        assert all(
            seen.shape == SCREEN and seen.dtype == np.uint8 for seen in observations.values()
        )
        ended = set(truncated.values())
        assert len(ended) == 1 and not any(terminated.values())  # every player at once
        if ended == {True}:
            return steps, totals


def test_a_duel_steps_both_players_and_ends_their_games_together(tmp_path):
    run_in_child(_duel, str(tmp_path))


def _duel(workdir: str) -> None:
    os.chdir(workdir)
    env = DoomMultiplayer(players=2, timelimit=SHORT)
    rng = np.random.default_rng(0)
    try:
        observations, _ = env.reset(seed=1)
        assert set(observations) == {"player_0", "player_1"}
        frame = env.render()  # both players' views, side by side
        height, width, _ = SCREEN
        assert frame.shape == (2 * height, 4 * width, 3)
        assert np.array_equal(frame[::2, : 2 * width : 2, 0], observations["player_0"][..., 0])
        assert np.array_equal(frame[::2, 2 * width :: 2, 0], observations["player_1"][..., 0])
        for _ in range(2):  # a second game on the same players
            steps, totals = _play(env, rng)
            # About 105 tics of 4: at most that many steps; fewer where the machine is busy,
            # as the game runs on its own clock (ASYNC_PLAYER) while a step waits for a core.
            assert 1 <= steps <= 27
            assert np.all(totals == np.round(totals))  # frags and deaths
            env.reset()
    finally:
        env.close()


def test_a_player_against_doom_s_bot(tmp_path):
    run_in_child(_against_a_bot, str(tmp_path))


def _against_a_bot(workdir: str) -> None:
    os.chdir(workdir)
    env = DoomMultiplayer(players=1, bots=1, timelimit=SHORT)
    try:
        env.reset(seed=2)
        steps, _ = _play(env, np.random.default_rng(1))
        assert steps >= 10
        env.reset()  # the game built anew, with its bot
        assert _play(env, np.random.default_rng(2))[0] >= 10
    finally:
        env.close()


def test_a_lone_player_on_a_map_of_its_own_plays_in_lockstep_for_frags(tmp_path):
    # A scenario's .cfg elsewhere, its map beside it: the duel map again.
    shipped = os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", "multi_duel.wad")
    shutil.copy(shipped, tmp_path / "my_duel.wad")
    config = tmp_path / "my_duel.cfg"
    config.write_text("doom_scenario_path = my_duel.wad\n")
    run_in_child(_lockstep, str(tmp_path), str(config))


def _lockstep(workdir: str, config: str) -> None:
    os.chdir(workdir)
    env = DoomMultiplayer(scenario=config, players=1, bots=1, timelimit=SHORT, reward="frags")
    try:
        env.reset(seed=3)
        first, totals = _play(env, np.random.default_rng(1))
        assert totals[0] >= 0  # frags alone: never below zero
        env.reset()
        # The game waits for its lone player: every game is its 105 tics, in steps of 4.
        assert _play(env, np.random.default_rng(2))[0] == first
        assert abs(first - 105 / 4) <= 1
    finally:
        env.close()


def test_a_shaped_reward_pays_the_player_and_its_info_keeps_the_frags(tmp_path):
    run_in_child(_shaped, str(tmp_path))


def _shaped(workdir: str) -> None:
    os.chdir(workdir)
    env = DoomMultiplayer(
        players=1, bots=1, timelimit=SHORT, reward="frags", shaping="sample_factory",
        shaping_scale=0.5,
    )  # fmt: skip
    try:
        env.reset(seed=4)
        rewards, scores, rng = [], [], np.random.default_rng(3)
        while True:
            _, paid, _, truncated, infos = env.step({"player_0": int(rng.integers(8))})
            rewards.append(paid["player_0"])
            scores.append(infos["player_0"]["score"])
            if truncated["player_0"]:
                break
        scores = np.asarray(scores)
        assert np.all(scores == np.round(scores))  # frags (a suicide's -1)
        # The weapon it starts with held loaded: half of 0.0002 x its preference a step.
        held = np.isclose(np.asarray(rewards)[:, None], [0.0001, 0.0005, 0.001]).any(axis=1)
        assert held.sum() >= 5
        assert rewards[:4] == [0.0] * 4 and rewards[-1] == 0.0
        assert min(rewards) > -3  # a death costs its health and -0.75, however it died
    finally:
        env.close()


def test_combinations_press_several_buttons_at_once(tmp_path):
    run_in_child(_combinations, str(tmp_path))


def _combinations(workdir: str) -> None:
    from neuroplug.envs.multi_agent.games.doom_multiplayer import COMBINATIONS

    os.chdir(workdir)
    env = DoomMultiplayer(players=1, bots=1, timelimit=SHORT, actions="combinations")
    try:
        assert env.action_space("player_0").n == len(COMBINATIONS) == 54
        env.reset(seed=5)
        game, variable = env._games[0], vizdoom.GameVariable
        for _ in range(30):  # the duel map spawns its players a few steps in
            env.step({"player_0": 0})
            if not game.get_game_variable(variable.DEAD):
                break
        start = game.get_game_variable(variable.SELECTED_WEAPON_AMMO)
        for _ in range(4):  # none pressed: nothing spent
            env.step({"player_0": 0})
        assert game.get_game_variable(variable.SELECTED_WEAPON_AMMO) == start
        forward_and_fire = COMBINATIONS.index(("MOVE_FORWARD", "ATTACK"))
        ammo = []
        for _ in range(12):  # moving and shooting in the same steps
            env.step({"player_0": forward_and_fire})
            ammo.append(game.get_game_variable(variable.SELECTED_WEAPON_AMMO))
        assert min(ammo) < start
    finally:
        env.close()


def test_a_colour_screen_is_sample_factorys_input_size_in_three_channels(tmp_path):
    run_in_child(_colour, str(tmp_path))


def _colour(workdir: str) -> None:
    os.chdir(workdir)
    env = DoomMultiplayer(players=1, bots=1, timelimit=SHORT, screen="colour")
    try:
        assert env.observation_space("player_0").shape == (72, 128, 3)
        env.reset(seed=6)
        for _ in range(20):
            observations, *_ = env.step({"player_0": 5})  # turning: the walls go by
        seen = observations["player_0"]
        assert seen.shape == (72, 128, 3) and seen.dtype == np.uint8
        channels = seen.reshape(-1, 3).astype(int)
        assert (channels[:, 0] != channels[:, 1]).any()  # not grey: colours differ
        frame = env.render()
        assert frame.shape == (144, 256, 3)
        assert np.array_equal(frame[::2, ::2], seen)  # every other row and column
    finally:
        env.close()


def test_an_unknown_map_or_reward_is_refused_naming_the_field(tmp_path):
    with pytest.raises(ConfigError, match="env.kwargs.scenario: got 'duels'"):
        DoomMultiplayer(scenario="duels")
    with pytest.raises(ConfigError, match="env.kwargs.scenario: .*a ViZDoom .cfg"):
        DoomMultiplayer(scenario=str(tmp_path / "missing.cfg"))
    with pytest.raises(ConfigError, match="env.kwargs.reward: got 'kills'.*frags"):
        DoomMultiplayer(reward="kills")
    with pytest.raises(ConfigError, match="env.kwargs.actions: got 'all'.*combinations"):
        DoomMultiplayer(actions="all")
    with pytest.raises(ConfigError, match="env.kwargs.screen: got 'rgb'.*colour"):
        DoomMultiplayer(screen="rgb")
    with pytest.raises(ConfigError, match="env.kwargs.shaping: got 'sf'.*sample_factory"):
        DoomMultiplayer(shaping="sf")
    with pytest.raises(ConfigError, match="env.kwargs.shaping_scale: got 0"):
        DoomMultiplayer(shaping="sample_factory", shaping_scale=0)


def test_a_port_in_use_is_refused_naming_the_field():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as taken:
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match="env.kwargs.port") as refused:
            DoomMultiplayer(port=port)
    assert str(port) in str(refused.value) and "null" in str(refused.value)


def test_more_than_the_duel_map_holds_is_refused_naming_the_bots():
    with pytest.raises(ConfigError, match="env.kwargs.bots"):
        DoomMultiplayer(scenario="duel", players=2, bots=2)


def test_ppo_plays_a_doom_duel_against_its_pool(tmp_path):
    pytest.importorskip("openskill")
    run_in_child(_ppo_self_play, str(tmp_path))
    rows = list(csv.DictReader((tmp_path / "tournament.csv").open()))
    assert sum(int(row["games"]) for row in rows) > 0


def _ppo_self_play(output_dir: str) -> None:
    from neuroplug.app import run_job
    from neuroplug.testing import compose

    os.chdir(output_dir)
    run_job(
        compose(
            ["algo=ppo", "env=doom_duel", f"env.kwargs.timelimit={SHORT}", "selfplay=pool",
             "algo.num_envs=2", "algo.rollout_length=64", "run.max_frames=512",
             "run.eval_episodes=1", "logger=none", f"run.output_dir={output_dir}"]
        )
    )  # fmt: skip


def test_a_step_counts_its_tics_and_learners_take_the_doom_preset(compose):
    from neuroplug.envs.make import make_spec
    from neuroplug.experiment.typed import typed_experiment
    from neuroplug.plugin_configs.presets import resolve

    config = typed_experiment(compose(["algo=appo", "env=doom_duel", "env.kwargs.frame_skip=2"]))
    spec = make_spec(config.env)
    assert spec.frame_skip == 2  # run.max_frames and the frame counts are game tics
    settings, words = resolve(config.algo, spec)
    assert "sf_examples/vizdoom" in words
    assert (settings.epochs, settings.rollout_length, settings.learning_rate) == (1, 32, 1e-4)


def test_measurements_beside_the_screen_read_the_player_s_health_and_weapon(tmp_path):
    run_in_child(_measured, str(tmp_path))


def _measured(workdir: str) -> None:
    from neuroplug.envs.measurements import measurement_layout
    from neuroplug.envs.multi_agent.games.doom_multiplayer import MEASURED

    os.chdir(workdir)
    env = DoomMultiplayer(players=1, bots=1, timelimit=SHORT, measurements=True)
    try:
        space = env.observation_space("player_0")
        layout = measurement_layout("doom", space)
        assert layout.frame == (1, *SCREEN[:2]) and layout.count == len(MEASURED)
        env.reset(seed=3)
        for _ in range(5):  # a weapon is in hand a few tics into the game
            observations, *_ = env.step({"player_0": 0})
        seen = observations["player_0"]
        assert seen["screen"].shape == SCREEN
        measured = dict(zip([name for name, _, _ in MEASURED], seen["measurements"], strict=True))
        assert measured["HEALTH"] == 100 and measured["SELECTED_WEAPON"] >= 1
        assert measured["SELECTED_WEAPON_AMMO"] > 0
        _, values = layout.unpack(layout.pack(seen))
        assert abs(values[2] - 100) <= 200 / 255  # health, read back within a level
    finally:
        env.close()


def test_a_duel_with_measurements_packs_them_below_the_screen(compose):
    from neuroplug.envs.make import make_spec
    from neuroplug.envs.multi_agent.games.doom_multiplayer import MEASURED
    from neuroplug.experiment.typed import typed_experiment

    config = typed_experiment(compose(["env=doom_duel", "env.kwargs.measurements=true"]))
    spec = make_spec(config.env)
    assert spec.measurements == len(MEASURED) and spec.obs_shape == (1, SCREEN[0] + 1, SCREEN[1])
    with pytest.raises(ConfigError, match="env.kwargs.measurements: got 'yes'"):
        DoomMultiplayer(measurements="yes")
