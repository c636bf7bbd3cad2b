"""Sample Factory 2.1.1's APPO, run in its own venv: ``cartpole`` or ``atari`` (EnvPool).

    /path/to/sf-venv/bin/python benchmarks/peers/sf_appo.py atari --env=atari_pong ...
    /path/to/sf-venv/bin/python benchmarks/peers/sf_appo.py cartpole --env=CartPole-v1 ...

Everything after the first argument goes to Sample Factory's own example trainer
(``sf_examples.envpool.atari.train_envpool_atari`` or ``sf_examples.train_gym_env``).
One fix is applied first, in every process (spawned workers import this module too):
EnvPool 1.2.5's gymnasium pools lack the ``closed`` and ``viewer`` attributes gymnasium's
``VectorEnv.close`` reads, so Sample Factory's EnvPool example fails when it closes the env it builds to read
the spaces. ``benchmarks/appo_vs_sample_factory.py`` runs this beside neuroplug.
"""

import sys

import gymnasium.vector

gymnasium.vector.VectorEnv.closed = False
gymnasium.vector.VectorEnv.viewer = None

if __name__ == "__main__":
    which = sys.argv.pop(1)
    if which == "atari":
        from sf_examples.envpool.atari.train_envpool_atari import main
    else:
        from sf_examples.train_gym_env import main
    sys.exit(main())
