"""The sandbox's confined code is real modules (core/confined/): what it sends is their text, and the rules' code
stamps cover them, so an edit of the code that confines a program reruns what graded with it."""

from entropy_rl.core import modules
from entropy_rl.core.confined import batch, sandbox


def test_what_the_sandbox_sends_is_the_confined_modules_joined():
    for text in (sandbox._BOOTSTRAP, batch._harness_code()):
        compile(text, "<sandbox>", "exec")
        assert "# inlined" not in text and "from ." not in text  # the siblings' text is there, not an import of them
    assert "def landlock(ll):" in sandbox._BOOTSTRAP and "def harness(cfg):" in batch._harness_code()


def test_the_confined_modules_are_in_the_closure_of_whatever_grades_code():
    closure = set(modules.closure("entropy_rl.core.reward"))
    assert {f"entropy_rl.core.confined.{m}" for m in ("confine", "bootstrap", "processes", "harness")} <= closure
