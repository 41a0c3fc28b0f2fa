"""Find the bad translations: lines read and bounded, ranked by the model's own confidence, scored as
``training.evaluate`` scores them, and the tab on the page (AppTest, tiny model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sacrebleu
import torch
from conftest import APP
from streamlit.proto.WidgetStates_pb2 import WidgetState
from streamlit.testing.v1 import AppTest
from streamlit.testing.v1.element_tree import Dataframe

from data.readers import read_tsv
from lab.attention.translate_with_maps import maps_of
from lab.ranking import (
    MAX_BYTES,
    MAX_LINES,
    MAX_WORK,
    THRESHOLD,
    Line,
    LinesError,
    corpus_scores,
    dev_lines,
    low_coverage,
    mean_log_prob,
    rank,
    read_lines,
    read_upload,
    word_totals,
)
from model.run_dir import split_file
from training.evaluate import score
from translate.translator import DEFAULT_MODEL, DecodeOptions, Translator

TAB = "Find the bad translations"


def test_lines_with_and_without_reference_blank_lines_skipped() -> None:
    lines = read_lines("Hola.\tHello.\n\n  \nAdiós.\n", "pasted")
    assert lines == [Line(1, "Hola.", "Hello."), Line(4, "Adiós.", None)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Hola.\nuno\tdos\ttres\n", "pasted:2: expected a sentence or sentence<TAB>reference"),
        ("\tHello.\n", "pasted:1: expected"),
        ("x\n" * (MAX_LINES + 1), f"pasted: {MAX_LINES + 1} lines; at most {MAX_LINES}"),
    ],
)
def test_bad_lines_are_refused_with_the_line_or_the_limit(text: str, message: str) -> None:
    with pytest.raises(LinesError, match=message):
        read_lines(text, "pasted")


def test_upload_must_be_small_utf8() -> None:
    assert read_upload("\ufeffHola.\n".encode(), "a.txt") == [Line(1, "Hola.", None)]  # a BOM is not text
    with pytest.raises(LinesError, match=r"a.txt: not UTF-8 text \(byte 4\)"):
        read_upload(b"Hola\xff\n", "a.txt")
    with pytest.raises(LinesError, match=f"at most {MAX_BYTES:,}"):
        read_upload(b"x" * (MAX_BYTES + 1), "a.txt")


def test_ranked_scores_equal_evaluate_and_the_model(tiny_model_dir: Path) -> None:
    """Corpus BLEU/chrF equal ``training.evaluate.score``'s on the same pairs; confidence is the model's own mean
    log-probability of its output, recomputed by a teacher-forced pass; the table is least confident first."""
    translator = Translator.load(tiny_model_dir)
    pairs = read_tsv(split_file(tiny_model_dir, "dev"))[:40]
    lines = [Line(i, p.src, p.tgt) for i, p in enumerate(pairs, 1)] + [Line(99, "El gato rojo 3.", None)]
    done: list[int] = []
    ranked = rank(translator, lines, progress=done.append)
    assert done[-1] == len(lines) and done == sorted(done)
    assert [r.confidence for r in ranked] == sorted(r.confidence for r in ranked)
    expected = score(translator, pairs)
    assert corpus_scores(ranked) == {"bleu": expected["bleu"], "chrf": expected["chrf"], "sentences": len(pairs)}
    by_line = {r.line.number: r for r in ranked}
    assert by_line[99].chrf is None
    for r in ranked:
        assert 0.0 <= r.low_coverage <= 1.0
        if r.line.reference is not None:
            assert r.chrf == sacrebleu.metrics.CHRF().sentence_score(r.translation, [r.line.reference]).score
    worst = ranked[0]
    result = translator.translate(worst.line.source)
    tokens = result.best.tokens
    c = translator.model.config
    with torch.inference_mode():
        logits = translator.model(torch.tensor([result.src_ids]), torch.tensor([[c.bos_id, *tokens[:-1]]]))
    log_probs = logits.log_softmax(-1)[0, torch.arange(len(tokens)), torch.tensor(tokens)]
    assert worst.confidence == pytest.approx(float(log_probs.mean()), abs=1e-4)


def test_coverage_totals_account_for_every_output_row(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    result = translator.translate("El gato rojo 3.")
    maps = maps_of(translator, result.src_ids, result.best.tokens)
    words, totals = word_totals(maps, 0)
    eos_total = float(maps.cross[0].mean(0)[:, -1].sum())  # each output row spends 1 over the source, EOS included
    assert float(totals.sum()) + eos_total == pytest.approx(len(maps.tgt_out), abs=1e-4)
    assert "gato" in words and "</s>" not in words and len(words) == len(totals)
    last, low = word_totals(maps, maps.n_layers("cross") - 1)[1], low_coverage(translator, result)
    assert low == pytest.approx(float((last < THRESHOLD).mean()))


def test_a_ranking_over_the_work_budget_is_refused_before_any_decoding(tiny_model_dir: Path) -> None:
    translator = Translator.load(tiny_model_dir)
    line = Line(1, "El gato rojo 3.", None)
    per_line = len(translator.tokenizer.encode_src(line.source))
    fits = [line] * (MAX_WORK // (per_line * 8))
    assert len(rank(translator, fits, DecodeOptions(beam_size=8))) == len(fits)
    decoded: list[int] = []
    translator.translate_all = lambda texts, *args, **kwargs: decoded.append(len(texts))  # a call would be seen
    with pytest.raises(LinesError, match=rf"at beam size 8: at most {MAX_WORK:,} subwords × beam size"):
        rank(translator, [*fits, line], DecodeOptions(beam_size=8))
    assert not decoded  # refused before any decoding


ORDINARY = (  # 50 Tatoeba-like Spanish lines written for this test, a few names among them
    "Tom está leyendo un libro en la cocina.",
    "Mary quiere aprender a nadar este verano.",
    "¿Dónde está la estación de tren?",
    "No tengo tiempo para eso ahora.",
    "Mi hermana trabaja en un hospital.",
    "Hace mucho frío esta mañana.",
    "¿Puedes ayudarme con los deberes?",
    "El perro duerme debajo de la mesa.",
    "Me gustaría un vaso de agua, por favor.",
    "Tom no sabe conducir.",
    "Nos vemos mañana por la tarde.",
    "Ella siempre llega tarde a clase.",
    "¿Cuánto cuesta este libro?",
    "Estoy muy cansado hoy.",
    "Los niños están jugando en el jardín.",
    "Mi padre lee el periódico todas las mañanas.",
    "Tom y Mary se casaron el año pasado.",
    "No entiendo lo que dices.",
    "¿Te gusta la música clásica?",
    "Hay tres manzanas en la mesa.",
    "Ayer fuimos al cine con María.",
    "Tengo que irme ahora.",
    "La reunión empieza a las nueve.",
    "Juan vive en Madrid desde hace diez años.",
    "¿Por qué no viniste a la fiesta?",
    "Este coche es demasiado caro.",
    "Me duele la cabeza.",
    "Ella habla tres idiomas.",
    "Tom compró un regalo para su madre.",
    "Quiero viajar por todo el mundo.",
    "El tren sale a las ocho.",
    "¿Has comido ya?",
    "Mi casa está cerca del río.",
    "No me gusta el café sin azúcar.",
    "Tom perdió las llaves otra vez.",
    "La ventana está abierta.",
    "¿Qué hora es?",
    "Mañana va a llover.",
    "Estudio español desde hace dos años.",
    "Mary tiene un gato negro.",
    "Necesito comprar pan y leche.",
    "Mi abuelo tiene ochenta años.",
    "¿Sabes nadar?",
    "Ellos viven en una casa grande.",
    "Tom es mayor que yo.",
    "Me encanta leer antes de dormir.",
    "La tienda cierra a las seis.",
    "¿Quién escribió este libro?",
    "Pedro y Ana van a la playa cada domingo.",
    "Olvidé mi paraguas en el autobús.",
)
GARBAGE = (  # random letters, English, German, word salad, symbols
    "Kemubc Rdlsbq vtoelp zuaqr wyhn.",
    "I would like to know where the nearest bank is.",
    "Ich habe gestern meinen alten Freund getroffen.",
    "perro lentamente cuchara nube debajo rápidamente zapato.",
    "%% ## @@ !! ** && ^^",
)


def test_with_the_guard_on_garbage_ranks_below_every_ordinary_line() -> None:
    """On the shipped model, guard on: the five garbage lines rank 1–5 of 55 (the guard reads random letters as
    "Tom." and the model copies them with confidence: as typed it is lost); a row the guard changed says what it
    read and scores no better than the line as typed."""
    translator = Translator.load(DEFAULT_MODEL)
    lines = [Line(i, text, None) for i, text in enumerate(ORDINARY + GARBAGE, 1)]
    ranked = rank(translator, lines, DecodeOptions(name_guard=True))
    assert {r.line.source for r in ranked[: len(GARBAGE)]} == set(GARBAGE)
    changed = [r for r in ranked if r.read_as]
    assert changed and all(r.read_as == translator.translate(r.line.source).guarded.read_as for r in changed)
    alone = translator.translate_all([r.line.source for r in changed], DecodeOptions(name_guard=False))
    assert all(r.confidence <= mean_log_prob(t) + 1e-4 for r, t in zip(changed, alone, strict=True))  # padding aside


def test_dev_lines_are_bounded(tiny_model_dir: Path, tmp_path: Path) -> None:
    lines, total = dev_lines(tiny_model_dir)
    assert total == len(read_tsv(split_file(tiny_model_dir, "dev"))) and len(lines) == min(total, MAX_LINES)
    assert dev_lines(tmp_path) is None


def open_tab(model_env: Path) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.session_state["view"] = TAB
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def select_row(at: AppTest, table: Dataframe, row: int) -> None:
    """Run the app as after a click on ``row``: AppTest has no way to select a table row, so the test sends the
    widget state the browser sends (the table's id, its selection as JSON) beside the other widgets'."""
    states = at._tree.get_widget_states()
    selection = {"selection": {"rows": [row], "columns": [], "cells": []}}
    states.widgets.append(WidgetState(id=table.proto.id, string_value=json.dumps(selection)))
    at._tree._runner._run(states)


def test_tab_ranks_pasted_lines_and_a_row_opens_in_the_lab(model_env: Path) -> None:
    at = open_tab(model_env)
    at.text_area(key="ranking_text").set_value("El gato rojo 3.\tThe red cat 3.\nEl perro azul 7.\nxyz qq\n").run()
    at.button(key="ranking_run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    (table,) = at.dataframe
    frame = table.value
    assert len(frame) == 3 and list(frame["confidence"]) == sorted(frame["confidence"])
    assert (frame["chrF"] != "–").sum() == 1  # one line has a reference; the others read "–", never "None"
    assert any("Corpus BLEU" in c.value for c in at.caption)
    picked = frame["source"].iloc[0]
    select_row(at, table, 0)
    assert not at.exception, [e.message for e in at.exception]
    assert at.text_area(key="source").value == picked
    assert at.main.get_by_key("provenance").text[1].value == picked  # translated: the lab opened on it


def test_tab_refuses_too_many_lines_and_offers_the_dev_split(model_env: Path) -> None:
    at = open_tab(model_env)
    at.text_area(key="ranking_text").set_value("Hola.\n" * (MAX_LINES + 1)).run()
    assert any(f"at most {MAX_LINES}" in e.value for e in at.error)
    assert at.button(key="ranking_run").disabled
    at.radio(key="ranking_source").set_value("The model's dev split").run()
    at.button(key="ranking_run").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert len(at.dataframe[0].value) == min(MAX_LINES, len(read_tsv(split_file(model_env, "dev"))))
