"""Panels of structure-selection problems with known answers (``bench_selection.py``
registers them as workloads; ``tests/model_selection/test_selection_guard.py`` runs their small size).

One module per family builds its problems and the selection methods compared on them:
:mod:`.hmm`, :mod:`.mfa`, :mod:`.lds`, :mod:`.dag`, :mod:`.mrf`, :mod:`.crf`;
:mod:`.common` holds the problem / outcome containers and the runner.
"""
