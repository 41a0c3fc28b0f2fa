"""Shared fixtures: a toy parallel corpus and a tiny model trained on it with the project's own CLI; and the small
builders several test files use (``from conftest import ...``): a tiny model config, one sentence's maps."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from lab.attention.sentence_maps import SentenceMaps
from lab.page import model_choices
from model.attention_maps import AttentionMaps
from model.config import ModelConfig
from translate.translator import DEFAULT_MODEL
from workshop.bench.app_server import CHROMIUM, CHROMIUM_ARGS, running_app

BROWSER_MARKS = [  # a test file driving the app in Chromium: slow, and skipped where Chromium is missing
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's Chromium is not installed: apt-get install -y chromium"),
]
APP = str(Path(__file__).resolve().parents[1] / "app.py")
PATIENCE_MS = 120_000  # generous: a loaded 2-core machine is slow to start Chromium and the app's first run
RUNNING = """() => !document.querySelector('[data-testid="stStatusWidget"]')?.innerText.includes('Running')"""


@contextmanager
def browser_page(viewport: dict[str, int]) -> Iterator[tuple[Any, list[str]]]:
    """A page of headless Chromium (Playwright's Page) of ``viewport``'s size and the list of the JavaScript errors
    it raises; the browser closed afterwards. The test is skipped where Playwright is missing."""
    sync_api = pytest.importorskip("playwright.sync_api")
    errors: list[str] = []
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=viewport)
            page.on("pageerror", lambda error: errors.append(str(error)))
            yield page, errors
        finally:
            browser.close()


def idle(page: Any) -> None:
    """Wait until the app has finished the script run an action started: a widget redrawn under a click is lost."""
    time.sleep(0.5)  # let the rerun begin
    page.wait_for_function(RUNNING, timeout=PATIENCE_MS)


@contextmanager
def lab_app(model_dir: Path, tmp_path: Path, timeout: float) -> Iterator[str]:
    """``streamlit run app.py`` on a free local port with ``model_dir`` as the default model, an empty runs folder
    and one thread; its URL, and the app stopped afterwards."""
    env = dict(
        os.environ,
        LAB_MODEL_DIR=str(model_dir),
        LAB_RUNS_DIR=str(tmp_path / "runs"),
        LAB_THREADS="1",
        OMP_NUM_THREADS="1",
    )
    with running_app(env, tmp_path / "streamlit.log", timeout=timeout) as url:
        yield url


@pytest.fixture
def app_url(tiny_model_dir: Path, tmp_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` with the tiny (Spanish → English) model as the default and an empty runs folder."""
    with lab_app(tiny_model_dir, tmp_path, timeout=60) as url:
        yield url


@pytest.fixture
def shipped_app_url(tmp_path: Path) -> Iterator[str]:
    """``streamlit run app.py`` with the shipped model (its first screen opens on the first guided example)."""
    if not (DEFAULT_MODEL / "model.safetensors").exists():
        pytest.skip("the shipped model is not in checkpoints/")
    env = {k: v for k, v in os.environ.items() if k != "LAB_MODEL_DIR"}
    env |= {"LAB_RUNS_DIR": str(tmp_path / "runs"), "LAB_THREADS": "1", "OMP_NUM_THREADS": "1"}
    with running_app(env, tmp_path / "streamlit.log", timeout=60) as url:
        yield url


def translate(at: AppTest, text: str) -> AppTest:
    """``text`` typed into the Translate page's box and translated, in the session ``at`` holds; no exception."""
    at.text_area(key="source").set_value(text)
    at.button(key="translate").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def translated(text: str, view: str = "", timeout: float = 60) -> AppTest:
    """The Translate page (AppTest) after translating ``text``, with the view named ``view`` open; no exception."""
    at = translate(AppTest.from_file(APP, default_timeout=timeout).run(), text)
    if view:
        at.session_state["view"] = view
        at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def tiny_config(**changes: object) -> ModelConfig:
    """A model small enough to build in milliseconds (2+2 layers, d_model 32, 4 heads), with ``changes``."""
    base = ModelConfig(
        src_vocab_size=40,
        tgt_vocab_size=40,
        d_model=32,
        n_heads=4,
        d_ff=64,
        n_encoder_layers=2,
        n_decoder_layers=2,
        dropout=0.0,
        max_positions=64,
    )
    return dataclasses.replace(base, **changes)


def unpadded_maps(
    encoder: np.ndarray, decoder: np.ndarray, cross: np.ndarray, src: list[str], tgt_in: list[str], tgt_out: list[str]
) -> SentenceMaps:
    """One unpadded sentence's maps: </s> and <s> are the special tokens, nothing is padding (the ids are
    positions: the lab reads labels, not ids)."""
    ids = [list(range(len(tokens))) for tokens in (src, tgt_in, tgt_out)]
    weights = (torch.from_numpy(np.asarray(w)) for w in (encoder, decoder, cross))
    return SentenceMaps(
        maps=AttentionMaps(*weights, *ids),
        src=src,
        tgt_in=tgt_in,
        tgt_out=tgt_out,
        src_special=[p == "</s>" for p in src],
        tgt_in_special=[p == "<s>" for p in tgt_in],
        tgt_out_special=[p == "</s>" for p in tgt_out],
        src_pad=[False] * len(src),
        tgt_in_pad=[False] * len(tgt_in),
    )


COLOURS = {"rojo": "red", "azul": "blue", "verde": "green", "negro": "black", "blanco": "white"}
NOUNS = {"gato": "cat", "perro": "dog", "libro": "book", "coche": "car", "árbol": "tree"}


def toy_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """Templated Spanish–English pairs a tiny model can learn in seconds ("El gato rojo." -> "The red cat.")."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        noun, colour = rng.choice(list(NOUNS)), rng.choice(list(COLOURS))
        number = i % 20
        pairs.append((f"El {noun} {colour} {number}.", f"The {COLOURS[colour]} {NOUNS[noun]} {number}."))
    return pairs


def write_tsv(path: Path, pairs: list[tuple[str, str]]) -> Path:
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    return path


@pytest.fixture(autouse=True, scope="session")
def _one_thread() -> None:
    """Tests are small; one thread avoids oversubscribing the 2-core CI machine."""
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def toy_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tsv(tmp_path_factory.mktemp("corpus") / "toy.tsv", toy_pairs(400))


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory, toy_corpus: Path) -> Path:
    """A run directory (also a model directory) of a tiny model trained by ``python -m training.train``."""
    from training.train import main

    out = tmp_path_factory.mktemp("runs") / "tiny"
    rc = main(
        [
            "--config",
            "configs/tiny.toml",
            "--corpus",
            str(toy_corpus),
            "--out",
            str(out),
            "--optim.max_steps=300",
            "--run.eval_every=150",
        ]
    )
    assert rc == 0
    return out


@pytest.fixture
def model_env(monkeypatch: pytest.MonkeyPatch, tiny_model_dir: Path, tmp_path: Path) -> Path:
    """Point the app at the tiny model (as the shipped default), an empty runs folder and one thread (AppTests)."""
    monkeypatch.setenv("LAB_MODEL_DIR", str(tiny_model_dir))
    monkeypatch.setenv("LAB_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("LAB_THREADS", "1")
    alone(monkeypatch, tmp_path)
    return tiny_model_dir


def alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The page's shipped model is LAB_MODEL_DIR's alone: checkpoints/'s model of the other direction not listed."""
    monkeypatch.setattr(model_choices, "SHIPPED_DIR", tmp_path / "no-other-shipped-models")


RAW_WORDS = re.compile(r"\b(?:None|nan|NaN)\b|\b(?:optim|data)\.[a-z_]+")  # Python's words, and config keys
TEXT_ELEMENTS = ("title", "header", "subheader", "markdown", "caption", "text", "code", "info", "warning", "error")
WIDGETS = ("button", "download_button", "toggle", "checkbox", "radio", "selectbox", "multiselect", "select_slider")
WIDGETS += ("slider", "number_input", "text_input", "text_area", "file_uploader", "tab", "expandable")


def shown_texts(at: AppTest) -> list[str]:
    """Every string the page shows its reader: text elements, the labels, options and help of widgets, metrics,
    progress bars and the cells and headers of tables (a widget's value is the reader's own, not read)."""
    texts = [str(e.value) for kind in (*TEXT_ELEMENTS, "success") for e in at.get(kind)]
    for kind in WIDGETS:
        for e in at.get(kind):
            texts += [str(getattr(e, name, "") or "") for name in ("label", "help", "placeholder")]
            texts += [str(option) for option in getattr(e, "options", ())]
    texts += [f"{m.label} {m.value} {m.proto.delta}" for m in at.get("metric")] + [
        p.proto.text for p in at.get("progress")
    ]
    for table in at.get("dataframe"):
        texts += [str(c) for c in table.value.columns] + [str(v) for v in table.value.to_numpy().ravel()]
    return texts


def raw_words(at: AppTest) -> list[str]:
    """The texts of the page that print a Python None or nan, or name a configuration key, where words belong."""
    return [text for text in shown_texts(at) if RAW_WORDS.search(text)]
