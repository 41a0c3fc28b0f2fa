"""The layout of a run directory, which is also a model directory: every file name, in one place.

Inference needs only the first three entries (config, weights, tokenizer); training writes the rest beside
them, and the app's Train page reads them. ``model/weights``, ``training/`` and ``jobs/control`` all name files
through this module, so a file is renamed here or nowhere.
"""

from __future__ import annotations

from pathlib import Path

# What inference reads (a model directory).
CONFIG_FILE = "config.json"  # ModelConfig
WEIGHTS_FILE = "model.safetensors"
JOINT_TOKENIZER_FILE = "spm.model"  # one SentencePiece model for both languages, or the two below
SRC_TOKENIZER_FILE = "spm.src.model"
TGT_TOKENIZER_FILE = "spm.tgt.model"
MODEL_CARD_FILE = "MODEL_CARD.md"
NAME_GUARD_FILE = "name_guard.json"  # the name guard's word counts, lists and stand-ins (translate/name_guard.py)
ALIGNMENT_FILE = "alignment.json"  # figures on gold alignments (workshop bench alignment --save)
CT2_DIR = "ctranslate2"  # its CTranslate2 export (python -m workshop ct2-export)
NEIGHBOURS_INDEX_FILE = "sentence_index.npz"  # the neighbours view's index of the training pairs (lab/neighbours)
DOUBT_FILE = "doubt.json"  # the page's unsure threshold and how often it is right, on the dev split (bench uncertainty)
WORD_CONFIDENCE_FILE = "word_confidence.json"  # how often words of each shade were wrong on dev (bench word_confidence)

# What training writes beside it (a run directory).
TRAIN_CONFIG_FILE = "train_config.json"  # TrainConfig: what --resume and workshop.bench.quality rebuild from
DATA_REPORT_FILE = "data_report.json"  # pairs read, kept, skipped by reason; split sizes and sha256
SPLIT_RECORD_FILE = "split.json"  # dev and test pairs as corpus positions, with the corpus sha256
SPLITS_DIR = "splits"  # train.tsv, dev.tsv, test.tsv
TRAIN_LINKS_FILE = "train.align"  # in splits/, guided alignment: eflomal's piece links, a Pharaoh line per pair
METRICS_LOG_FILE = "metrics.jsonl"  # one record per line, "kind" is one of the two below
EVALUATING_FILE = "evaluating.json"  # while a dev evaluation runs: its step and how far (the Train page shows it)
TRAIN_RECORD, EVAL_RECORD = "train", "eval"
RESULT_FILE = "metrics.json"  # written when training has finished and the test split is scored
TEST_HYPOTHESES_FILE = "test.hyp"
STATE_FILE = "train_state.pt"  # optimizer, progress and RNG: what --resume continues from
SNAPSHOTS_DIR = "checkpoints"  # step-N snapshots for averaging
BEST_DIR, AVERAGED_DIR = "best", "averaged"  # the two candidates for the final model

# What the app's job control adds.
JOB_LOG_FILE = "train.log"  # the background job's stdout and stderr
JOB_EVENTS_FILE = "job.jsonl"  # start / stop / exit events
RUN_LOCK_FILE = "run.lock"  # the one writer's flock and name (training/run_lock.py)
CORPUS_FILE = "corpus.tsv"  # the checked pairs the page stages, as the run trains on them (jobs/corpus_check.py)
CORPUS_CHECK_FILE = "corpus_check.json"  # and the check beside them
ESTIMATE_FILE = "estimate.json"  # the estimate shown when the run was started (jobs/estimate.py)
STOPPED_SCORES_FILE = "stopped_scores.json"  # the test scores of a stopped run's best checkpoint (jobs/run_verdict.py)
PROBES_DIR = "probes"  # tokens.json and one step-N.npz per dev evaluation (training/probes.py)
REFERENCES_FILE = "reference_points.json"  # the run beside the shipped model and a floor (training/reference_points.py)

# Everything a model directory may hold, as export, average and deepen write it (training/outputs.py): a folder
# holding anything else (a run's state, someone's files) is never replaced by one.
MODEL_DIR_NAMES = frozenset(
    {CONFIG_FILE, WEIGHTS_FILE, JOINT_TOKENIZER_FILE, SRC_TOKENIZER_FILE, TGT_TOKENIZER_FILE, MODEL_CARD_FILE}
    | {ALIGNMENT_FILE, CT2_DIR, NEIGHBOURS_INDEX_FILE, TRAIN_CONFIG_FILE, DATA_REPORT_FILE, SPLIT_RECORD_FILE}
    | {RESULT_FILE, SPLITS_DIR, NAME_GUARD_FILE, DOUBT_FILE, WORD_CONFIDENCE_FILE}
)
# Everything a run directory may hold: a new run (training --out) goes only into a folder holding nothing else; each
# a regular file but these folders, and none a link (training/outputs.py).
RUN_FOLDERS = frozenset({SPLITS_DIR, SNAPSHOTS_DIR, BEST_DIR, AVERAGED_DIR, CT2_DIR, PROBES_DIR})
RUN_DIR_NAMES = MODEL_DIR_NAMES | {
    *(METRICS_LOG_FILE, EVALUATING_FILE, TEST_HYPOTHESES_FILE, STATE_FILE, SNAPSHOTS_DIR, BEST_DIR, AVERAGED_DIR),
    *(JOB_LOG_FILE, JOB_EVENTS_FILE, RUN_LOCK_FILE, CORPUS_FILE, CORPUS_CHECK_FILE, ESTIMATE_FILE),
    *(STOPPED_SCORES_FILE, PROBES_DIR, REFERENCES_FILE),
}


def split_file(run_dir: Path, name: str) -> Path:
    """``splits/{train,dev,test}.tsv`` of a run."""
    return Path(run_dir) / SPLITS_DIR / f"{name}.tsv"


def train_links_file(run_dir: Path) -> Path:
    """``splits/train.align`` of a run (guided alignment)."""
    return Path(run_dir) / SPLITS_DIR / TRAIN_LINKS_FILE
