"""The shared documentation fragments and their substitution into docstrings."""

import inspect
import re

import pytest
from sklearn.utils.metaestimators import available_if

from sklearn_vb import VBDiscreteDAG, VBHiddenMarkov, VBMixtureFactorAnalysers
from sklearn_vb._core.docstrings import fill_doc, online_step_params

_PLACEHOLDER_LINE = re.compile(r"^\s*\{[A-Za-z_][A-Za-z0-9_]*\}\s*$", re.MULTILINE)


def test_placeholder_lines_take_the_fragment_at_their_indentation():
    @fill_doc(part="first : int\n    Its meaning.\n")
    def f():
        """Summary.

        Parameters
        ----------
        {part}
        mode : {"a", "b"}, default="a"
            Braces of a type stay.
        """

    doc = inspect.cleandoc(f.__doc__)
    assert "first : int\n    Its meaning.\nmode : {\"a\", \"b\"}" in doc
    assert "{part}" not in doc


def test_a_placeholder_without_fragment_is_an_error():
    with pytest.raises(KeyError, match="typo"):
        @fill_doc(part="text")
        def f():
            """Summary.

            {typo}
            """


def test_a_class_decorator_fills_its_methods_also_under_available_if():
    @fill_doc(part="Filled.")
    class Model:
        """Model.

        {part}
        """

        def fit(self):
            """Fit.

            {part}
            """

        @available_if(lambda self: True)
        def partial_fit(self):
            """Partial fit.

            {part}
            """

    for doc in (Model.__doc__, Model.fit.__doc__, Model.partial_fit.__doc__,
                Model().partial_fit.__doc__):
        assert "Filled." in doc and "{part}" not in doc


@pytest.mark.parametrize("cls", [VBHiddenMarkov, VBMixtureFactorAnalysers, VBDiscreteDAG])
def test_estimators_render_their_shared_parameters_whole(cls):
    docs = [cls.__doc__] + [getattr(cls, name).__doc__ or "" for name in ("fit", "partial_fit")]
    for doc in docs:
        assert not _PLACEHOLDER_LINE.search(doc), doc
    # each parameter of the shared fragment is documented once, under Parameters
    text = inspect.cleandoc(cls.__doc__)
    parameters = text.split("Parameters\n----------\n")[1].split("Attributes\n----------")[0]
    for name in ("learning_method", "learning_decay", "learning_offset", "batch_size",
                 "total_samples"):
        assert len(re.findall(rf"^{name} : ", parameters, re.MULTILINE)) == 1, name
    assert inspect.cleandoc(online_step_params("rows")).splitlines()[0] in parameters
