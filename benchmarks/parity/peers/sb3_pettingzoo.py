"""Stable-Baselines3's PPO with one policy for every agent of a PettingZoo parallel env, the
recipe of PettingZoo's own SB3 tutorial (SuperSuit makes each agent a sub-env of a vector
env), for the parity suite (run in the peers' venv ``<peers>/sb3ma``). Each agent's
finished episode is printed as CleanRL's scripts print theirs (``global_step=<agent steps>,
episodic_return=<return>``), so one parser reads both.

    python sb3_pettingzoo.py --env mpe2.simple_spread_v3 --steps 300000 --seed 1 \\
        --settings '{"n_envs": 3, "n_steps": 32, "learning_rate": "lin_0.001"}'

``--env`` is the module whose ``parallel_env`` builds the world (``--kwargs`` its settings,
as JSON); ``n_envs`` in ``--settings`` is the number of worlds, so the vector env has
``n_envs x agents`` sub-envs, and ``num_timesteps`` counts every agent's steps (as
neuroplug's frames do).
"""

from __future__ import annotations

import argparse
import importlib
import json

import supersuit
import torch
from sb3_learn import PrintEpisodes, schedule
from stable_baselines3 import PPO
from stable_baselines3.common.utils import set_random_seed
from stable_baselines3.common.vec_env import VecMonitor


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="a module with parallel_env()")
    parser.add_argument("--kwargs", default="{}", help="the env's settings, as JSON")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--settings", default="{}")
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    settings = {key: schedule(value) for key, value in json.loads(arguments.settings).items()}
    worlds = settings.pop("n_envs", 1)
    env = importlib.import_module(arguments.env).parallel_env(**json.loads(arguments.kwargs))
    env = supersuit.pettingzoo_env_to_vec_env_v1(env)
    env = supersuit.concat_vec_envs_v1(env, worlds, num_cpus=0, base_class="stable_baselines3")
    # SuperSuit's vector env has no seed() (SB3 calls it when given a seed): its worlds are
    # seeded by a reset with the seed, later resets continuing their generators, and
    # SB3's own generators by set_random_seed.
    env.venv.reset(seed=arguments.seed)
    set_random_seed(arguments.seed)
    env = VecMonitor(env)
    if "net_arch" in settings:
        settings["policy_kwargs"] = {"net_arch": settings.pop("net_arch")}
    model = PPO("MlpPolicy", env, device="cpu", verbose=0, **settings)
    model.learn(total_timesteps=arguments.steps, callback=PrintEpisodes())


if __name__ == "__main__":
    main()
