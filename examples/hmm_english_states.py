"""How many hidden states does a character-level model of English text need?
=========================================================================

We take a public-domain English text shipped with the operating system (the Creative
Commons CC0 1.0 legal code in ``/usr/share/common-licenses``; if it is absent, the Zen of
Python from the standard library's ``this`` module), map it to 27 symbols (a-z and
space), cut it into sequences of 100 characters as in Beal (2003), section 3.5.2, and fit
variational Bayesian HMMs with K hidden states.  The lower bound F on the log marginal
likelihood of the training text picks the number of states; the per-character
log-likelihood of held-out text under the posterior-mean parameters is shown next to it.

Run ``python examples/hmm_english_states.py [--quick] [--output FILE.png]``.
"""

import argparse
import codecs
import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from sklearn_vb import VBHiddenMarkov  # noqa: E402

SOURCES = [Path("/usr/share/common-licenses/CC0-1.0")]


def load_text():
    for path in SOURCES:
        if path.is_file():
            return path.read_text(encoding="utf-8", errors="ignore"), str(path)
    import this  # noqa: F401  (prints the Zen of Python once)

    return codecs.decode(this.s, "rot13"), "the Zen of Python (module this)"


def encode(text, length=100):
    """Symbols 0-25 for a-z and 26 for space; sequences of ``length`` characters."""
    clean = re.sub(r"[^a-z]+", " ", text.lower()).strip()
    symbols = np.array([26 if c == " " else ord(c) - ord("a") for c in clean], dtype=np.int64)
    n_seq = len(symbols) // length
    return symbols[: n_seq * length].reshape(n_seq, length)


def main(argv=None):
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and restarts")
    parser.add_argument("--output", default="hmm_english_states.png")
    args = parser.parse_args(argv)

    text, source = load_text()
    seqs = encode(text)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(seqs))
    n_train = max(1, int(0.75 * len(seqs)))
    train, test = seqs[order[:n_train]], seqs[order[n_train:]]
    if args.quick:
        train, test = train[:20], test[:8]
    X_train, len_train = train.reshape(-1, 1), [train.shape[1]] * len(train)
    X_test, len_test = test.reshape(-1, 1), [test.shape[1]] * len(test)
    print(f"text: {source}; {len(train)} training and {len(test)} test sequences of 100 characters")

    sizes = [1, 2, 4, 8] if args.quick else [1, 2, 3, 4, 6, 8, 10, 15, 20, 30]
    bounds, heldout, used = [], [], []
    for K in sizes:
        model = VBHiddenMarkov(
            K, n_symbols=27, max_iter=200 if args.quick else 1000, tol=1e-3,
            n_init=2 if args.quick else 5, random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X_train, lengths=len_train)
        bounds.append(model.lower_bound_ / X_train.shape[0])
        heldout.append(model.score(X_test, lengths=len_test))
        used.append(model.n_effective_components_)
        print(f"K={K:3d}: F/char = {bounds[-1]:.4f} nats, held-out log-lik/char = {heldout[-1]:.4f}, "
              f"states in use = {used[-1]}")
    best = sizes[int(np.argmax(bounds))]
    print(f"the bound prefers K = {best}")

    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    ax[0].plot(sizes, bounds, "o-")
    ax[0].axvline(best, color="tab:red", linestyle=":")
    ax[0].set(xlabel="hidden states K", ylabel="F per character (nats)",
              title="lower bound on ln p(text | K)")
    ax[1].plot(sizes, heldout, "o-")
    ax[1].set(xlabel="hidden states K", ylabel="log-likelihood per character (nats)",
              title="held-out text, posterior-mean model")
    for axis in ax:
        axis.set_xscale("log")
    fig.tight_layout()
    fig.savefig(args.output, dpi=100)
    print(f"figure written to {args.output}")
    return sizes, bounds, heldout


if __name__ == "__main__":
    main()
