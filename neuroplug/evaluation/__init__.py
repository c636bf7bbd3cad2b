"""Evaluation: lockstep lanes that play a population's episodes on an env pool.

Every evaluation plays through it — the built-in schedulers (:mod:`.schedulers`) and
``neuroplug_ray``'s, which differ only in how they group and place lanes, and
:mod:`neuroplug.tools.watch` — so they all play the same episodes with the same members.

:mod:`.lockstep` holds the lanes and the scheduler base built on them; :mod:`.config` their
settings, which import no torch (a scheduler's schema is read before a run is built);
:mod:`.episodes` the ledger that adds up each member's episodes; :mod:`.behaviors` the
behaviour descriptors read from an episode's last step. The package imports none of them,
so reading the settings stays light.
"""
