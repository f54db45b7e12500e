"""A frozen copy of the wire adapters as they were before the walk was made faster.

Imported only by tests/wire/test_segments_differential.py, which holds the
live adapters' segments and errors equal to these on generated bodies. Do not
edit to follow a change of behaviour: a deliberate change updates this copy
in the same commit, so the diff shows what changed.
"""
