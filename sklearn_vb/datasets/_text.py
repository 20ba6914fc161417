"""English text for the character-level HMM experiment of Beal (2003) §3.5.2.

The thesis trains HMMs on sentences of Lewis Carroll's *Alice's Adventures in
Wonderland* (public domain).  No package installs that text as a data file, but the
source distribution of the ``wordcloud`` package on PyPI ships the Project Gutenberg
edition (eBook #11) as ``examples/alice.txt``.  :func:`fetch_alice_text` reads it from
that archive (or from an extracted ``alice.txt``) in a local data directory; with
``download=True`` it first fetches the archive with pip (``pip download``, the package
manager of the running interpreter).  Nothing is downloaded otherwise, and the text is
never copied into this repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np

__all__ = ["ENGLISH_ALPHABET", "ALICE_SOURCE", "alice_pip_command", "encode_sentences",
           "english_sentences", "fetch_alice_text", "text_data_home"]

#: The 27 symbols of the experiment: 26 lower-case letters and the blank (p = 27).
ENGLISH_ALPHABET = "abcdefghijklmnopqrstuvwxyz "

#: (distribution, version, member of its source archive) that ships the text.
ALICE_SOURCE = ("wordcloud", "1.9.6", "examples/alice.txt")

_START = re.compile(r"\*\*\* ?START OF (THIS|THE) PROJECT GUTENBERG EBOOK[^\n]*\n")
_END = re.compile(r"(\*\*\* ?END OF (THIS|THE) PROJECT GUTENBERG EBOOK|End of Project Gutenberg)")
# chapter headings ("CHAPTER I. Down the Rabbit-Hole") and the title block are not prose
_HEADING = re.compile(r"^\s*(CHAPTER [IVXLC]+\..*|THE END|ALICE'S ADVENTURES IN WONDERLAND|"
                      r"Lewis Carroll|THE MILLENNIUM FULCRUM EDITION [0-9.]+)\s*$", re.MULTILINE)


def text_data_home(data_home=None):
    """The directory that holds downloaded texts: ``data_home``, else the environment
    variable ``SKLEARN_VB_DATA``, else ``$XDG_CACHE_HOME/sklearn_vb`` (default
    ``~/.cache/sklearn_vb``).

    Examples
    --------
    >>> from sklearn_vb.datasets import text_data_home
    >>> text_data_home("/tmp/texts").as_posix()
    '/tmp/texts'
    """
    if data_home is not None:
        return Path(data_home)
    if os.environ.get("SKLEARN_VB_DATA"):
        return Path(os.environ["SKLEARN_VB_DATA"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "sklearn_vb"


def alice_pip_command(data_home=None):
    """The pip command that puts the source archive holding the text into ``data_home``
    (``--no-binary`` because only the source distribution has the example texts).

    Examples
    --------
    >>> from sklearn_vb.datasets import alice_pip_command
    >>> " ".join(alice_pip_command("/tmp/texts")[1:])
    '-m pip download --no-deps --no-binary wordcloud wordcloud==1.9.6 -d /tmp/texts'
    """
    name, version, _ = ALICE_SOURCE
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", name,
            f"{name}=={version}", "-d", str(text_data_home(data_home))]


def _candidates(home):
    name, version, _ = ALICE_SOURCE
    return [home / "alice.txt", home / f"{name}-{version}.tar.gz",
            *sorted(home.glob(f"{name}-*.tar.gz"), reverse=True)]


def _read_source(path):
    """The raw text of ``alice.txt`` or of the member of a ``wordcloud`` source archive."""
    path = Path(path)
    if path.name.endswith((".tar.gz", ".tgz")):
        member = ALICE_SOURCE[2]
        with tarfile.open(path, "r:gz") as archive:
            names = [n for n in archive.getnames() if n.endswith("/" + member)]
            if not names:
                raise ValueError(f"{path} holds no {member}.")
            raw = archive.extractfile(names[0]).read()
    else:
        raw = path.read_bytes()
    return raw.decode("utf-8-sig")


def fetch_alice_text(path=None, *, data_home=None, download=False):
    """The prose of *Alice's Adventures in Wonderland* (Project Gutenberg eBook #11).

    Parameters
    ----------
    path : str or path, default=None
        An ``alice.txt`` or a ``wordcloud`` source archive (``wordcloud-*.tar.gz``).
        None looks in :func:`text_data_home` for either.
    data_home : str or path, default=None
        See :func:`text_data_home`.
    download : bool, default=False
        If the text is not found, fetch the ``wordcloud`` source archive into
        ``data_home`` with pip (:func:`alice_pip_command`, about 28 MB) and read it.

    Returns
    -------
    text : str
        The book from its first chapter to its last line, without the Project Gutenberg
        header and licence, with the original line breaks and punctuation.

    Raises
    ------
    FileNotFoundError
        When the text is not found and ``download`` is False; the message gives the
        command that fetches it.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from sklearn_vb.datasets import english_sentences, fetch_alice_text
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "alice.txt"   # a stand-in file
    >>> _ = path.write_text("Header\\n*** START OF THIS PROJECT GUTENBERG EBOOK ALICE ***\\n"
    ...                     "Down, down, down. Would the fall NEVER come to an end!\\n"
    ...                     "*** END OF THIS PROJECT GUTENBERG EBOOK ALICE ***\\nLicence")
    >>> english_sentences(fetch_alice_text(path))
    ['down down down ', 'would the fall never come to an end ']
    """
    if path is not None:
        if not Path(path).exists():
            raise FileNotFoundError(f"path={str(path)!r} does not exist.")
        raw = _read_source(path)
    else:
        home = text_data_home(data_home)
        found = [p for p in _candidates(home) if p.exists()]
        if not found and download:
            home.mkdir(parents=True, exist_ok=True)
            subprocess.run(alice_pip_command(home), check=True)
            found = [p for p in _candidates(home) if p.exists()]
        if not found:
            raise FileNotFoundError(
                f"the text of Alice's Adventures in Wonderland was not found in {home}. "
                "It ships in the source distribution of the 'wordcloud' package; fetch it "
                "with\n    " + " ".join(alice_pip_command(home)[1:]).replace("-m pip", "pip", 1)
                + "\nor call sklearn_vb.datasets.fetch_alice_text(download=True), or pass "
                "path= (an alice.txt or wordcloud-*.tar.gz; the directory can also be set "
                "with the environment variable SKLEARN_VB_DATA).")
        raw = _read_source(found[0])
    start = _START.search(raw)
    if start is not None:
        raw = raw[start.end():]
    end = _END.search(raw)
    if end is not None:
        raw = raw[:end.start()]
    return raw


def english_sentences(text):
    """Split prose into the sentences of Beal (2003) §3.5.2.

    A sentence ends at ``.``, ``!`` or ``?``; chapter headings and the title block are
    dropped; the letters are lower-cased, a double dash becomes a blank, every other
    character outside a-z and blanks (punctuation, apostrophes, hyphens, digits) is
    removed, runs of blanks become one, and every sentence ends with one blank.  This
    reproduces the thesis's first ten training sentences from the Gutenberg text.

    Parameters
    ----------
    text : str

    Returns
    -------
    sentences : list of str
        Non-empty sentences over :data:`ENGLISH_ALPHABET`, in the order of the text.

    Examples
    --------
    >>> from sklearn_vb.datasets import english_sentences
    >>> english_sentences("CHAPTER I. Down the Rabbit-Hole\\n\\n'Oh dear! Oh dear! I shall be "
    ...                   "late!' (Which was very--likely true.)")
    ['oh dear ', 'oh dear ', 'i shall be late ', 'which was very likely true ']
    """
    text = _HEADING.sub(" ", text).replace("--", " ")
    sentences = []
    for piece in re.split(r"[.!?]", text):
        words = re.sub(r"[^a-z\s]", "", piece.lower()).split()
        if words:
            sentences.append(" ".join(words) + " ")
    return sentences


def encode_sentences(sentences, *, reverse=False):
    """Symbol sequences of ``sentences`` for :class:`~sklearn_vb.VBHiddenMarkov`.

    Letters a-z are symbols 0-25 and the blank is 26.  ``reverse=True`` reverses each
    sentence's characters but keeps its closing blank at the end, so forwards and
    backwards sentences differ only in the order of their words' letters and words (not
    by a blank at the start).

    Returns
    -------
    X : ndarray of shape (total length, 1), int64
    lengths : ndarray of int64

    Examples
    --------
    >>> from sklearn_vb.datasets import encode_sentences
    >>> X, lengths = encode_sentences(["ab c "], reverse=True)
    >>> X.ravel().tolist(), lengths.tolist()
    ([2, 26, 1, 0, 26], [5])
    """
    codes = {c: i for i, c in enumerate(ENGLISH_ALPHABET)}
    seqs = []
    for s in sentences:
        if not s or any(c not in codes for c in s):
            raise ValueError(f"every sentence must be a non-empty string over "
                             f"{ENGLISH_ALPHABET!r}; got {s!r}.")
        if reverse:
            s = s[:-1][::-1] + s[-1] if s.endswith(" ") else s[::-1]
        seqs.append([codes[c] for c in s])
    lengths = np.array([len(s) for s in seqs], dtype=np.int64)
    X = np.array([c for s in seqs for c in s], dtype=np.int64).reshape(-1, 1)
    return X, lengths
