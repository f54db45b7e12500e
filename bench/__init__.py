"""Side-by-side benchmarks of the gateway: `python -m bench <name> [--quick] [--json]`.

    overhead       added latency and throughput versus direct, a bare aiohttp proxy,
                   nginx and LiteLLM, on a realistic ~4 KB agent turn
    scan           secret-detector throughput, next to detect-secrets
    conversation   bytes scanned and classifier calls per turn over 100 turns
    memory         gateway RSS with 1,000 open streamed responses

Each prints a table with a PASS/MISS column against the targets and, with
`--json`, one JSON object as its last line. `--quick` keeps each under a
minute; `--smoke` is the seconds-long mode the test suite runs; `--no-install`
never calls apt-get or pip (peers that are missing then report null).
"""
