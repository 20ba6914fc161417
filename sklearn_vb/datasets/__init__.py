"""Data generators for the thesis experiments, the examples and the tests."""
from ._hmm import (  # noqa: F401
    make_hmm_sequences, make_input_driven_hmm_sequences, make_structure_discovery_sequences,
)
from ._dag import (  # noqa: F401
    BEAL_SIZES, BEAL_TRUE_CODE, beal_true_parameters, beal_true_structure, bipartite_structure,
    enumerate_bipartite_structures, make_beal_dag, make_beal_dag_datasets, random_beal_parameters,
)
from ._mfa import (  # noqa: F401
    make_embedded_clusters, make_grid_clusters, make_mfa, make_mixed_dimension_clusters,
    make_noisy_spiral, make_spaced_clusters,
)
from ._lds import make_lds, make_lds_input_experiment, make_lds_params  # noqa: F401
from ._mrf import (  # noqa: F401
    enumerate_undirected_graphs, make_boltzmann_machine, nested_edge_sequence,
    random_undirected_structures, sample_mrf,
)
from ._crf import FAQ_FEATURE_NAMES, make_faq_like_sequences  # noqa: F401
from ._text import (  # noqa: F401
    ALICE_SOURCE, ENGLISH_ALPHABET, alice_pip_command, encode_sentences, english_sentences,
    fetch_alice_text, text_data_home,
)
