"""The one table of languages: ISO 639-1 code -> English name, and the other names a corpus header may give it."""

from __future__ import annotations

SRC_LANG, TGT_LANG = "es", "en"  # the language pair a corpus is read as unless told otherwise
LANGUAGES: dict[str, tuple[str, tuple[str, ...]]] = {  # code -> (English name, header aliases besides code and name)
    "ar": ("Arabic", ("ara",)),
    "ca": ("Catalan", ("cat", "català")),
    "de": ("German", ("deu", "deutsch")),
    "en": ("English", ("eng", "inglés", "ingles")),
    "es": ("Spanish", ("spa", "español", "espanol", "castellano")),
    "eu": ("Basque", ("eus", "euskara")),
    "fr": ("French", ("fra", "français", "francais")),
    "gl": ("Galician", ("glg", "galego")),
    "it": ("Italian", ("ita", "italiano")),
    "ja": ("Japanese", ("jpn",)),
    "nl": ("Dutch", ("nld", "nederlands")),
    "pl": ("Polish", ("pol", "polski")),
    "pt": ("Portuguese", ("por", "português", "portugues")),
    "ru": ("Russian", ("rus",)),
    "tr": ("Turkish", ("tur", "türkçe")),
    "zh": ("Chinese", ("zho", "chinese")),
}


def name_of(code: str) -> str:
    """English name of an ISO 639-1 code ("es" -> "Spanish", "es-MX" too); other codes as written."""
    entry = LANGUAGES.get(code.strip().lower().split("-")[0].split("_")[0])
    return entry[0] if entry else code.strip()


def header_names(code: str) -> set[str]:
    """What a CSV header may call the column of ``code``, lowercased: the code, the name and its aliases."""
    name, aliases = LANGUAGES.get(code, (code, ()))
    return {code, name.lower(), *aliases}


def with_article(name: str) -> str:
    """ "a Spanish", "an English": a language name with its English indefinite article."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
