"""What an env family must honour, checked for plugin authors (``check_env_family``).

A family registered through the ``neuroplug.env_families`` entry-point group is built
without arguments and read wherever neuroplug needs a trait (:mod:`neuroplug.envs.family`);
every trait must have the type and meaning the readers expect, and the family must travel
to another process (schedulers ship specs to workers) and still compare equal.
"""

from __future__ import annotations

import pickle

from neuroplug.envs.families import built_in_families
from neuroplug.envs.family import EnvFamily
from neuroplug.evaluation.behaviors import BEHAVIORS
from neuroplug.experiment.network_choice import network_names


class FamilyContractViolation(AssertionError):
    """A family trait that neuroplug cannot use, named."""


def check_env_family(family_class: type[EnvFamily]) -> EnvFamily:
    """Build ``family_class()`` and check every trait; returns the family.

    Raises :class:`FamilyContractViolation` naming the first trait that is wrong."""

    def require(condition: bool, what: str) -> None:
        if not condition:
            raise FamilyContractViolation(f"{family_class.__name__}: {what}")

    require(
        isinstance(family_class, type) and issubclass(family_class, EnvFamily),
        "must subclass neuroplug.envs.family.EnvFamily",
    )
    family = family_class()
    name = getattr(family, "name", None)
    require(
        isinstance(name, str) and name.isidentifier(), f"name must be an identifier, got {name!r}"
    )
    shipped = {family.name: type(family) for family in built_in_families()}
    require(
        shipped.get(name, family_class) is family_class,
        f"name {name!r} is a family neuroplug ships ({', '.join(sorted(shipped))}): choose "
        "another (the entry point's name must be the same)",
    )
    require(
        isinstance(family.registration, str),
        "registration must be a string ('' for gymnasium envs)",
    )
    require(isinstance(family.detection_order, int), "detection_order must be an int")
    require(
        family.default_behavior is None or family.default_behavior in BEHAVIORS[1:],
        f"default_behavior must be None or one of {', '.join(BEHAVIORS[1:])}",
    )
    for trait in ("score_info_key", "game_over_info_key"):
        value = getattr(family, trait)
        require(value is None or isinstance(value, str), f"{trait} must be None or an info key")
    require(
        family.native_fps is None or family.native_fps > 0, "native_fps must be None or positive"
    )
    for is_image in (False, True):
        network = family.default_network(is_image)
        require(
            network in network_names(),
            f"default_network({is_image}) is {network!r}; known: {', '.join(network_names())}",
        )
    require(isinstance(family.make_defaults(), dict), "make_defaults() must return a dict")
    require(
        isinstance(family.frame_skip({}), int) and family.frame_skip({}) >= 1,
        "frame_skip({}) must be an int >= 1",
    )
    require(
        isinstance(family.start_noops({}), int) and family.start_noops({}) >= 0,
        "start_noops({}) must be an int >= 0",
    )
    require(isinstance(family.reusable_pools({}), bool), "reusable_pools({}) must be a bool")
    require(
        isinstance(family.detects_gymnasium("SomeEnv-v0"), bool),
        "detects_gymnasium(name) must return a bool",
    )
    travelled = pickle.loads(pickle.dumps(family))
    require(
        travelled == family and hash(travelled) == hash(family),
        "must compare equal (and hash alike) after pickling: another process must see the same family",
    )
    return family
