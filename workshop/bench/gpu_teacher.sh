#!/usr/bin/env bash
# The wider teacher of workshop/recipes/distilled.toml, within one lent GPU's minutes: train it apart from the shipped
# lineage but on the lineage's split (data.split_from=checkpoints/es-en: it never trains on the lineage's dev or
# test pairs), score it on dev (greedy and beam 4, as written and typed), and translate every training source with
# it at beam 4. The CPU then trains a student of the shipped lineage on those translations
# (python -m workshop student --distilled OUT/distilled.tsv --mix both --init-from checkpoints/es-en …).
#
#   bash workshop/bench/gpu_teacher.sh CORPUS OUT [MINUTES]
#
# MINUTES (default 6) is the teacher's training time; add ~4 for the smoke run, data preparation, scoring and
# distillation (the device tool's 15 minutes include the machine's start). OUT receives distilled.tsv (+ .json:
# the teacher's identity), dev-greedy.json, dev-beam4.json and teacher.tar.gz (logs, configs, metrics, data
# report; the weights stay behind: a d_model 512 model is over the tool's file limit).
# With the device tool: copy the corpus into the (ignored) corpora/ folder here, then run
#   command: bash workshop/bench/gpu_teacher.sh corpora/tatoeba-spa-eng/spa-eng.tsv $OUT 6   carry: ["corpora"]
# (the script puts the corpus where checkpoints/es-en's train_config.json names it, ../shared/data/…, on the device).
# The teacher's run folder is runs/gpu-teacher; a second call refuses to write over it (training.train's own check):
# remove it, or continue it with training.train --resume.
# Dry run on a CPU (the whole path, tiny and short; 2 m 41 s on the 2-core EPYC):
#   TEACHER_SHAPE="--config configs/tiny.toml" DISTILL_LINES=50 DEVICE=cpu \
#     bash workshop/bench/gpu_teacher.sh CORPUS OUT 0.2
set -eu
corpus=$1 out=$2 minutes=${3:-6}
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1
mkdir -p "$out" runs
teacher=runs/gpu-teacher
# d_model 512, 8 heads, 6+6 layers (Transformer base, 48 M parameters), dropout 0.3 for a 120k-pair corpus.
shape=${TEACHER_SHAPE:-"--config configs/small.toml --model.d_model=512 --model.n_heads=8 --model.d_ff=2048
  --model.n_encoder_layers=6 --model.n_decoder_layers=6 --model.dropout=0.3 --optim.max_tokens=16384
  --optim.lr=7e-4 --optim.warmup_steps=800 --run.precision=bf16"}

# data.split_from compares corpus paths: the corpus must stand where the shipped model's training read it.
expected=$($py -c 'import json; print(json.load(open("checkpoints/es-en/train_config.json"))["data"]["corpora"][0])')
if [ ! -e "$expected" ]; then mkdir -p "$(dirname "$expected")" && cp "$corpus" "$expected"; fi

echo "== smoke: 20 tiny steps, then scoring and distillation, on $($py -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU")')"
head -n 3000 "$corpus" > runs/gpu-smoke.tsv
rm -rf runs/gpu-smoke
$py -m training.train --config configs/tiny.toml --corpus runs/gpu-smoke.tsv --out runs/gpu-smoke \
    --optim.max_steps=20 --run.eval_every=10 --run.save_every=10 > runs/gpu-smoke.log 2>&1 \
  && head -n 20 runs/gpu-smoke/splits/train.tsv > runs/gpu-smoke/few.tsv \
  && $py -m workshop distill --teacher runs/gpu-smoke --pairs runs/gpu-smoke/few.tsv --out runs/gpu-smoke/few.out \
      --beam 4 --device "$device" > runs/gpu-smoke-distill.log 2>&1 \
  || { tail -n 30 runs/gpu-smoke.log runs/gpu-smoke-distill.log; echo "smoke run failed"; exit 1; }

echo "== teacher: $minutes minutes"
# shellcheck disable=SC2086  # $shape is a list of options
$py -m training.train $shape --corpus "$expected" --out "$teacher" --data.split_from=checkpoints/es-en \
    --optim.max_steps=1000000 "--optim.max_minutes=$minutes" --run.eval_every=500 --run.save_every=250 \
    > runs/gpu-teacher.log 2>&1 || { tail -n 40 runs/gpu-teacher.log; exit 1; }
grep -E "parameters on|pinned|done:" runs/gpu-teacher.log || true

echo "== dev: greedy and beam 4"
for beam in 1 4; do
  name=$([ "$beam" = 1 ] && echo greedy || echo "beam$beam")
  log=runs/gpu-dev-$name.log
  $py -m training.evaluate --model "$teacher" --pairs "$teacher/splits/dev.tsv" --beam "$beam" --device "$device" \
      --json "$out/dev-$name.json" > "$log" 2>&1 || { tail -n 20 "$log"; echo "dev scoring ($name) failed"; }
  grep -E "^\| (as written|typed)" "$log" || true
done

echo "== distillation: every training source, beam 4"
pairs=$teacher/splits/train.tsv
if [ -n "${DISTILL_LINES:-}" ]; then head -n "$DISTILL_LINES" "$pairs" > runs/gpu-teacher-few.tsv; pairs=runs/gpu-teacher-few.tsv; fi
$py -m workshop distill --teacher "$teacher" --pairs "$pairs" --out "$out/distilled.tsv" --beam 4 --device "$device" \
    --batch-size 256 > runs/gpu-distill.log 2>&1 || { tail -n 20 runs/gpu-distill.log; exit 1; }
wc -l "$out/distilled.tsv"
tar czf "$out/teacher.tar.gz" --exclude='*.safetensors' --exclude='*.pt' --exclude=checkpoints --exclude=averaged \
    --exclude=best runs/gpu-teacher.log runs/gpu-dev-*.log runs/gpu-distill.log "$teacher"
ls -la "$out"
