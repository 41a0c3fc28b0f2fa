"""Corpus files the Train page takes in: uploads (a size limit, sanitised names, a staging folder keyed by content)
and paths on the server (only inside the allowed folders, after resolving ``~``, ``..`` and symlinks)."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path

from data.readers import moses_paths
from jobs.corpus_check import SRC_LANG, TGT_LANG
from model.bounded_read import real
from model.weights import write_beside
from translate.settings import REPO_ROOT, SHARED_DATA, repo_relative, runs_folder

MAX_UPLOAD_ENV = "LAB_MAX_UPLOAD_MB"
DEFAULT_MAX_UPLOAD_MB = 200
STAGING_DIR = ".uploads"  # inside the runs folder; hidden, so never taken for a run
MAX_STAGED = 8  # uploads kept there (a page switch reuses the last one); older ones are deleted
STAGED_NAME = re.compile(r"[0-9a-f]{16}")  # a staged upload's folder: its content hash
MAX_NAME = 100  # characters of a staged upload's name
MAX_NAME_BYTES, MAX_PATH_BYTES = 255, 4095  # what Linux file systems allow (NAME_MAX; PATH_MAX less its NUL)
CORPUS_DIRS_ENV = "LAB_CORPUS_DIRS"  # folders (os.pathsep-separated) whose files the Train page may read


def max_upload_mb(environ: Mapping[str, str] = os.environ) -> int:
    """The upload limit in MB: ``$LAB_MAX_UPLOAD_MB`` when it is a positive integer, else 200."""
    value = environ.get(MAX_UPLOAD_ENV, "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else DEFAULT_MAX_UPLOAD_MB


def size_problem(size: int, max_mb: int, name: str) -> str | None:
    if size <= max_mb * 1024 * 1024:
        return None
    return (
        f"{name} is {size / 1024 / 1024:.1f} MB, over the {max_mb} MB limit "
        f"(set {MAX_UPLOAD_ENV} to raise it, or use a path on the server)"
    )


def safe_filename(name: str) -> str:
    """The base name reduced to ASCII letters, digits, ``.``, ``-``, ``_`` (no folders, no leading dot); past MAX_NAME
    cut, keeping its extension (the format) plus 8 hex digits of its hash: long names differing at the end differ."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    base = unicodedata.normalize("NFKD", base).encode("ascii", "ignore").decode()
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", base).strip("._-")
    if len(base) <= MAX_NAME:
        return base or "corpus.txt"
    tag = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem, dot, suffix = base.rpartition(".")
    extension = f".{suffix}" if dot and stem and len(suffix) < 10 else ""
    kept = (stem if extension else base)[: MAX_NAME - len(tag) - 1 - len(extension)].rstrip("._-")
    return f"{kept}-{tag}{extension}"


def stage_files(files: Mapping[str, bytes], staging: Path) -> Path:
    """Write ``{safe name: content}`` into ``staging/<content hash>/``; the staging folder keeps MAX_STAGED uploads."""
    digest = hashlib.sha256()
    for name in sorted(files):
        if name != safe_filename(name):
            raise ValueError(f"unsafe staged file name {name!r}")
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    folder = staging / digest.hexdigest()[:16]
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        path = folder / name
        if not path.is_file() or path.stat().st_size != len(content):
            write_beside(path, lambda file, content=content: file.write(content))  # a full disk leaves no part
    os.utime(folder)  # the newest upload (even one staged before) is kept longest: older ones past MAX_STAGED go
    folders = [p for p in staging.iterdir() if p.is_dir() and not p.is_symlink() and STAGED_NAME.fullmatch(p.name)]
    for old in sorted(folders, key=lambda p: p.stat().st_mtime_ns, reverse=True)[MAX_STAGED:]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def stage_problem(name: str, err: OSError) -> str:
    return f"{name} could not be saved in the runs folder ({err.strerror or err}); free space, or give a server path"


# ----------------------------------------------------------------------------------------- paths on the server


def corpus_folders(environ: Mapping[str, str] = os.environ) -> tuple[Path, ...]:
    """Folders the Train page may read: ``$LAB_CORPUS_DIRS`` (``os.pathsep``-separated), else data, ../shared/data.
    Never the runs folder (``folder_problem``): it holds every visitor's corpus; a run reads its own by itself."""
    value = environ.get(CORPUS_DIRS_ENV, "").strip()
    if value:
        folders = [Path(part.strip()).expanduser() for part in value.split(os.pathsep) if part.strip()]
    else:
        folders = [REPO_ROOT / "data", SHARED_DATA]
    return tuple(dict.fromkeys(folder.resolve() for folder in folders))


def server_path(text: str) -> Path:
    """The file ``text`` names, absolute, with ``~``, ``..`` and symlinks resolved; relative to the repository."""
    path = Path(text.strip()).expanduser()
    return real(path if path.is_absolute() else REPO_ROOT / path)


def folder_problem(path: Path, folders: Sequence[Path], shown: str | None = None) -> str | None:
    """Why the resolved ``path`` (or a Moses sibling) may not be read: a name too long, outside ``folders``, in the runs
    folder, or not to be looked at; folders named relative to the repository, never as the server's absolute paths."""
    shown = shown or str(path)
    if long := next((part for part in path.parts if len(os.fsencode(part)) > MAX_NAME_BYTES), None):
        size, most = len(os.fsencode(long)), f"a file or folder name may have at most {MAX_NAME_BYTES}"
        return f"{shown}: the name {long[:40]!r}… is {size} bytes long; {most}"
    if (size := len(os.fsencode(str(path)))) > MAX_PATH_BYTES:
        return f"{shown}: the path is {size} bytes long; a path may have at most {MAX_PATH_BYTES}"
    try:
        siblings = [] if path.is_dir() else [p for p in moses_paths(path, SRC_LANG, TGT_LANG) if p.exists()]
    except OSError as err:
        return f"{shown}: cannot be looked at ({err.strerror or err})"
    as_given = moses_paths(Path(shown), SRC_LANG, TGT_LANG)  # a Moses side, named as the user would
    given = {**dict(zip(moses_paths(path, SRC_LANG, TGT_LANG), as_given, strict=True)), path: shown}
    runs = runs_folder()
    for candidate in (path, *siblings):
        named = given.get(candidate, candidate)  # as the user gave it, never where it resolves to
        if real(candidate).is_relative_to(runs):
            return f"{named} is in the runs folder, whose corpora belong to the runs that made them: never read here"
        if not any(real(candidate).is_relative_to(folder) for folder in folders):
            allowed = ", ".join(repo_relative(folder) for folder in folders) or "none"
            return (
                f"{named} is outside the folders the Train page may read: {allowed}. "
                f"Put the corpus in one of them, or add its folder to {CORPUS_DIRS_ENV} "
                f"(folders separated by {os.pathsep!r})."
            )
    return None
