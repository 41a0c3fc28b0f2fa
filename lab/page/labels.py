"""The page's words for a language pair: title, axis titles that name query and key, captions, the token legend."""

from __future__ import annotations

from data.case_markup import MARK
from data.languages import with_article
from lab.attention.sentence_maps import Kind
from lab.page.direction import Languages

TOKEN_LEGEND = (
    ("▁", "starts a new word: SentencePiece splits words into pieces, and ▁ marks the first piece of each word"),
    ("<s>", "beginning of sentence: the decoder's first input, before any output token exists"),
    ("</s>", "end of sentence: closes the source, and the decoder predicts it to stop"),
    ("<unk>", "unknown: a character the vocabulary does not have (the model cannot read it)"),
)
CASE_EXAMPLES = {"es": "Hola mundo"}  # the case mark's example in the source language (English for any other)


def case_mark_line(src_code: str) -> tuple[str, str]:
    """The legend's line for the case mark, its examples in the source language."""
    sentence = CASE_EXAMPLES.get(src_code, "Hello world")
    word, low = sentence.split()[0], sentence.split()[0].lower()
    return (
        MARK,
        "the word before it began with a capital: this model reads words in lowercase and marks the capitals "
        f"(case markup), so “{word}” reads ▁{low} ⇧ and shares what the model knows of “{low}”; a text is read in "
        f"sentence case, as every training sentence is written: “{sentence.lower()}” and “{sentence.upper()}” both "
        f"read as “{sentence}”",
    )


def how_to_read(langs: Languages) -> str:
    """The first lines above the maps: what a row, a column and a cell are."""
    produced = f"{langs.tgt} token" if langs.known else "output token"
    return (
        "**How to read a map.** Each row is one token being computed — in the decoder and cross-attention maps, the "
        f"{produced} about to be produced — and each column a token it may look at. The darker the cell, the "
        "larger the attention weight; each row's weights add up to 1."
    )


def title(langs: Languages) -> str:
    return f"{langs.src} → {langs.tgt}: inside a Transformer"  # one line on a 1280-pixel screen


def captions(langs: Languages, words: bool = False) -> dict[Kind, str]:
    """One line under each view: what a row is, what a column is, what to notice."""
    own_word = " With whole words, a row also sees the earlier pieces of its own word." if words else ""
    return {
        "encoder": f"Each token of the {langs.src} sentence (row) gathers information from every token of it "
        "(columns). Rows sum to 1.",
        "decoder": f"Row “a → b” is computed at input a and predicts b: it sees only the {langs.tgt} input so far. "
        f"Grey cells are the future, masked to exactly 0.{own_word}",
        "cross": f"Each row looks at the {langs.src} sentence while it predicts its {langs.tgt} token. Much weight "
        "often lands on </s> or the final period: a resting place, not a translation.",
    }


def source_label(langs: Languages) -> str:
    return f"{langs.src} sentence" if langs.known else "Sentence to translate"


def legend_markdown(case_mark: bool = False, src_code: str = "es") -> str:
    """The token legend as a Markdown list (tokens in code spans: ``<s>`` is never read as HTML), case mark included."""
    legend = TOKEN_LEGEND + ((case_mark_line(src_code),) if case_mark else ())
    return "\n".join(f"- `{token}` {meaning}" for token, meaning in legend)


def placeholder(langs: Languages) -> str:
    """The empty text box's hint, in the source language when it is Spanish."""
    hint = "Escribe una frase en español…" if langs.src_code == "es" else f"Type {with_article(langs.src)} sentence…"
    return f"{hint} (a longer text is translated sentence by sentence)"
