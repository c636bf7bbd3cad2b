"""Text tasks with verifiable rewards as an env family (``env=addition``, ``sorting``,
``countdown``, a package's own by entry point): a prompt, the policy's completion token by
token, a reward computed on the completion."""

GYMNASIUM_IDS = {"Addition-v0": "addition", "Sorting-v0": "sorting", "Countdown-v0": "countdown"}
"""The gymnasium id of each of neuroplug's text tasks (:mod:`.registration` registers them)."""
