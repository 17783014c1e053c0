"""The oracle policy: the task's reference solution written as the model's own tool calls, scored by the engine.

``script`` turns a task into turns (look, apply, verify, answer); ``tools`` finds the harness's shell tool in a
request; ``render`` writes tool calls in the model's native format; ``policy`` is the per-session state the proxy
consults before each call.
"""
