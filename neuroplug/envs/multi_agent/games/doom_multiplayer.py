"""ViZDoom multiplayer as a PettingZoo parallel env: a duel or a deathmatch on localhost,
each agent a player, with built-in bots beside them
(``neuroplug.envs.multi_agent.games.doom_multiplayer:parallel_env``; ``env=doom_duel``,
``env=doom_deathmatch``; ``pip install vizdoom``).

A world is one game: player 0 hosts it (``-host``) on a UDP port of localhost, the others
join it, ``bots`` of Doom's own bots are added by the host. The game runs in ViZDoom's
``ASYNC_PLAYER`` mode at ``ticrate`` tics a second (Doom's own is 35): the game runs on
its own clock and a player's ``make_action`` returns once its ``frame_skip`` tics have
passed, whatever the others do. (The lockstep ``PLAYER`` mode, where each player's tics
wait for the others', deadlocked within a game or two when stepped together: a player's
call waited on tics the others, done with their step, never sent; what was tried is in
``benchmarks/results/doom_multiplayer.md``.) Each player is stepped in a thread of its
own, all at once, and a pool's worlds step at once too (``step_async`` and ``step_wait``:
each engine is a process of its own). A dead player is respawned by the server
(``+sv_forcerespawn``) a few tics later. The game ends when its ``timelimit``
(minutes of game time) runs out, for every player at the same step: a truncation.

Each player sees its own screen, grey, at a quarter of 160 x 120 (60 x 80, one channel), or
with ``screen=colour`` in colour at a quarter of 256 x 144 (72 x 128, three channels: the
size and colours of Sample Factory's Doom input, which its engine renders larger and
resizes), with ``measurements=true`` beside it numbers the screen shows poorly
(:data:`MEASURED`: health, armour, weapons and ammunition, Sample Factory's extra inputs; a
``Dict`` observation, packed below the pixels for the networks:
:mod:`neuroplug.envs.measurements`), and chooses one of :data:`ACTIONS` (a button pressed
for ``frame_skip`` tics, or none), or with ``actions=combinations`` one of :data:`COMBINATIONS` (moving, strafing, turning and
shooting at once, as Sample Factory's agents press their buttons together). Its
reward (``reward``) is its frags minus its deaths of the step, so a duel's rewards mirror
each other (+1 to the killer, -1 to the killed) as ``pong_duel``'s points do; or its frags
alone (``reward=frags``: a game's return is then its frag count, Sample Factory's true
objective against bots). That count is also each step's ``info["score"]``, what the
curves, the ratings and self-play's results count whatever the learner is paid.

``shaping``: the learner is paid Sample Factory's shaped reward instead (frags, deaths,
damage, health, armour, weapons and ammo: :mod:`~neuroplug.envs.multi_agent.games.doom_shaping`),
times ``shaping_scale`` (Sample Factory trains its Doom agents on half of it: 0.5).

``scenario``: ``duel`` or ``deathmatch`` (ViZDoom's own maps), or the path of any ViZDoom
scenario's ``.cfg`` (its ``.wad`` found as the file says, beside it): Sample Factory's
duel map, say, ``sf_examples/vizdoom/doom/scenarios/ssl2.cfg``. The env's own screen and
buttons replace the file's.

A lone player (``players=1``, against bots) plays in ViZDoom's lockstep ``PLAYER`` mode:
the game waits for its every step, as a single-player scenario's does, however long the
policy takes (the mode Sample Factory's games against bots use); two or more players play
in ``ASYNC_PLAYER`` mode, above.

The port: ``port`` (a fixed one, refused in one line naming ``env.kwargs.port`` when
another program holds it) or null, a free port the system gives for each world.
"""

from __future__ import annotations

import itertools
import os
import socket
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from neuroplug.envs.families.vizdoom import prepare_engine_directory
from neuroplug.envs.multi_agent.games.doom_shaping import SCHEMES, SHAPINGS, PlayerShaping
from neuroplug.errors import ConfigError

ACTIONS = (
    None, "MOVE_FORWARD", "MOVE_BACKWARD", "MOVE_LEFT", "MOVE_RIGHT", "TURN_LEFT", "TURN_RIGHT",
    "ATTACK",
)  # fmt: skip
"""Action ``i``: no button (0), else button ``ACTIONS[i]`` held for the step."""
COMBINATIONS = tuple(
    tuple(button for button in chosen if button is not None)
    for chosen in itertools.product(
        (None, "MOVE_FORWARD", "MOVE_BACKWARD"),
        (None, "MOVE_LEFT", "MOVE_RIGHT"),
        (None, "TURN_LEFT", "TURN_RIGHT"),
        (None, "ATTACK"),
    )
)
"""``actions=combinations``: action ``i`` holds the buttons ``COMBINATIONS[i]`` for the step
(54: none or one of each pair, and attacking or not; action 0 presses none)."""
ACTION_SETS = ("buttons", "combinations")
"""``env.kwargs.actions``: one button a step (:data:`ACTIONS`) or :data:`COMBINATIONS`."""
SCENARIOS = {"duel": "multi_duel.cfg", "deathmatch": "multi.cfg"}
"""ViZDoom's own multiplayer maps (shipped in the ``vizdoom`` package)."""
DUEL_PLACES = 3
"""Players and bots the duel map holds: more crashed ViZDoom's engine
(``benchmarks/results/doom_multiplayer.md``)."""
REWARDS = ("frags_minus_deaths", "frags")
"""What a player's reward counts (``env.kwargs.reward``)."""
SCREEN = (60, 80, 1)
"""What a player sees by default (``screen=grey``): 160 x 120 grey, every other row and
column."""
SCREENS = {
    "grey": ("RES_160X120", "GRAY8", SCREEN),
    "colour": ("RES_256X144", "RGB24", (72, 128, 3)),
}
"""``env.kwargs.screen``: the engine's resolution and format, and what a player sees (every
other row and column of it): ``colour`` is Sample Factory's Doom input, 128 x 72 RGB."""
MEASURED = (
    ("SELECTED_WEAPON", 0.0, 8.0),
    ("SELECTED_WEAPON_AMMO", 0.0, 75.0),
    ("HEALTH", 0.0, 200.0),
    ("ARMOR", 0.0, 200.0),
    ("ATTACK_READY", 0.0, 1.0),
    *((f"WEAPON{slot}", 0.0, 2.0) for slot in range(8)),
    *((f"AMMO{slot}", 0.0, 75.0) for slot in range(8)),
)
"""``measurements=true``: the game variables a player reads beside its screen, each with the
range it is read in (clipped there): Sample Factory's Doom extra inputs (its
``DoomAdditionalInput``: the weapon in hand and its ammunition, health, armour, whether it
can shoot, the weapons held and each one's ammunition, ammunition clipped at 75 as its
``min(ammo / 15, 5)`` does), less its kill count (read on its battle maps only) and the
number of players (fixed in a game)."""
STEP_TIMEOUT = 60.0
"""Seconds a player's call may take before the world is declared stuck."""


def scenario_config(scenario: str) -> str:
    """The ``.cfg`` file ``env.kwargs.scenario`` names: one of :data:`SCENARIOS` (ViZDoom's
    own), or a path to a ViZDoom scenario's ``.cfg``; refused naming the field otherwise."""
    if scenario in SCENARIOS:
        import vizdoom

        return os.path.join(os.path.dirname(vizdoom.__file__), "scenarios", SCENARIOS[scenario])
    path = os.path.abspath(os.path.expanduser(scenario))
    if not (path.endswith(".cfg") and os.path.isfile(path)):
        raise ConfigError(
            "env.kwargs.scenario",
            f"got {scenario!r}: neither a map ViZDoom ships nor a scenario's .cfg file that exists",
            f"{', '.join(SCENARIOS)}, or the path of a ViZDoom .cfg (its .wad beside it)",
        )
    return path


def free_port() -> int:
    """A UDP port of localhost that nothing holds now (the system's pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def check_port(port: int) -> None:
    """Refuse, naming ``env.kwargs.port``, a UDP port another program holds."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise ConfigError(
                "env.kwargs.port",
                f"UDP port {port} of localhost is in use ({error.strerror}): ViZDoom's host "
                "cannot listen on it",
                "another free port, or null to pick a free one for each world",
            ) from None


class DoomMultiplayer(ParallelEnv):
    """One ViZDoom multiplayer game (see the module docstring)."""

    metadata = {"name": "doom_multiplayer_v0", "render_modes": ["rgb_array"], "render_fps": 35}
    preset_kind = "doom"
    """Learners take Sample Factory's Doom settings here, as on EnvPool's Doom tasks; its
    ``frame_skip`` makes a step that many frames (game tics), as there."""

    def __init__(
        self,
        scenario: str = "duel",
        players: int = 2,
        bots: int = 0,
        timelimit: float = 1.0,
        frame_skip: int = 4,
        ticrate: int = 1000,
        port: int | None = None,
        reward: str = "frags_minus_deaths",
        shaping: str = "none",
        shaping_scale: float = 1.0,
        actions: str = "buttons",
        screen: str = "grey",
        measurements: bool = False,
        render_mode: str | None = None,
    ) -> None:
        if reward not in REWARDS:
            raise ConfigError("env.kwargs.reward", f"got {reward!r}", ", ".join(REWARDS))
        if screen not in SCREENS:
            raise ConfigError(
                "env.kwargs.screen",
                f"got {screen!r}",
                "grey (60 x 80, one channel) or colour (72 x 128 RGB, Sample Factory's input)",
            )
        if actions not in ACTION_SETS:
            raise ConfigError(
                "env.kwargs.actions",
                f"got {actions!r}",
                "buttons (one of 8 a step) or combinations (54: moving, strafing, turning "
                "and attacking at once)",
            )
        if shaping not in SHAPINGS:
            raise ConfigError(
                "env.kwargs.shaping",
                f"got {shaping!r}",
                "none (the reward is the score), sample_factory (its scheme against bots) "
                "or sample_factory_zero_sum (its scheme between agents)",
            )
        if not (isinstance(shaping_scale, int | float) and shaping_scale > 0):
            raise ConfigError(
                "env.kwargs.shaping_scale", f"got {shaping_scale!r}", "a number > 0 (0.5: "
                "Sample Factory's Doom recipes)",
            )  # fmt: skip
        if players < 1 or bots < 0 or players + bots < 2:
            raise ConfigError(
                "env.kwargs.players",
                f"{players} players and {bots} bots make no multiplayer game",
                "players >= 1 and players + bots >= 2",
            )
        if scenario == "duel" and players + bots > DUEL_PLACES:
            raise ConfigError(
                "env.kwargs.bots",
                f"{players} players and {bots} bots in the duel map: ViZDoom's engine crashed "
                f"with more than {DUEL_PLACES} in it",
                f"players + bots <= {DUEL_PLACES}, or env.kwargs.scenario=deathmatch",
            )
        if not isinstance(measurements, bool):
            raise ConfigError(
                "env.kwargs.measurements",
                f"got {measurements!r}",
                "true (health, armour, weapons and ammunition beside the screen) or false",
            )
        if port is not None:
            check_port(port)
        try:
            import vizdoom
        except ImportError:
            raise ConfigError(
                "env.parallel_env",
                "ViZDoom multiplayer needs the vizdoom package, which is not installed",
                "pip install vizdoom",
            ) from None
        self._vizdoom = vizdoom
        self.config_path = scenario_config(scenario)
        self.scenario, self.players, self.bots = scenario, players, bots
        self.timelimit, self.frame_skip, self.ticrate = timelimit, frame_skip, ticrate
        self.port = port
        self.reward = reward
        self.shaping_scale = float(shaping_scale)
        self._shapers = (
            [PlayerShaping(SCHEMES[shaping]) for _ in range(players)] if shaping != "none" else []
        )
        """Each player's shaped reward (``shaping``), or none: the score is the reward."""
        self.render_mode = render_mode
        self.possible_agents = [f"player_{index}" for index in range(players)]
        self.agents = list(self.possible_agents)
        self._resolution, self._format, self._screen = SCREENS[screen]
        self._obs_space = spaces.Box(0, 255, self._screen, np.uint8)
        self.measured = bool(measurements)
        if self.measured:  # frames and numbers: packed by neuroplug.envs.measurements
            self._obs_space = spaces.Dict(
                {
                    "screen": self._obs_space,
                    "measurements": spaces.Box(
                        np.array([low for _, low, _ in MEASURED], np.float32),
                        np.array([high for _, _, high in MEASURED], np.float32),
                    ),
                }
            )
        # Each action as the buttons it holds (ACTIONS[1:] is the game's button order).
        chosen = COMBINATIONS if actions == "combinations" else [(b,) if b else () for b in ACTIONS]
        self._presses = np.array(
            [[float(button in held) for button in ACTIONS[1:]] for held in chosen], np.float64
        )
        self._act_space = spaces.Discrete(len(chosen))
        self._games: list[Any] = []
        # A thread of its own for each player, kept for the game's life: a ViZDoom game
        # answers the thread that started it.
        self._threads = [
            ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"doom_player_{index}")
            for index in range(players)
        ]
        self._counts = np.zeros((players, 2))  # frags, deaths so far
        self._seed: int | None = None
        self._stepping: list[Future] = []
        """The players' calls of a step :meth:`step_async` started."""

    def observation_space(self, agent: str) -> spaces.Space:
        return self._obs_space

    def action_space(self, agent: str) -> spaces.Discrete:
        return self._act_space

    # ------------------------------------------------------------------ the game

    def _game(self, index: int, port: int):
        vizdoom = self._vizdoom
        game = vizdoom.DoomGame()
        game.load_config(self.config_path)
        game.set_window_visible(False)
        game.set_screen_resolution(getattr(vizdoom.ScreenResolution, self._resolution))
        game.set_screen_format(getattr(vizdoom.ScreenFormat, self._format))
        game.set_available_buttons([getattr(vizdoom.Button, name) for name in ACTIONS[1:]])
        # A lone player's game waits for it; several players' run on the game's clock.
        lockstep = self.players == 1
        game.set_mode(vizdoom.Mode.PLAYER if lockstep else vizdoom.Mode.ASYNC_PLAYER)
        game.set_ticrate(self.ticrate)
        game.set_console_enabled(False)
        if self._seed is not None:
            game.set_seed(self._seed % 2**31)
        if index == 0:
            game.add_game_args(
                f"-host {self.players} -port {port} -deathmatch +timelimit {self.timelimit} "
                "+sv_spawnfarthest 1 +sv_forcerespawn 1 +sv_noautoaim 1 +viz_connect_timeout 30 "
                "+viz_nocheat 0"
            )
        else:
            game.add_game_args(f"-join 127.0.0.1:{port} +viz_connect_timeout 30")
        game.add_game_args(f"+name player_{index} +colorset {index % 8}")
        return game

    def _start(self) -> list[Future]:
        """Build the game: the host, then every other player joining it, all at once (the
        calls started, their futures returned)."""
        port = self.port if self.port is not None else free_port()
        prepare_engine_directory()  # the players' engines start at once: see its docstring
        self._games = [self._game(index, port) for index in range(self.players)]

        def start(game, index):
            game.init()
            if index == 0 and self.bots:  # the host adds them, as its own first commands
                game.send_game_command("removebots")
                for _ in range(self.bots):
                    game.send_game_command("addbot")

        return self._submit(start)

    def _submit(self, call) -> list[Future]:
        """Start ``call(game, index)`` for every player, each in its own thread, at once."""
        return [
            self._threads[index].submit(call, game, index) for index, game in enumerate(self._games)
        ]

    def _results(self, futures: list[Future]) -> list[Any]:
        """What the started calls returned, in the players' order."""
        try:
            return [future.result(timeout=STEP_TIMEOUT) for future in futures]
        except TimeoutError:
            raise RuntimeError(
                f"a ViZDoom player did not answer within {STEP_TIMEOUT:.0f} s (a player's "
                "engine died, or the game lost a player)"
            ) from None

    def _seen(self, game) -> np.ndarray | dict[str, np.ndarray]:
        state = game.get_state()
        if state is None:  # the game is over
            screen = np.zeros(self._screen, np.uint8)
        else:
            screen = np.ascontiguousarray(self._pixels(state)[::2, ::2])
        if not self.measured:
            return screen
        variable = self._vizdoom.GameVariable
        values = [
            game.get_game_variable(getattr(variable, name)) if state is not None else 0.0
            for name, _, _ in MEASURED
        ]
        return {"screen": screen, "measurements": np.asarray(values, np.float32)}

    def _pixels(self, state) -> np.ndarray:
        """The engine's screen as (height, width, channels)."""
        screen = state.screen_buffer
        return screen[:, :, None] if screen.ndim == 2 else screen

    def _tallies(self) -> np.ndarray:
        variable = self._vizdoom.GameVariable
        return np.array(
            [
                [
                    game.get_game_variable(variable.FRAGCOUNT),
                    game.get_game_variable(variable.DEATHCOUNT),
                ]
                for game in self._games
            ]
        )  # fmt: skip

    def _variables(self, game, shaper: PlayerShaping) -> dict[str, float]:
        """The game variables ``shaper``'s scheme reads, by name, as they are now."""
        variable = self._vizdoom.GameVariable
        return {
            name: game.get_game_variable(getattr(variable, name))
            for name in shaper.scheme.variables
        }

    # ------------------------------------------------------------------ PettingZoo's calls

    def reset(self, seed: int | None = None, options=None):
        self.reset_async(seed, options)
        return self.reset_wait()

    def reset_async(self, seed: int | None = None, options=None) -> None:
        """Start :meth:`reset` and return (a pool's worlds are all started, then waited
        for, as :meth:`step_async`'s); :meth:`reset_wait` ends it."""
        if seed is not None:
            self._seed = int(seed)
        if self._games and not self.bots:
            self._stepping = self._submit(lambda game, index: game.new_episode())
        else:
            # With Doom's bots in the game, new_episode() crashed the engine
            # (benchmarks/results/doom_multiplayer.md): the game is built anew.
            self._stop()
            self._stepping = self._start()

    def reset_wait(self):
        """The reset :meth:`reset_async` started, as :meth:`reset` returns it."""
        futures, self._stepping = self._stepping, []
        self._results(futures)
        self.agents = list(self.possible_agents)
        self._counts = self._tallies()
        for shaper in self._shapers:
            shaper.reset()
        observations = {
            agent: self._seen(game) for agent, game in zip(self.agents, self._games, strict=True)
        }
        return observations, {agent: {} for agent in self.agents}

    def step(self, actions):
        self.step_async(actions)
        return self.step_wait()

    def step_async(self, actions) -> None:
        """Start :meth:`step` (every player's engine, a process of its own, runs its tics)
        and return; :meth:`step_wait` ends it. A pool of worlds starts them all, then waits
        (:class:`~neuroplug.envs.multi_agent.lanes.AgentLanesPool`): their engines run at
        once."""
        pressed = [
            self._presses[int(actions.get(agent, 0))].tolist() for agent in self.possible_agents
        ]

        def act(game, index):
            # No respawn_player() here: it ticks the game until the player is back, and in
            # lockstep the other players' tics must come with it. The server respawns the
            # dead (+sv_forcerespawn) within the steps that follow.
            game.make_action(pressed[index], self.frame_skip)
            return game.is_episode_finished()

        self._stepping = self._submit(act)

    def step_wait(self):
        """The step :meth:`step_async` started, as :meth:`step` returns it."""
        futures, self._stepping = self._stepping, []
        finished = any(self._results(futures))
        tallies = self._tallies()
        change = tallies - self._counts
        self._counts = tallies
        scores = change[:, 0] if self.reward == "frags" else change[:, 0] - change[:, 1]
        rewards = scores
        if self._shapers:
            rewards = [
                self.shaping_scale * shaper.step(self._variables(game, shaper), finished)
                for game, shaper in zip(self._games, self._shapers, strict=True)
            ]
        agents = self.possible_agents
        observations = {
            agent: self._seen(game) for agent, game in zip(agents, self._games, strict=True)
        }
        result = (
            observations,
            {agent: float(rewards[index]) for index, agent in enumerate(agents)},
            dict.fromkeys(agents, False),
            dict.fromkeys(agents, finished),
            {agent: {"score": float(scores[index])} for index, agent in enumerate(agents)},
        )
        if finished:
            self.agents = []
        return result

    def render(self):
        """Every player's screen as its engine draws it, side by side in the players'
        order, as RGB (grey repeated): a video shows each agent's view."""
        height, width, _ = self._screen
        screens = []
        for game in self._games or [None] * self.players:
            state = game.get_state() if game is not None else None
            if state is None:
                screens.append(np.zeros((2 * height, 2 * width, 3), np.uint8))
                continue
            pixels = self._pixels(state)
            screens.append(np.repeat(pixels, 3, axis=2) if pixels.shape[2] == 1 else pixels)
        return np.concatenate(screens, axis=1)

    def _stop(self) -> None:
        for game in self._games:
            game.close()
        self._games = []

    def close(self) -> None:
        self._stop()
        for thread in self._threads:
            thread.shutdown(wait=False)


def parallel_env(**kwargs) -> DoomMultiplayer:
    """PettingZoo's constructor convention: the parallel env."""
    return DoomMultiplayer(**kwargs)
