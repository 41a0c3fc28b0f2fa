#!/usr/bin/env bash
# The English→Spanish candidate of workshop/recipes/en-es.toml within one lent GPU's minutes: the en-es-v2 step
# (the shipped es-en model's weights and tokenizer, reversed, its split pinned, typing noise on the English side)
# trained for MINUTES at 4× the CPU's batch, then its shipping-rule figures (Hello world, the everyday list) and its
# weights in half precision, cut in two to fit the device tool's 16 MiB a file. Three CPU fine-tunes (v1–v3) stalled
# near 77 % of the everyday list after 1–2 CPU hours; a GPU gives the same recipe ~50× the steps.
#
#   bash workshop/bench/gpu_en_es.sh CORPUS OUT [MINUTES]
#
# MINUTES (default 7) is the training time; add ~3 for the smoke run, data preparation and scoring. OUT receives
# model.tar.gz (the model folder without its weights), weights.part-aa/-ab, phrases.txt and train.log.
# With the device tool: copy the corpus into the (ignored) corpora/ folder here, then run
#   command: bash workshop/bench/gpu_en_es.sh corpora/tatoeba-spa-eng/spa-eng.tsv $OUT 7   carry: ["corpora"]
# and back here put the model together and judge it by the recipe's rule:
#   mkdir -p runs/gpu-en-es && tar xzf FILES/model.tar.gz -C runs/gpu-en-es \
#     && cat FILES/weights.part-* > runs/gpu-en-es/model.safetensors
#   python -m translate --model runs/gpu-en-es "Hello world"; python -m workshop phrases --model runs/gpu-en-es
#   python -m workshop gate --candidate runs/gpu-en-es
# Dry run on a CPU (the whole path, tiny and short):
#   EN_ES_SHAPE="--config configs/tiny.toml" DEVICE=cpu bash workshop/bench/gpu_en_es.sh CORPUS OUT 0.2
set -eu
corpus=$1 out=$2 minutes=${3:-7}
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1
mkdir -p "$out" runs
run=runs/gpu-en-es
# The parent's shape (8+3, d_model 256) comes with --init-from; a 4× batch, so a higher rate than the CPU's 7e-4.
shape=${EN_ES_SHAPE:-"--config configs/small.toml --init-from checkpoints/es-en --optim.max_tokens=16384
  --optim.lr=1e-3 --optim.warmup_steps=400 --run.precision=bf16"}
reverse="--data.reverse=true --data.noise.drop_inverted=0 --data.noise.drop_apostrophes=0.5"

# data.split_from / init_from compare corpus paths: the corpus must stand where the parent's training read it.
expected=$($py -c 'import json; print(json.load(open("checkpoints/es-en/train_config.json"))["data"]["corpora"][0])')
if [ ! -e "$expected" ]; then mkdir -p "$(dirname "$expected")" && cp "$corpus" "$expected"; fi

echo "== smoke: 20 tiny steps, reversed, exported in half precision"
head -n 3000 "$corpus" > runs/gpu-smoke.tsv
rm -rf runs/gpu-smoke runs/gpu-smoke-model
# shellcheck disable=SC2086  # $reverse is a list of options
$py -m training train --config configs/tiny.toml --corpus runs/gpu-smoke.tsv --out runs/gpu-smoke $reverse \
    --optim.max_steps=20 --run.eval_every=10 --run.save_every=10 > runs/gpu-smoke.log 2>&1 \
  && $py -m training export --run runs/gpu-smoke --out runs/gpu-smoke-model --dtype float16 >> runs/gpu-smoke.log 2>&1 \
  || { tail -n 30 runs/gpu-smoke.log; echo "smoke run failed"; exit 1; }

echo "== en-es: $minutes minutes on $($py -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU")')"
# shellcheck disable=SC2086  # $shape and $reverse are lists of options
$py -m training train $shape $reverse --corpus "$expected" --out "$run" --optim.max_steps=1000000 \
    "--optim.max_minutes=$minutes" --run.eval_every=500 --run.save_every=500 --run.device="$device" \
    > "$out/train.log" 2>&1 || { tail -n 40 "$out/train.log"; exit 1; }
tr '\r' '\n' < "$out/train.log" | grep -aE "parameters on|pinned|done:|dev_bleu|stopped" || true

echo "== the shipping rule's figures"
{
  $py -m translate --model "$run" --device "$device" "Hello world"
  $py -m workshop phrases --model "$run"
} > "$out/phrases.txt" 2>&1 || true
grep -E "accepted|^Hola" "$out/phrases.txt" || tail -n 5 "$out/phrases.txt"

echo "== the model folder, weights in half precision"
rm -rf runs/gpu-en-es-model
$py -m training export --run "$run" --out runs/gpu-en-es-model --dtype float16 > runs/gpu-export.log 2>&1 \
  || { tail -n 20 runs/gpu-export.log; exit 1; }
tar czf "$out/model.tar.gz" --exclude=model.safetensors -C runs/gpu-en-es-model .
split -b 15M runs/gpu-en-es-model/model.safetensors "$out/weights.part-"
ls -la "$out"
