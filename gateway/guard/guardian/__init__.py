"""The tool-call guardian: deterministic rules, the assessment discipline and the breaker."""
