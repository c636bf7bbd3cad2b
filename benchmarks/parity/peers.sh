#!/usr/bin/env bash
# The parity suite's peers, each in its own venv under one folder (default
# ~/.cache/neuroplug-parity; the suite's --peers):
#   rl/       CleanRL's scripts' dependencies (gymnasium 0.29.1 with MuJoCo, tyro,
#             tensorboard) and Stable-Baselines3 2.3.2, torch 2.13.0 (the CPU build)
#   cleanrl/  CleanRL's repository at the commit the results name
#   sf/       Sample Factory 2.1.1 (its APPO, gymnasium 0.29.1, vizdoom for its Doom examples),
#             torch 2.13.0 (the CPU build)
#   ribs/     pyribs 0.8.3 (its last release for numpy 1, which MuJoCo 2.3.7 needs),
#             gymnasium 0.29.1 with MuJoCo 2.3.7
#   evotorch/ EvoTorch 0.6.1, gymnasium 1.2.2, torch 2.13.0 (the CPU build)
#   cma/      pycma 4.5.0, gymnasium 1.2.2
#   sb3ma/    Stable-Baselines3 with PettingZoo 1.27.0, mpe2 1.1.1 and SuperSuit 3.11.0 (its
#             shared-policy recipe for multi-agent envs), torch 2.13.0 (the CPU build)
#   pzma/     PettingZoo 1.27.0 (Atari) with ale-py's ROMs, SuperSuit 3.11.0, gymnasium,
#             tensorboard and torch 2.13.0 (the CPU build): CleanRL's ppo_pettingzoo_ma_atari.py
#             run by peers/cleanrl_ma_atari.py (its pinned PettingZoo 1.18 needs Python < 3.11)
# Usage: bash benchmarks/parity/peers.sh [DIR] ; CLEANRL_SOURCE=<url or path> to clone from
# elsewhere than GitHub.
set -euo pipefail
peers="${1:-$HOME/.cache/neuroplug-parity}"
cleanrl_commit=fe8d8a03
mkdir -p "$peers"
if [ ! -x "$peers/rl/bin/python" ]; then
  python3.11 -m venv "$peers/rl"
  "$peers/rl/bin/pip" install --quiet torch==2.13.0 "gymnasium[mujoco]==0.29.1" mujoco==2.3.7 \
    tyro tensorboard stable-baselines3==2.3.2 "numpy<2"
fi
if [ ! -d "$peers/cleanrl/.git" ]; then
  git clone --quiet "${CLEANRL_SOURCE:-https://github.com/vwxyzjn/cleanrl}" "$peers/cleanrl"
fi
if [ ! -x "$peers/sf/bin/python" ]; then
  python3.11 -m venv "$peers/sf"
  "$peers/sf/bin/pip" install --quiet torch==2.13.0 sample-factory==2.1.1 gymnasium==0.29.1 vizdoom \
    "numpy<2"
fi
if [ ! -x "$peers/ribs/bin/python" ]; then
  python3.11 -m venv "$peers/ribs"
  "$peers/ribs/bin/pip" install --quiet ribs==0.8.3 "gymnasium[mujoco]==0.29.1" mujoco==2.3.7 \
    "numpy<2"
fi
if [ ! -x "$peers/evotorch/bin/python" ]; then
  python3.11 -m venv "$peers/evotorch"
  "$peers/evotorch/bin/pip" install --quiet torch==2.13.0 evotorch==0.6.1 gymnasium==1.2.2
fi
if [ ! -x "$peers/cma/bin/python" ]; then
  python3.11 -m venv "$peers/cma"
  "$peers/cma/bin/pip" install --quiet cma==4.5.0 gymnasium==1.2.2
fi
if [ ! -x "$peers/sb3ma/bin/python" ]; then
  python3.11 -m venv "$peers/sb3ma"
  "$peers/sb3ma/bin/pip" install --quiet torch==2.13.0
  "$peers/sb3ma/bin/pip" install --quiet "stable-baselines3>=2.4" pettingzoo==1.27.0 \
    mpe2==1.1.1 supersuit==3.11.0
fi
if [ ! -x "$peers/pzma/bin/python" ]; then
  python3.11 -m venv "$peers/pzma"
  "$peers/pzma/bin/pip" install --quiet torch==2.13.0
  "$peers/pzma/bin/pip" install --quiet "pettingzoo[atari]==1.27.0" supersuit==3.11.0 ale-py==0.12.1 \
    gymnasium==1.4.0 tensorboard
fi
git -C "$peers/cleanrl" checkout --quiet "$cleanrl_commit"
echo "peers ready in $peers"
