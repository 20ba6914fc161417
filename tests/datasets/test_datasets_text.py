"""The English text of Beal (2003) §3.5.2: sentence segmentation, symbol coding and
reading the text from the source archive that ships it."""

import io
import tarfile

import numpy as np
import pytest

from sklearn_vb.datasets import (
    ENGLISH_ALPHABET, alice_pip_command, encode_sentences, english_sentences, fetch_alice_text,
    text_data_home,
)
from sklearn_vb.reproduce._hmm_english import THESIS_FIRST_TEN

# a made-up book in the layout of a Project Gutenberg file
BOOK = """The Project Gutenberg EBook of Nothing, by Nobody

*** START OF THIS PROJECT GUTENBERG EBOOK NOTHING ***

CHAPTER I. The Start-Line

'Well!' said the Cat--grinning; 'I can't wait: it's 3 o'clock?' (Quite so.)
Hello there
friend.

CHAPTER II. More

Oh!

THE END

End of Project Gutenberg's Nothing, by Nobody
licence text. Not a sentence.
"""
SENTENCES = ["well ", "said the cat grinning i cant wait its oclock ", "quite so ",
             "hello there friend ", "oh "]


def test_segmentation_rule():
    assert english_sentences(BOOK.split("***\n", 1)[1].split("End of Project")[0]) == SENTENCES


def test_every_sentence_is_over_the_alphabet_and_ends_with_one_blank():
    for s in english_sentences(BOOK):
        assert set(s) <= set(ENGLISH_ALPHABET)
        assert s.endswith(" ") and not s.endswith("  ") and not s.startswith(" ")
        assert "  " not in s


def test_encoding_and_reversal():
    X, lengths = encode_sentences(["ab c ", "z "])
    assert X.dtype == np.int64 and X.shape == (7, 1)
    assert X.ravel().tolist() == [0, 1, 26, 2, 26, 25, 26] and lengths.tolist() == [5, 2]
    Xr, lr = encode_sentences(["ab c ", "z "], reverse=True)
    assert Xr.ravel().tolist() == [2, 26, 1, 0, 26, 25, 26] and lr.tolist() == [5, 2]
    # reversing twice gives the sentence back
    text = "".join(ENGLISH_ALPHABET[i] for i in Xr.ravel())
    Xrr, _ = encode_sentences([text[:5], text[5:]], reverse=True)
    np.testing.assert_array_equal(Xrr, X)
    with pytest.raises(ValueError, match="over"):
        encode_sentences(["Capital "])
    with pytest.raises(ValueError, match="non-empty"):
        encode_sentences([""])


def _archive(path, member_text):
    with tarfile.open(path, "w:gz") as archive:
        data = member_text.encode("utf-8")
        info = tarfile.TarInfo("wordcloud-1.9.6/examples/alice.txt")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))


def test_reads_the_source_archive_and_strips_the_gutenberg_frame(tmp_path):
    _archive(tmp_path / "wordcloud-1.9.6.tar.gz", "\ufeff" + BOOK)
    text = fetch_alice_text(data_home=tmp_path)
    assert "START OF" not in text and "licence" not in text
    assert english_sentences(text) == SENTENCES
    # an explicit path to the archive or to an extracted file reads the same
    assert fetch_alice_text(tmp_path / "wordcloud-1.9.6.tar.gz") == text
    (tmp_path / "alice.txt").write_text(BOOK, encoding="utf-8")
    assert fetch_alice_text(tmp_path / "alice.txt") == text


def test_missing_text_names_the_command_that_fetches_it(tmp_path, monkeypatch):
    monkeypatch.setenv("SKLEARN_VB_DATA", str(tmp_path / "empty"))
    assert text_data_home() == tmp_path / "empty"
    with pytest.raises(FileNotFoundError, match="pip download --no-deps --no-binary wordcloud "
                                                "wordcloud==1.9.6"):
        fetch_alice_text()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fetch_alice_text(tmp_path / "nope.txt")
    cmd = alice_pip_command(tmp_path)
    assert cmd[-2:] == ["-d", str(tmp_path)] and "download" in cmd


def test_wrong_archive_is_refused(tmp_path):
    with tarfile.open(tmp_path / "wordcloud-0.tar.gz", "w:gz"):
        pass
    with pytest.raises(ValueError, match="holds no examples/alice.txt"):
        fetch_alice_text(tmp_path / "wordcloud-0.tar.gz")


def test_first_ten_training_sentences_are_the_thesis_s():
    try:
        text = fetch_alice_text()
    except FileNotFoundError:
        pytest.skip("the wordcloud source archive with alice.txt is not in the data directory")
    training = [s for s in english_sentences(text) if 10 <= len(s) <= 100]
    assert training[:10] == THESIS_FIRST_TEN
    assert len(training) > 1000
