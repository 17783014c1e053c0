"""The whole run's configuration: what a recipe TOML decodes into."""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from polar_hpc.config.base import StrictStruct

Backend = Literal["local", "slurm"]
RuntimeBackend = Literal["apptainer", "bwrap", "local"]
RenderMode = Literal["canonical", "continuation"]
ToolParser = Literal["qwen", "qwen3_coder", "none"]


class SlurmResources(StrictStruct):
    """One component's allocation; each field maps to an ``#SBATCH`` flag."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_min: int = 60
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_task: int = 1
    mem_gb: float | None = None
    constraint: str | None = None
    extra: dict[str, str] = msgspec.field(default_factory=dict)
    """Other sbatch options (``{"reservation" = "x"}`` becomes ``#SBATCH --reservation=x``)."""


class LaunchConfig(StrictStruct):
    backend: Backend = "local"
    run_dir: str | None = None
    """Default: ``runs/<name>-<timestamp>`` under the current directory."""
    site: str | None = None
    """Name of ``slurm/sites/<site>.toml`` whose defaults fill unset Slurm fields."""
    requeue: bool = True
    wait_timeout_s: float = 600.0


class InferenceConfig(StrictStruct):
    engine: Literal["reference", "sglang", "external"] = "reference"
    model: str = "asset:tiny-qwen3"
    """A model directory, or ``asset:NAME`` for a fetched asset (``polar-hpc assets path NAME``)."""
    served_model_name: str = "policy"
    num_servers: int = 1
    tp: int = 1
    dp: int = 1
    context_length: int = 32768
    mem_fraction_static: float | None = None
    random_seed: int | None = None
    extra_args: list[str] = msgspec.field(default_factory=list)
    endpoints: list[str] = msgspec.field(default_factory=list)
    """For ``engine = "external"``: base URLs of servers that are already running."""
    tool_parser: ToolParser = "qwen"
    enable_thinking: bool | None = None
    max_new_tokens: int = 1024
    request_timeout_s: float = 600.0
    startup_timeout_s: float = 900.0
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(gpus_per_node=1, cpus_per_task=8))


class CoordinatorConfig(StrictStruct):
    max_attempts: int = 3
    heartbeat_interval_s: float = 1.0
    heartbeat_timeout_s: float = 30.0
    status_interval_s: float = 5.0
    result_buffer: int = 1024
    http_facade: bool = False
    http_port: int = 0
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(cpus_per_task=2))


class GatewayConfig(StrictStruct):
    num_ranks: int = 1
    init_pool: int = 2
    ready_buffer: int = 2
    run_pool: int = 2
    postrun_pool: int = 2
    start_gate: int = 2
    session_timeout_s: float = 1800.0
    agent_timeout_s: float = 1200.0
    drain_grace_s: float = 60.0
    render: RenderMode = "continuation"
    proxy_port: int = 0
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(cpus_per_task=4))


class ProxyConfig(StrictStruct):
    stream_upstream: bool = True
    """Streaming requests stream from the engine as it samples; false: one engine call, then a synthesized stream."""
    keepalive_s: float = 15.0
    """A stream silent this long gets the provider's keep-alive (queueing, prefill, a tool call being held)."""


class RuntimeSpec(StrictStruct):
    backend: RuntimeBackend = "bwrap"
    image: str | None = None
    """Apptainer: SIF path or ``docker://`` URI; bwrap: a root filesystem folder (default: the host's)."""
    prepare: list[str] = msgspec.field(default_factory=list)
    """Shell commands run in the sandbox before the harness (with retries)."""
    prepare_retries: int = 2
    env: dict[str, str] = msgspec.field(default_factory=dict)
    network: Literal["shared", "none"] = "shared"
    workdir: str = "/polar/session/work"
    binds: list[str] = msgspec.field(default_factory=list)
    """Extra read-only binds ``SRC[:DST]``."""
    host_python: bool = False
    """bwrap: bind the Python running polar-hpc (and the polar_hpc package) read-only into the sandbox, first on
    PATH, so agents written in Python with the host's packages (the openai SDK, pytest) run unchanged."""
    gpus: int = 0
    memory_gb: float | None = None
    start_timeout_s: float = 120.0


class AgentSpec(StrictStruct):
    harness: str = "shell"
    """shell, codex, claude_code, gemini_cli, qwen_code, opencode, pi."""
    command: str | None = None
    """For ``shell``: the command, with ``{instruction}`` substituted."""
    max_turns: int | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    settings: dict[str, Any] = msgspec.field(default_factory=dict)


class BuilderSpec(StrictStruct):
    name: str = "prefix_merging"
    """A registered builder or ``module:Class``."""
    include_side_requests: bool = False
    options: dict[str, Any] = msgspec.field(default_factory=dict)


class EvaluatorSpec(StrictStruct):
    name: str = "session_completed"
    command: str | None = None
    timeout_s: float = 600.0
    fresh_runtime: bool = False
    fail_to_pass: list[str] = msgspec.field(default_factory=list)
    pass_to_pass: list[str] = msgspec.field(default_factory=list)
    options: dict[str, Any] = msgspec.field(default_factory=dict)


class TaskTemplate(StrictStruct):
    """How one JSONL row becomes a task: ``{field}`` placeholders are filled from the row.

    The same placeholders (plus ``{recipe_dir}`` and ``{task_id}``) are filled in the runtime's prepare
    commands and image and in the evaluator's command. Row keys ``FAIL_TO_PASS``/``PASS_TO_PASS`` (lists or
    JSON text) fill the evaluator's test lists.
    """

    id: str = "{task_id}"
    instruction: str = "{instruction}"
    image: str | None = None
    workspace: str | None = None
    """Host folder (relative to the recipe's folder) copied into the sandbox workdir before prepare."""
    metadata_fields: list[str] = msgspec.field(default_factory=list)


class TaskSource(StrictStruct):
    path: str | None = None
    """JSONL file of task rows, relative to the recipe's directory when not absolute."""
    num_samples: int = 1
    limit: int | None = None
    template: TaskTemplate = msgspec.field(default_factory=TaskTemplate)


class ShardConfig(StrictStruct):
    """A shard is committed when any limit is reached (a session is never split across shards)."""

    max_sessions: int = 256
    max_traces: int = 16384
    max_bytes: int = 256 * 1024 * 1024
    max_age_s: float = 300.0
    compression: Literal["gzip", "lzf", "none"] = "none"


class TrainerConfig(StrictStruct):
    max_off_policy_steps: int = 1
    min_group_fraction: float = 1.0
    token_budget: int = 16384
    seed: int = 0


class RunConfig(StrictStruct):
    name: str = "run"
    launch: LaunchConfig = msgspec.field(default_factory=LaunchConfig)
    inference: InferenceConfig = msgspec.field(default_factory=InferenceConfig)
    coordinator: CoordinatorConfig = msgspec.field(default_factory=CoordinatorConfig)
    gateway: GatewayConfig = msgspec.field(default_factory=GatewayConfig)
    runtime: RuntimeSpec = msgspec.field(default_factory=RuntimeSpec)
    agent: AgentSpec = msgspec.field(default_factory=AgentSpec)
    builder: BuilderSpec = msgspec.field(default_factory=BuilderSpec)
    evaluator: EvaluatorSpec = msgspec.field(default_factory=EvaluatorSpec)
    tasks: TaskSource = msgspec.field(default_factory=TaskSource)
    shards: ShardConfig = msgspec.field(default_factory=ShardConfig)
    trainer: TrainerConfig = msgspec.field(default_factory=TrainerConfig)
    proxy: ProxyConfig = msgspec.field(default_factory=ProxyConfig)
    recipe_dir: str | None = None
    """Set by the loader: the recipe's folder, for relative paths."""
