"""Invalid-input and boundary cases generated from the problem's ``declare.py`` (see declkit.py)."""
import pytest

import declare
import declkit
import reference
import submission

CASES = declkit.cases(declare.FUNCTIONS, reference)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.id for c in CASES])
def test_declared(index):
    declkit.run_case(CASES[index], declare.FUNCTIONS, submission)
