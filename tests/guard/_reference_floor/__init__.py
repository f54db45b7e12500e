"""A frozen copy of the secret floor (the secrets package and unwrap) as it was
before its speed work, imported only by ``test_floor_differential``, which
holds the live floor's verdicts equal to this one's. Do not edit: it is the
reference, not code that runs.
"""
