"""First-party evolutionary algorithms, registered through the ``neuroplug.algorithms``
entry-point group. The hybrids of evolution and RL (``cem_rl``, ``erl``, ``pga_me``) are
algorithms too, in ``neuroplug_learners.hybrids``, beside the TD3 they share with
``algo=td3``."""
