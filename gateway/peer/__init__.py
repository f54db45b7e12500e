"""The Reef claw-to-claw protocol, byte-compatible with the reference (``openclaw/reef``).

Sans-IO: every function takes values and returns values; clocks, randomness
and the replay store are arguments.

    identity      keys, handle#epoch, fingerprints, key rotation
    envelope      seal / open_envelope (envelope v1), in the reference's order of checks
    replay        replay bindings: the store protocol and the in-memory store
    replay_sqlite the persistent replay store
    requests      signed device requests: client signer and relay verifier
    receipts      signed receipts
    audit         encrypted audit fields and signed checkpoints
    precheck      the deterministic floor for a peer message
    conformance   runs the reference's vector files against all of the above
    errors        the exception tree, with the reference's error codes
"""
