"""Gymnasium ids of neuroplug's text tasks (``Addition-v0``, ``Sorting-v0``,
``Countdown-v0``), registered when this module is imported: ``env=addition`` names
``neuroplug.envs.text.registration:Addition-v0``, which gymnasium imports this for."""

from __future__ import annotations

import gymnasium

from neuroplug.envs.text import GYMNASIUM_IDS

ENTRY_POINT = "neuroplug.envs.text.env:TextTaskEnv"

for _id, _task in GYMNASIUM_IDS.items():
    if _id not in gymnasium.registry:
        gymnasium.register(_id, entry_point=ENTRY_POINT, kwargs={"task": _task})
