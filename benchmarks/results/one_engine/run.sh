#!/usr/bin/env bash
# Issue 46, item 7: benchmarks/learners.py (throughput: one segment of ppo, appo, dqn on
# CartPole and Pong) and benchmarks/pbt.py (8 PPO members on CartPole) from the commit
# before the one-engine change and from the change, alternating, in one run on this
# machine. Each tree is a git worktree run by the same interpreter and packages:
#   bash benchmarks/results/one_engine/run.sh OLD_TREE NEW_TREE PYTHON OUT_DIR ROUNDS
set -euo pipefail
old=$1 new=$2 python=$3 out=$4 rounds=${5:-2}
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for name in old new; do
    tree=${!name}
    PYTHONPATH="$tree:$tree/plugins:$tree/plugins/neuroplug-cem" "$python" "$tree/benchmarks/learners.py" --parts throughput \
      --learners ppo,appo,dqn --floor-seconds 3 --out "$out/learners_${name}_${round}.json" \
      > "$out/learners_${name}_${round}.log" 2>&1
    PYTHONPATH="$tree:$tree/plugins:$tree/plugins/neuroplug-cem" "$python" "$tree/benchmarks/pbt.py" --frames 20000 \
      --out "$out/pbt_${name}_${round}.json" > "$out/pbt_${name}_${round}.log" 2>&1
  done
done
