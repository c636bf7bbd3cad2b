"""First-party learners, registered through the ``neuroplug.learners`` entry-point group,
and, in :mod:`neuroplug_learners.hybrids`, the algorithms whose critics learn with the
learners' TD3 (``cem_rl``, ``erl``, ``pga_me``)."""
