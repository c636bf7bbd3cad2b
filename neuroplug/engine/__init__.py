"""The episode engine: lockstep lanes that play a population's episodes on EnvPool.

Every evaluation plays through it — the built-in schedulers (``plugins/neuroplug_schedulers``
and ``neuroplug_ray``, which differ only in how they group and place lanes) and
:mod:`neuroplug.watch` — so they all play the same episodes with the same members.

:mod:`neuroplug.engine.lockstep` holds the engine and the scheduler base built on it;
:mod:`neuroplug.engine.config` its settings, which import no torch (a scheduler's schema is
read before a run is built). The package imports neither, so reading the settings stays light.
"""
