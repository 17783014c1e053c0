"""The engine client: SGLang's native ``/generate`` (whole, streamed, forced), retries, routing, admin."""
