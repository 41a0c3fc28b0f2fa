"""A model's dev and test pairs as corpus positions: read back exactly, the shipped model's included, and a corpus
file that changed is refused."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from data.corpus import CorpusError
from data.split_record import SPLIT_RECORD_FILE, read_record
from model.run_dir import DATA_REPORT_FILE, SPLITS_DIR
from training.prepare import model_data, model_split, split_fingerprint
from translate.translator import DEFAULT_MODEL


def test_a_model_folder_without_splits_reads_them_back_from_its_record(tmp_path: Path, tiny_model_dir: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny_model_dir, folder, ignore=shutil.ignore_patterns(SPLITS_DIR))
    assert "Tom" not in (folder / SPLIT_RECORD_FILE).read_text()  # positions only, no corpus text
    again, run = model_split(folder), model_split(tiny_model_dir)
    assert again.dev == run.dev and again.test == run.test
    assert sorted((p.src, p.tgt) for p in again.train) == sorted((p.src, p.tgt) for p in run.train)  # corpus order


def test_a_changed_corpus_file_is_refused_naming_it(tmp_path: Path, tiny_model_dir: Path) -> None:
    data = model_data(tiny_model_dir)
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text(Path(data.corpora[0]).read_text() + "Hola.\tHello.\n")
    changed = data.__class__(**{**data.__dict__, "corpora": (str(corpus),)})
    with pytest.raises(CorpusError, match=f"{corpus}: not the corpus file the model was trained on"):
        read_record(tiny_model_dir, changed)


@pytest.mark.skipif(not (DEFAULT_MODEL / SPLIT_RECORD_FILE).is_file(), reason="no shipped split record")
def test_the_shipped_models_dev_and_test_are_the_ones_it_was_scored_on() -> None:
    data = model_data(DEFAULT_MODEL)
    if not Path(data.corpora[0]).is_file():
        pytest.skip(f"{data.corpora[0]}: the corpus is not here")
    expected = json.loads((DEFAULT_MODEL / DATA_REPORT_FILE).read_text())["sha256"]
    dev, test = read_record(DEFAULT_MODEL, data)
    assert split_fingerprint(dev) == expected["dev"] and split_fingerprint(test) == expected["test"]
