"""Data sets shared by the time-to-solution and score-cost benchmarks.

Everything here is shipped with the system or generated from a fixed seed: no
downloads.  The English text comes from the licence texts in
``/usr/share/common-licenses`` (present on Debian-based systems); where they are
missing or too short, text of the same alphabet is generated from a fixed random
Markov chain, so that the workloads always run.
"""

from __future__ import annotations

import re
import string
from pathlib import Path

import numpy as np

LICENSE_DIR = Path("/usr/share/common-licenses")

#: the symbol alphabet of the text workloads: a-z, space, digits as one symbol and
#: eleven punctuation marks; every other character maps to the last symbol ("other")
TEXT_ALPHABET = list(string.ascii_lowercase) + [" ", "0"] + list(".,;:()\"'-/") + ["?"]


def _license_text():
    """The licence texts concatenated in file-name order (each file once)."""
    if not LICENSE_DIR.is_dir():
        return ""
    seen, parts = set(), []
    for path in sorted(LICENSE_DIR.iterdir()):
        real = path.resolve()
        if real in seen or not real.is_file():
            continue
        seen.add(real)
        parts.append(real.read_text(encoding="utf-8", errors="ignore"))
    return "\n".join(parts)


def encode_text(text):
    """Map text to symbols 0 .. len(TEXT_ALPHABET) - 1 (lower case, runs of white
    space as one space, digits as one symbol)."""
    clean = re.sub(r"\s+", " ", text.lower())
    clean = re.sub(r"[0-9]", "0", clean)
    index = {c: i for i, c in enumerate(TEXT_ALPHABET)}
    other = len(TEXT_ALPHABET) - 1
    return np.array([index.get(c, other) for c in clean], dtype=np.int64)


def _generated_symbols(n_chars, seed):
    """Symbols from a sticky random first-order Markov chain over the alphabet."""
    rng = np.random.default_rng(seed)
    M = len(TEXT_ALPHABET)
    transmat = rng.dirichlet(np.full(M, 0.2), size=M)
    symbols = np.empty(n_chars, dtype=np.int64)
    symbols[0] = 0
    u = rng.random(n_chars)
    cdf = np.cumsum(transmat, axis=1)
    for t in range(1, n_chars):
        symbols[t] = min(int(np.searchsorted(cdf[symbols[t - 1]], u[t])), M - 1)
    return symbols


def english_text(n_chars=30000, seq_len=100, seed=0):
    """About ``n_chars`` characters of English text as categorical sequences.

    Returns ``(X, lengths, n_symbols, source)``: ``X`` is one column of symbols,
    ``lengths`` the sequence lengths (``seq_len`` characters each, as in Beal (2003),
    section 3.5.2), ``n_symbols`` the alphabet size and ``source`` a description.
    """
    symbols = encode_text(_license_text())
    source = f"licence texts in {LICENSE_DIR}"
    if symbols.size < n_chars:
        symbols = _generated_symbols(n_chars, seed)
        source = "generated (random Markov chain over the text alphabet)"
    n_seq = max(1, n_chars // seq_len)
    X = symbols[: n_seq * seq_len].reshape(-1, 1)
    return X, [seq_len] * n_seq, len(TEXT_ALPHABET), source


def gaussian_hmm_data(n_components=5, n_features=5, n_frames=20000, seq_len=1000, seed=0):
    """Sequences from a sticky Gaussian HMM with well separated, correlated states."""
    from sklearn_vb.datasets import make_hmm_sequences

    K, D = n_components, n_features
    rng = np.random.default_rng(seed)
    startprob = rng.dirichlet(np.ones(K))
    transmat = rng.dirichlet(np.ones(K), size=K) + 4 * np.eye(K)
    transmat /= transmat.sum(axis=1, keepdims=True)
    means = rng.normal(scale=3.0, size=(K, D))
    factors = rng.normal(scale=0.5, size=(K, D, D))
    covars = factors @ factors.transpose(0, 2, 1) + np.eye(D)
    n_seq = max(1, n_frames // seq_len)
    X, _, lengths = make_hmm_sequences(startprob, transmat, (means, covars),
                                       [seq_len] * n_seq, random_state=seed)
    return X, list(lengths)


def lds_data(n_outputs, n_timesteps, n_states, seed=0):
    """One sequence from a random LDS without inputs (``make_lds_params``)."""
    from sklearn_vb.datasets import make_lds, make_lds_params

    params = make_lds_params(n_states, n_outputs, 0, random_state=seed)
    X, _ = make_lds(params, [n_timesteps], random_state=seed)
    return X


def train_test_split_rows(X, test_fraction=0.2, seed=0):
    """A fixed random split of the rows of ``X``."""
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    n_test = int(round(test_fraction * X.shape[0]))
    return X[perm[n_test:]], X[perm[:n_test]]
