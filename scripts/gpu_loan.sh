#!/usr/bin/env bash
# One call of a lent GPU (15 minutes of device time a session, 10 a command): run-book items, each under its own time
# limit so the call ends by itself, packed into $OUT (at most 8 files come back). Run through the device tool as
#   python3 -m pip download ... -d .whl pgx==2.6.0 mctx==0.0.71 svgwrite tensorboardX chess sgfmill   # here, once
#   bash scripts/gpu_loan.sh bench_go_9x9:200 bench_chess:200 train_go_9x9:150                     # there, carry .whl
# Items (SECONDS is the item's limit, compile included):
#   bench_GAME:S   `azjax bench --preset full` of GAME with --breakdown --n_scl 28 (written after every row; chess
#                  with --skip_plain)
#   xla_GAME:S     the bench's headline alone with XLA_FLAGS=$LOAN_XLA_FLAGS (default: CUDA graphs for while loops,
#                  which azjax sets itself since the third loan: give other flags to try them; the bench_ and train_
#                  items run with azjax's default, AZJAX_GPU_GRAPHS=0 before the command runs them without)
#   train_GAME:S   GAME's `full` preset trained for S minus 90 seconds, then exported (params come back apart)
#   loan_GAME:S    the same with GAME's `loan` preset (go_9x9: from scratch in one loan, graded on the CPU)
#   plan_GAME:S    `azjax plan --preset full --compile` (XLA's memory analysis and the compile time)
#   sai_7x7:S      lab/sai_7x7/sai_7x7.py at the go_7x7 `sai_full` preset (SAI's 3x128 network, 64 simulations) for S
#                  minus 90 seconds: its estimate's JSON and plot, and the exported model (params come back apart)
#   sweep:S        scripts/bench_sweep.py --seeds 8 --steps 10 --sequential_runs 1 --other_steps 0 (8 seeds against one run)
# The first loan (results/gpu/NVIDIA_H200/loan_2026-11-26.json) measured what each costs on an H200.
# The working tree travels whole and may carry 64 MiB with the wheels; results/ alone is over 60 MB, so move it aside
# for the calls (`mv results /tmp/results_hold`, back after): nothing here reads it (loan_2026-11-27_2.json).
{  # one block: bash reads it whole before running it, so an edit to this file cannot change a run
set -uo pipefail
cd "$(dirname "$0")/.."
RET=${OUT:-/tmp/gpu_loan_out}
G=/tmp/gpu_loan; rm -rf "$G"; mkdir -p "$G" "$RET"
if [ -d .whl ]; then  # the lent machine has jax, flax, optax, orbax, chex; pgx, mctx and the rest travel as wheels
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site:$PWD
fi
if ! command -v azjax >/dev/null; then  # no editable install there: a shim for the console script, and `python`
  mkdir -p /tmp/bin
  printf '#!/bin/sh\nexec python3 -m azjax.cli "$@"\n' > /tmp/bin/azjax; chmod +x /tmp/bin/azjax
  command -v python >/dev/null || ln -sf "$(command -v python3)" /tmp/bin/python
  export PATH=/tmp/bin:$PATH
fi
export AZJAX_CACHE_DIR=${AZJAX_CACHE_DIR:-/tmp/jaxcache} PYTHONUNBUFFERED=1
nvidia-smi > "$G/nvidia_smi.txt" 2>&1
python3 -c "import jax, pgx, mctx; print(jax.__version__, jax.devices(), pgx.__version__)" 2>&1 | tee "$G/versions.txt"

for item in "$@"; do
  name=${item%%:*}; limit=${item##*:}; game=${name#*_}
  start=$(date +%s)
  minutes="$(( (limit - 90) / 60 )).$(( ((limit - 90) % 60) * 10 / 60 ))"  # the training items' budget: S - 90 s
  echo "== $name ($limit s)" | tee -a "$G/items.log"
  case "$name" in
  bench_*) plain=(); [ "$game" = chess ] && plain=(--skip_plain)  # chess: see scripts/gpu_runbook.sh
           timeout "$limit" azjax bench --preset full --game "$game" --breakdown --n_scl 28 --rounds 1 "${plain[@]}" \
             --out "$G/bench_full_$game.json" ;;
  xla_*)   XLA_FLAGS="${LOAN_XLA_FLAGS:---xla_gpu_enable_command_buffer=FUSION,CUBLAS,CUBLASLT,CUSTOM_CALL,CUDNN,CONDITIONAL,WHILE}" \
             timeout "$limit" azjax bench --preset full --game "$game" --n_scl 0 --rounds 2 --skip_plain \
             --out "$G/bench_full_${game}_xla.json" ;;
  train_*|loan_*)  # train_: the `full` preset; loan_: the `loan` preset (sized for one loan)
           preset=full; [ "${name%%_*}" = loan ] && preset=loan
           model="${game}_$preset"
           timeout "$limit" azjax train --game "$game" --preset "$preset" --minutes "$minutes" \
             --log_every 1 --run_dir "runs/gpu_loan_$model" --no-progress \
           && azjax export "runs/gpu_loan_$model" "$G/$model" && cp "runs/gpu_loan_$model/metrics.csv" "$G/$model/" \
           && mv "$G/$model/params.msgpack" "$RET/params_$model.msgpack" ;;
  sai_7x7) timeout "$limit" python3 -m lab.sai_7x7.sai_7x7 --preset sai_full --run_dir runs/gpu_loan_sai_7x7 \
             --minutes "$minutes" --out "$G/sai_7x7_gpu.json" \
             --plot "$G/sai_7x7_gpu.png" --model_dir "$G/go_7x7_sai_gpu" \
           && mv "$G/go_7x7_sai_gpu/params.msgpack" "$RET/params_go_7x7_sai_gpu.msgpack" ;;
  plan_*)  timeout "$limit" azjax plan --game "$game" --preset full --compile --out "$G/plan_$game.json" ;;
  sweep)   timeout "$limit" python3 -m scripts.bench_sweep --seeds 8 --steps 10 --sequential_runs 1 --other_steps 0 \
             --out "$G/bench_sweep.json" ;;
  *) echo "gpu_loan.sh: unknown item $name (bench_GAME, xla_GAME, train_GAME, loan_GAME, plan_GAME, sai_7x7, sweep)" >&2 ;;
  esac 2>&1 | grep -v cuda_timer | tee "$G/$name.log"
  echo "$name: exit ${PIPESTATUS[0]} after $(( $(date +%s) - start )) s" | tee -a "$G/items.log"
done
tar czf "$RET/gpu_loan.tgz" -C /tmp gpu_loan
ls -la "$RET"
exit
}
