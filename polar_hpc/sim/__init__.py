"""Stand-ins for what cannot run on demand here, for tests and benchmarks only (the product never imports them):
a simulated gateway rank, a simulated session executor with a virtual-time loop, a FAKE SGLang server."""
