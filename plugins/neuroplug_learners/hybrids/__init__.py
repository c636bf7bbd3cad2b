"""Evolution and RL on one population: ``cem_rl``, ``erl`` and ``pga_me``, evolutionary
algorithms (registered under ``neuroplug.algorithms``) whose critics learn beside them.
They live in the learners' distribution because they run its TD3
(:class:`neuroplug_learners.td3.TD3Update`, ``algo=td3``'s steps over K actors) and the
replay loop, and distributions never import each other."""
