"""What the maps show (``Display``) and what every tab under them is given (``TabContext``): frozen records, built
once per rerun of the maps' fragment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from lab.attention.map_views import Followed
from lab.attention.sentence_maps import Kind, SentenceMaps
from lab.page.direction import Languages
from lab.page.model_choices import ModelChoice
from lab.page.request import Request
from translate.translator import Candidate, Translation, Translator


@dataclass(frozen=True)
class Display:
    """What the maps show: a layer and a head (None: the mean of heads) per kind, subwords or whole words, the
    followed token."""

    layers: Mapping[Kind, int]
    heads: Mapping[Kind, int | None]
    words: bool
    followed: Followed | None


@dataclass(frozen=True, kw_only=True)
class TabContext:
    """The model, what was asked, the sentence and hypothesis shown, their maps and how the maps above show them;
    with the page's three doors a tab may use (open another sentence, list the models, load one)."""

    translator: Translator
    request: Request  # model directory, text, decoding settings, guard: as clicked
    sentence: Translation  # the sentence picked (a longer text is translated sentence by sentence)
    candidate: Candidate  # the hypothesis shown
    maps: SentenceMaps  # its maps, every layer and head
    display: Display  # the layer and head of each map above, whole words, the followed token
    langs: Languages
    open_source: Callable[[str], None]  # a sentence picked in a tab (a ranked line): in the box, translated
    models: Callable[[], Sequence[ModelChoice]]  # the models the sidebar offers
    load: Callable[[str], Translator]  # the cached model of a directory

    @property
    def cross_layer(self) -> int:
        """The layer of the cross-attention map above: the tabs that show one layer follow it."""
        return self.display.layers["cross"]

    @property
    def cross_head(self) -> int | None:
        """The head of the cross-attention map above (None: the mean of heads)."""
        return self.display.heads["cross"]


def open_selected(open_source: Callable[[str], None], key: str, sentences: Sequence[str]) -> None:
    """A table's ``on_select``: the sentence of the row selected in the dataframe ``key`` opens in the lab."""
    if rows := st.session_state[key].selection.rows:
        open_source(sentences[rows[0]])
