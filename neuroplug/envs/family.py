"""What neuroplug knows about a family of envs, in one object per family.

Every rule that depends on the kind of environment — where the true score comes from,
no-op starts, frame skipping, whether pools can be reused, rendering for video, the
default behavior characterisation, the default network — is a trait here, and the rest
of neuroplug reads the trait from ``EnvSpec.family`` instead of comparing family names.
A family is one module in :mod:`neuroplug.envs.families` defining ``FAMILY`` (found by
:func:`neuroplug.envs.families.all_families`), plus its configs in ``conf/env/``; a package
adds its own through the ``neuroplug.env_families`` entry-point group (a subclass of
:class:`EnvFamily`, built without arguments), checked by
:func:`neuroplug.testing.check_env_family`.
"""

from __future__ import annotations

from typing import Any, ClassVar


class EnvFamily:
    """A family of envs (EnvPool tasks or gymnasium envs); subclasses override the traits
    that differ.

    Instances carry no state: two are equal when their names are (so a spec that travelled
    to another process compares equal to the original).
    """

    name: ClassVar[str]
    """What ``env.family`` names it."""
    registration: ClassVar[str] = ""
    """The EnvPool module that registers the family's tasks (imported alone when the config
    names the family, which spares a start-up the import of every other family); empty
    for families of gymnasium envs."""
    detection_order: ClassVar[int] = 50
    """Families are asked in this order whether a task is theirs (the fallback last)."""
    default_behavior: ClassVar[str | None] = "final_obs"
    """What ``algo.behavior=auto`` means here (None: no characterisation fits)."""
    preset_kind: ClassVar[str | None] = None
    """A learner preset of the family's own (``doom``): a learner whose ``presets()`` has
    an entry of that name uses it, any other the preset of the observations' kind."""
    score_info_key: ClassVar[str | None] = None
    """The ``info`` entry holding the step's true, unshaped score, when the reward the
    pool returns may not be it (Atari's ``info['reward']``: unclipped game points). The
    evaluation engine and the learners' sampler both read it from here."""
    game_over_info_key: ClassVar[str | None] = None
    """The ``info`` entry marking the real end of a game when the pool's ``done`` may end
    episodes earlier (Atari's ``info['terminated']``: all lives lost, under
    ``episodic_life``)."""
    writes_text: ClassVar[bool] = False
    """Its episodes write text (:mod:`neuroplug.envs.text`): an observation is the context's
    token ids, shown as text (watch prints each episode's) instead of a video."""
    video_from_observation: ClassVar[bool] = False
    """When EnvPool cannot render, a video may show the observations (grayscale frames)."""
    renders_with_opengl: ClassVar[bool] = False
    """Frames come from an OpenGL context that may be missing: probe before a video."""
    native_fps: ClassVar[float | None] = None
    """The emulator's frames per second, for videos at game speed (None: 30 per step)."""
    engine_lanes: ClassVar[int] = 256
    """The evaluation engine's EnvPool slots (lanes) when ``scheduler.max_envs`` is null:
    the most episodes in flight at once. More lanes mean fewer, fuller cycles (each cycle's
    Python and forward-call cost shared by more env steps) but more envs built and held."""
    position_entries: ClassVar[dict[str, tuple[str, int]]] = {}
    """Tasks (by id prefix) whose agent position leads an observation entry:
    ``(entry, values)``; the ``final_position`` characterisation reads it there."""

    def detects(self, settings: dict[str, Any], envpool_spec: Any) -> bool:
        """Whether a task with EnvPool config ``settings`` and spec ``envpool_spec`` is ours."""
        return False

    def detects_gymnasium(self, env_name: str) -> bool:
        """Whether a gymnasium env (its id, or its entry point's class name) is ours; a
        family that a package registers for its own envs says so here."""
        return False

    def make_defaults(self) -> dict[str, Any]:
        """``envpool.make`` settings this family runs with unless ``env.kwargs`` says otherwise."""
        return {}

    def frame_skip(self, settings: dict[str, Any]) -> int:
        """Emulator frames per agent step (frame accounting)."""
        return 1

    def start_noops(self, settings: dict[str, Any]) -> int:
        """At most this many no-op actions start an evaluation episode (drawn per episode)."""
        return 0

    def reusable_pools(self, settings: dict[str, Any]) -> bool:
        """Whether an episode depends only on its start and the actions taken, so one pool
        may play many evaluations."""
        return False

    def engine_pool_settings(self) -> dict[str, Any]:
        """``envpool.make`` settings of the evaluation engine's pools beyond the spec's."""
        return {}

    def prepare_pool_start(self) -> None:
        """Runs in the process about to build a pool of this family's envs, just before
        EnvPool starts them (what the simulators need from that process first)."""

    def default_network(self, is_image: bool) -> str:
        """The ``net.type`` that ``auto`` picks for this family's observations."""
        return "nature_cnn" if is_image else "mlp"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EnvFamily) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"EnvFamily({self.name!r})"

    def __str__(self) -> str:
        return self.name
