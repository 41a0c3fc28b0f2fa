"""The model shipped in checkpoints/es-en: loads offline, translates what people type, card is complete."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from data.case_markup import MARK
from training.phrases import Phrase, is_accepted, read_phrases, score_phrases
from training.train import parent_shape, parse_args
from training.train_config import load_train_config
from translate.settings import REPO_ROOT
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator
from workshop.everyday import everyday_list

# Simple sentences and English answers the shipped model must give (greedy and beam 4), compared after
# normalising case and punctuation (training/phrases.py), with the alternatives a translator would accept.
EXPECTED = {
    "Tengo hambre.": ("I'm hungry", "I am hungry"),
    "El gato duerme en la casa.": ("The cat sleeps in the house", "The cat is sleeping in the house"),
    "¿Dónde está la estación de tren?": ("Where's the train station", "Where is the train station"),
    "No sé lo que quieres decir.": ("I don't know what you mean", "I don't know what you want to say"),
    "Tom es mi amigo.": ("Tom is my friend",),
    "Hace frío hoy.": ("It's cold today", "It is cold today"),
    "Me gusta leer libros.": ("I like reading books", "I like to read books"),
}
HELLO_WORLD = ("Hello world", "Hi world")  # the product's headline example, however it is typed


@pytest.fixture(scope="module")
def translator() -> Translator:
    return Translator.load(DEFAULT_MODEL)


def test_the_shipped_model_is_complete_and_small() -> None:
    names = {p.name for p in DEFAULT_MODEL.iterdir()}
    assert {"config.json", "model.safetensors", "spm.model", "metrics.json", "MODEL_CARD.md"} <= names
    assert sum(p.stat().st_size for p in DEFAULT_MODEL.iterdir()) < 50_000_000
    card = (DEFAULT_MODEL / "MODEL_CARD.md").read_text(encoding="utf-8")
    for needed in ("CC BY 2.0 FR", "Tatoeba", "nrefs:1|case:mixed|eff:no|tok:13a", "python -m training.train"):
        assert needed in card
    metrics = json.loads((DEFAULT_MODEL / "metrics.json").read_text())
    clean, typed = metrics["test_greedy"]["bleu"], metrics["test_greedy_typed"]["bleu"]
    assert clean >= 50 and typed >= clean - 4  # what the model card claims: typed input is handled too


def test_no_shipped_file_names_a_path_of_the_machine_that_made_it() -> None:
    """A shipped file is shown on every server: it names folders relative to the repository (sentence_index.npz
    stored the build machine's absolute path, and the page showed it)."""
    machine = [str(REPO_ROOT).encode(), b"/home/", b"/Users/"]
    for path in sorted(p for p in (REPO_ROOT / "checkpoints").rglob("*") if p.is_file()):
        if path.suffix == ".npz":
            with np.load(path, allow_pickle=False) as members:
                contents = [members[name].tobytes() for name in members.files]
        else:
            contents = [path.read_bytes()]
        assert not [m for m in machine for content in contents if m in content], path


def test_loading_and_translating_never_touch_the_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the shipped model tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    translation = Translator.load(DEFAULT_MODEL).translate("Hola mundo")
    assert translation.text


@pytest.mark.parametrize(
    "typed",
    [
        "¡Hola, mundo!",
        "Hola, mundo.",
        "Hola mundo",  # read as "hola⇧ mundo" (case markup), not "▁Hol" + "a"
        "Hola mundo.",
        "hola mundo",  # the first word is read with a capital (sentence_case)
        "hola mundo!",
    ],
)
def test_hello_world_however_it_is_typed(translator: Translator, typed: str) -> None:
    assert is_accepted(translator.translate(typed).text, Phrase(typed, HELLO_WORLD, 0))


@pytest.mark.parametrize(("spanish", "answers"), sorted(EXPECTED.items()))
def test_simple_sentences_translate_right(translator: Translator, spanish: str, answers: tuple[str, ...]) -> None:
    assert is_accepted(translator.translate(spanish).text, Phrase(spanish, answers, 0))


def test_beam_search_keeps_the_simple_sentences(translator: Translator) -> None:
    results = translator.translate_batch(list(EXPECTED), DecodeOptions(beam_size=4))
    for (spanish, answers), result in zip(EXPECTED.items(), results, strict=True):
        assert is_accepted(result.text, Phrase(spanish, answers, 0)), (spanish, result.text)


def everyday_share(translator: Translator) -> tuple[float, list[tuple[str, str]]]:
    """Share of the everyday phrases (data/everyday-es-en.tsv) accepted, and the misses."""
    result = score_phrases(translator, read_phrases(everyday_list(DEFAULT_MODEL)))
    return result["share"], [(r["source"], r["translation"]) for r in result["rows"] if not r["accepted"]]


def test_the_everyday_phrases_are_at_least_90_percent_right(translator: Translator) -> None:
    """The goal set for the shipped model, met since v10 (60/66); the misses are in its MODEL_CARD.md."""
    share, wrong = everyday_share(translator)
    assert share >= 0.9, wrong


def test_no_output_runs_on_without_final_punctuation(translator: Translator) -> None:
    """Without a final period the model must still stop ("I need help help help." is a loop): outputs stay short."""
    for spanish in ("Necesito ayuda", "Está lloviendo", "te quiero", "buenos dias"):
        result = translator.translate(spanish)
        assert not result.best.truncated
        assert len(result.text.split()) <= 2 * len(spanish.split()) + 2, result.text


def test_the_shipped_model_reads_capitals_as_lowercase_with_a_mark(translator: Translator) -> None:
    """Case markup: "Hola" is "▁hola" plus ⇧, not "▁Hol" + "a" (the start of "Holanda")."""
    tok = translator.tokenizer
    assert tok.case_markup
    for text in ("Hola mundo", "¿Dónde está Tom?", "Buenos días"):
        marked, lower = tok.src_pieces(tok.encode_src(text)), tok.src_pieces(tok.encode_src(text.lower()))
        assert [p for p in marked if p != MARK] == [p for p in lower if p != MARK] and MARK in marked
    assert tok.encode_src("hola mundo") == tok.encode_src("Hola mundo")  # a text's first word reads as capitalised


def test_a_sentence_typed_in_capitals_translates_as_in_sentence_case(translator: Translator) -> None:
    """ "HOLA MUNDO" gave "Inha, MNAAA." when read as acronym pieces; it is read as "Hola mundo" (case markup)."""
    for text in ("Hola mundo", "¿Dónde está el baño?", "Necesito ayuda"):
        assert translator.tokenizer.encode_src(text.upper()) == translator.tokenizer.encode_src(text)
    assert is_accepted(translator.translate("HOLA MUNDO").text, Phrase("HOLA MUNDO", HELLO_WORLD, 0))


def test_the_default_preset_can_fine_tune_the_shipped_model(translator: Translator) -> None:
    """README's `python -m training.train --init-from checkpoints/es-en --corpus my.tsv`: the default preset reads
    the source as the shipped model does (else this stops with a config error before training)."""
    args, _ = parse_args(["--out", "unused"])
    config = load_train_config(Path(__file__).resolve().parent.parent / args.config)
    assert config.data.case_markup == translator.tokenizer.case_markup
    assert parent_shape(DEFAULT_MODEL, [], config.data.case_markup) == translator.model.config


@pytest.mark.parametrize(
    ("spanish", "kept"),
    [
        ("Me llamo Ana y vivo en Sevilla.", ("Ana", "Sevilla")),
        ("me llamo ana y vivo en sevilla", ("Ana", "Sevilla")),
        ("¿Conoces a Beatriz?", ("Beatriz",)),
        ("Pablo tiene muchos gatos.", ("Pablo",)),
        ("Mi número es 91 234 56 78.", ("91 234 56 78",)),
    ],
)
def test_the_name_guard_carries_names_places_and_numbers(translator: Translator, spanish: str, kept: tuple) -> None:
    """The shipped model alone turns "Ana" into "coming"; under its guard (name_guard.json beside it) the name is
    read as a stand-in it copies and put back."""
    result = translator.translate(spanish)
    assert result.guarded is not None and all(word in result.text for word in kept), result.text
    assert translator.translate("Me llamo Ana.", DecodeOptions(name_guard=False)).guarded is None


def test_the_guard_costs_no_everyday_phrase(translator: Translator) -> None:
    phrases = read_phrases(everyday_list(DEFAULT_MODEL))
    on, off = (score_phrases(translator, phrases, DecodeOptions(name_guard=g))["accepted"] for g in (True, False))
    assert on >= off


def test_the_readme_and_the_small_preset_name_their_layers_truly() -> None:
    """The small preset is 4+3 layers, the shipped model 8+3: neither the README nor the preset calls one the
    other's shape."""
    root = Path(__file__).resolve().parent.parent
    small = load_train_config(root / "configs" / "small.toml").model
    shipped = Translator.load(DEFAULT_MODEL).model.config
    layers = (
        f"{small.n_encoder_layers}+{small.n_decoder_layers}",
        f"{shipped.n_encoder_layers}+{shipped.n_decoder_layers}",
    )
    assert layers == ("4+3", "8+3")
    readme, preset = (root / "README.md").read_text(), (root / "configs" / "small.toml").read_text()
    assert "the shipped model's shape" not in readme and "shipped shape" not in readme
    assert "4+3 layers" in readme and "8+3" in readme and "4+3-layer model" in preset and "(8+3)" in preset


# --- the English → Spanish model, checkpoints/en-es ---

EN_ES = DEFAULT_MODEL.parent / "en-es"
EXPECTED_EN_ES = {
    "Where is the station?": ("¿Dónde está la estación?",),
    "I'm hungry.": ("Tengo hambre", "Estoy hambriento", "Estoy hambrienta"),
    "I have a black cat.": ("Tengo un gato negro", "Yo tengo un gato negro"),
}


@pytest.fixture(scope="module")
def en_es() -> Translator:
    if not (EN_ES / "model.safetensors").is_file():
        pytest.skip(f"{EN_ES} is not shipped")
    return Translator.load(EN_ES)


def test_the_english_to_spanish_model_is_complete_and_says_its_known_misses() -> None:
    if not EN_ES.is_dir():
        pytest.skip(f"{EN_ES} is not shipped")
    names = {p.name for p in EN_ES.iterdir()}
    assert {
        "config.json",
        "model.safetensors",
        "spm.model",
        "metrics.json",
        "MODEL_CARD.md",
        "name_guard.json",
    } <= names
    card = (EN_ES / "MODEL_CARD.md").read_text(encoding="utf-8")
    for needed in ("CC BY 2.0 FR", "Tatoeba", "nrefs:1|case:mixed|eff:no|tok:13a", "Hello world", "Hola el mundo"):
        assert needed in card


@pytest.mark.parametrize(("english", "answers"), EXPECTED_EN_ES.items())
def test_the_english_to_spanish_model_translates_simple_sentences(en_es: Translator, english: str, answers) -> None:
    assert is_accepted(en_es.translate(english).text, Phrase(english, answers, 0)), en_es.translate(english).text


def test_the_english_to_spanish_everyday_phrases_are_at_least_80_percent_right(en_es: Translator) -> None:
    """Issue 64's shipping rule; the misses are in its MODEL_CARD.md ("Hello world" → "Hola el mundo." among them)."""
    result = score_phrases(en_es, read_phrases(everyday_list(EN_ES)))
    assert result["share"] >= 0.8, [(r["source"], r["translation"]) for r in result["rows"] if not r["accepted"]]


def test_the_english_guard_carries_names_and_places(en_es: Translator) -> None:
    result = en_es.translate("My name is Ana and I live in Seville.")
    assert (
        result.guarded is not None and "Ana" in result.text and ("Seville" in result.text or "Sevilla" in result.text)
    )
