#!/usr/bin/env bash
# Train several recipes side by side on one GPU, score each on the dev split (as written and typed, greedy), and
# export the best small-shape model (the shipped shape) and the best model of any shape.
#
#   bash workshop/bench/gpu_candidates.sh CORPUS OUT [MINUTES]
#
# A small model leaves a big GPU mostly idle (its steps wait on Python batching), so the candidates share it.
# Selection uses the dev split only (mean of dev BLEU as written and typed); never the test split or the
# everyday list. A smoke run of the whole path (train, evaluate, export) on CUDA goes first and stops the script
# within a minute if anything is broken. OUT receives (few files, each under 16 MB, as the device tool returns):
# runs.tar.gz (every run's logs, configs, metrics and dev scores, and the exported best-small/ model directory
# without its weights), best-small.safetensors (its weights) and, when a bigger shape wins, best-any.tar.part-*.
set -u
corpus=$1 out=$2 minutes=${3:-5}
py=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 OMP_NUM_THREADS=2
mkdir -p "$out" runs

common=(--config configs/small.toml --corpus "$corpus" --optim.max_tokens=16384 --optim.warmup_steps=600
        --optim.max_steps=1000000 "--optim.max_minutes=$minutes" --run.precision=bf16 --run.eval_every=400
        --run.save_every=200 --run.threads=2)
declare -A candidates=(
  [small-d10]="--model.dropout=0.1"
  [small-d20]="--model.dropout=0.2"
  [enc6-d20]="--model.n_encoder_layers=6 --model.dropout=0.2"
  [d384-d20]="--model.d_model=384 --model.n_heads=6 --model.d_ff=1536 --model.dropout=0.2"
)
small_shape=(small-d10 small-d20)

echo "== smoke: tiny run through train, evaluate and export on $($py -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU")')"
head -n 3000 "$corpus" > runs/smoke.tsv
rm -rf runs/gpu-smoke runs/gpu-smoke-export
$py -m training.train --config configs/tiny.toml --corpus runs/smoke.tsv --out runs/gpu-smoke --optim.max_steps=30 \
    --run.eval_every=10 --run.save_every=10 --run.precision=bf16 > runs/gpu-smoke.log 2>&1 \
  && $py -m training.evaluate --model runs/gpu-smoke --pairs runs/gpu-smoke/splits/dev.tsv --json runs/gpu-smoke/dev.json \
  && $py -m training.export --run runs/gpu-smoke --out runs/gpu-smoke-export \
  || { tail -n 40 runs/gpu-smoke.log; echo "smoke run failed"; exit 1; }
grep -E "parameters on|done:" runs/gpu-smoke.log

echo "== training ${!candidates[*]} for $minutes minutes each, side by side"
for name in "${!candidates[@]}"; do
  rm -rf "runs/gpu-$name"
  # shellcheck disable=SC2086  # the candidate's overrides are words
  $py -m training.train "${common[@]}" ${candidates[$name]} --out "runs/gpu-$name" > "runs/gpu-$name.log" 2>&1 &
done
wait
for name in "${!candidates[@]}"; do
  echo "-- $name: $(grep -E "parameters on|done:" "runs/gpu-$name.log" | tr '\n' ' ')"
  $py -m training.evaluate --model "runs/gpu-$name" --pairs "runs/gpu-$name/splits/dev.tsv" --batch-size 128 \
      --json "runs/gpu-$name/dev.json" > "runs/gpu-$name/dev.log" 2>&1 &
done
wait

$py - "$out" "${small_shape[@]}" <<'EOF'
"""Rank the candidates by dev score and write the choice to OUT/choice.txt (best-any, best-small)."""
import json, sys
from pathlib import Path
small = set(sys.argv[2:])
scores = {}
for run in sorted(Path("runs").glob("gpu-*/dev.json")):
    name, d = run.parent.name.removeprefix("gpu-"), json.loads(run.read_text())
    scores[name] = (d["bleu"] + d["typed"]["bleu"]) / 2
    m = json.loads((run.parent / "metrics.json").read_text())
    print(f"{name:10s} dev BLEU {d['bleu']:.2f} typed {d['typed']['bleu']:.2f} | test BLEU "
          f"{m['test_greedy']['bleu']:.2f} typed {m['test_greedy_typed']['bleu']:.2f} | final {m['final']}")
scores.pop("smoke", None)
best_any = max(scores, key=scores.get)
best_small = max((n for n in scores if n in small), key=scores.get)
(Path("runs") / "choice.txt").write_text(f"{best_any} {best_small}\n")
print("best of any shape:", best_any, " best small shape:", best_small)
EOF
read -r best_any best_small < runs/choice.txt || exit 1
rm -rf runs/best-small runs/best-any
$py -m training.export --run "runs/gpu-$best_small" --out runs/best-small
cp runs/best-small/model.safetensors "$out/best-small.safetensors"
if [ "$best_any" != "$best_small" ]; then
  $py -m training.export --run "runs/gpu-$best_any" --out "runs/best-any"
  tar -C runs -cf - best-any | split -b 15M - "$out/best-any.tar.part-"
fi
tar -czf "$out/runs.tar.gz" --exclude=model.safetensors runs/choice.txt runs/*.log runs/best-small \
    runs/gpu-*/metrics.json* runs/gpu-*/train_config.json runs/gpu-*/data_report.json runs/gpu-*/dev.json \
    runs/gpu-*/dev.log runs/gpu-*/config.json
ls -la "$out"
