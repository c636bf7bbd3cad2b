#!/usr/bin/env bash
# One visit to a lent GPU machine (the device tool), planned as one script because every
# start of that machine costs minutes of a short budget. Each step has its own time limit
# and a failed step does not stop the others; everything lands in $OUT (visit.log and
# runs.tgz), which is what comes back.
#
#   here:  bash ../shared/tools/gpu-site.sh && git rev-parse HEAD > .gpu-site/commit
#   there: bash benchmarks/gpu_visit.sh measure     # timings, on an otherwise idle machine
#          bash benchmarks/gpu_visit.sh suite       # the test suite with the GPU present
#          bash benchmarks/gpu_visit.sh hyperscale  # language-model populations (issue 70)
#
# SCALE=0.05 DEVICE=cpu bash benchmarks/gpu_visit.sh measure   # a smoke test of the steps
set -uo pipefail
cd "$(dirname "$0")/.."
part=${1:-measure}
OUT=${OUT:-/tmp/gpu-visit}
DEVICE=${DEVICE:-cuda}
SCALE=${SCALE:-1}
RUNS=${RUNS:-/tmp/gpu-runs}
mkdir -p "$OUT" "$RUNS"
exec > >(tee -a "$OUT/visit.log") 2>&1

if [[ -f .gpu-site/site.tgz ]]; then
  mkdir -p .gpu-site/site
  [[ -d .gpu-site/site/envpool ]] || tar xzf .gpu-site/site.tgz -C .gpu-site/site
  export PYTHONPATH=$PWD/.gpu-site/site:$PWD/.gpu-site/extra:$PWD:$PWD/plugins:$PWD/tests/support
  PY=python3
else
  PY=${PY:-.venv/bin/python}
fi
export PYTHONUNBUFFERED=1 WANDB_MODE=offline HYDRA_FULL_ERROR=1

step() {  # step NAME SECONDS COMMAND...: run COMMAND for at most SECONDS x SCALE
  local name=$1 limit
  limit=$(python3 -c "print(max(1, round($2 * $SCALE)))")
  shift 2
  echo "=== $name ($(date +%T), limit ${limit}s): $*"
  local started=$SECONDS
  timeout -s INT -k 10 "$limit" "$@"
  echo "=== $name: rc=$? after $((SECONDS - started)) s"
}


measure() {
  step versions 25 $PY - <<'PY'
import os, platform, subprocess, numpy, torch, triton, envpool
print("commit", open(".gpu-site/commit").read().strip() if os.path.exists(".gpu-site/commit") else "?")
print("python", platform.python_version(), "torch", torch.__version__, "triton", triton.__version__,
      "numpy", numpy.__version__, "envpool", envpool.__version__, "cpus", os.cpu_count())
if torch.cuda.is_available():
    print(torch.cuda.get_device_name(), subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout)
PY
  # The EnvPool floor for the learners' env counts on every core (random actions, no network).
  step floor_pong 35 $PY - <<'PY'
import os, sys
sys.path.insert(0, "benchmarks")
from schedulers import measure_floor
from neuroplug.config.schema import EnvConfig
from neuroplug.envs.make import make_spec
spec = make_spec(EnvConfig(task_id="Pong-v5"))
for envs in (64, 128):
    print("floor Pong-v5", envs, "envs:", measure_floor(spec, envs, os.cpu_count(), 5.0), flush=True)
PY
  # Learners on Pong with a GPU preset: 64 envs in 2 groups (ppo), 128 in 4 (appo).
  step ppo_pong 100 $PY -m neuroplug logger=console algo=ppo env=pong algo.device=$DEVICE algo.num_envs=64 \
    algo.env_groups=2 run.max_frames=10000000 run.output_dir=$RUNS/ppo_pong
  step appo_pong 70 $PY -m neuroplug logger=console algo=appo env=pong algo.device=$DEVICE algo.num_envs=128 \
    algo.env_groups=4 run.max_frames=10000000 run.output_dir=$RUNS/appo_pong
  # Population-based training: 8 PPO members of 8 envs acting in one forward, against one
  # PPO learner of the same 8 envs.
  step pbt_pong 50 $PY -m neuroplug logger=console algo=pbt algo.learner=ppo algo.members=8 env=pong \
    algo.device=$DEVICE run.max_frames=10000000 run.output_dir=$RUNS/pbt_pong
  step ppo8_pong 30 $PY -m neuroplug logger=console algo=ppo env=pong algo.device=$DEVICE run.max_frames=10000000 \
    run.output_dir=$RUNS/ppo8_pong
  # Low-rank populations against one shared network at the same batch.
  step lowrank 45 $PY benchmarks/lowrank_inference.py --device $DEVICE --members 4096 \
    --tiles 1024 4096 --threads 1 --budget 1 --out $RUNS/lowrank_inference.md
  step triton 90 $PY benchmarks/triton_inference.py --mlp-populations 1024 16384 \
    --cnn-populations 1024 --repeats 10 --output $RUNS/triton_inference.md
  # An MLP task against the floor (HalfCheetah, P=256).
  step schedulers_mlp 60 $PY benchmarks/schedulers.py --tasks mlp --population 256 \
    --device $DEVICE --floor-seconds 5 --out $RUNS/schedulers_mlp.json
  # The headline: whole evolution runs on the whole machine.
  step es_breakout 45 $PY -m neuroplug logger=console algo=es env=breakout algo.population_size=256 \
    env.max_episode_steps=1000 backend.device=$DEVICE run.max_generations=2 \
    run.output_dir=$RUNS/es_breakout
  step ga_frostbite 40 $PY -m neuroplug logger=console algo=ga env=frostbite algo.population_size=256 \
    env.max_episode_steps=1000 backend.device=$DEVICE run.max_generations=2 \
    run.output_dir=$RUNS/ga_frostbite
}

hyperscale() {
  # Issue 70's first visit: a rank-1 population of Qwen2.5 shapes (random weights: no
  # download) beside one shared model at the same batch, what hyperscale_model.py predicts.
  step versions 25 $PY -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name() if torch.cuda.is_available() else 'cpu')"
  step lm_05b 180 $PY benchmarks/pretrained_lm_forward.py --model Qwen2.5-0.5B --device $DEVICE \
    --members 16 64 256 --prompts 8 --context 64 --out $RUNS/pretrained_lm_forward_05b.md
  step lm_05b_whole 120 $PY benchmarks/pretrained_lm_forward.py --model Qwen2.5-0.5B --device $DEVICE \
    --members 16 64 --prompts 8 --context 64 --whole-context --out $RUNS/pretrained_lm_forward_05b_whole.md
  step lm_15b 150 $PY benchmarks/pretrained_lm_forward.py --model Qwen2.5-1.5B --device $DEVICE \
    --members 16 64 --prompts 8 --context 64 --out $RUNS/pretrained_lm_forward_15b.md
  step es_text 90 $PY -m neuroplug logger=console algo=es env=countdown net.type=pretrained_lm \
    'net.kwargs.config={model_type: qwen2, hidden_size: 896, intermediate_size: 4864, num_hidden_layers: 24, num_attention_heads: 14, num_key_value_heads: 2, vocab_size: 32}' \
    algo.perturbation=lowrank algo.rank=1 algo.lowrank_min_size=1024 algo.population_size=64 \
    algo.episodes_per_member=8 backend.device=$DEVICE run.max_generations=2 run.output_dir=$RUNS/es_text
}

suite() {
  # Ray, W&B, Hydra's sweep launchers and pip are not on that machine.
  step suite "${SUITE_SECONDS:-170}" $PY -m pytest -q -n 14 -p no:cacheprovider --timeout 150 \
    --junitxml=$RUNS/junit.xml tests/evaluation/test_lockstep.py \
    tests/plugins/neuroplug_learners/test_appo.py tests/plugins/neuroplug_learners/test_dqn.py tests/plugins/neuroplug_triton/test_triton_backend.py tests \
    --ignore=tests/plugins/neuroplug_ray --ignore=tests/loggers/test_wandb.py \
    --ignore=tests/test_sweeps.py --ignore=tests/test_third_party_plugin.py
}

"$part"
find "$RUNS" -name '*.pt' -size +2M -delete  # keep what comes back small
tar czf "$OUT/runs-$part.tgz" -C "$RUNS" .
echo "=== done $(date +%T)"
