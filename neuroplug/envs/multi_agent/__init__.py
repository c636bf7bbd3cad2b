"""Several agents in one world: PettingZoo's parallel envs, each agent a lane of the pool.

A ``ParallelEnv`` of k agents fills k consecutive slots of a pool (:mod:`.lanes`), so the
engines above it batch every agent of every world into one forward, as they batch a
population's envs. ``env.parallel_env`` names the env (:mod:`.pools`); with
``env.policy_mapping=shared`` one policy acts for every agent, each reading its own
observation (padded to the longest agent's, with its role where roles differ:
:mod:`.maker`) and earning its own reward: a cooperative task's team learns as one, and a
competitive one is played by the policy against itself.
"""
