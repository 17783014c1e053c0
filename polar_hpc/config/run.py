"""The whole run's configuration: what a recipe TOML decodes into."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

import msgspec
from msgspec import Meta

from polar_hpc.config.base import StrictStruct
from polar_hpc.config.sft import SftConfig

Backend = Literal["local", "slurm"]
RUNTIME_BACKENDS: dict[str, str] = {
    "bwrap": "polar_hpc.runtime.bwrap:BACKEND",
    "apptainer": "polar_hpc.runtime.apptainer:BACKEND",
    "podman": "polar_hpc.runtime.container:PODMAN",
    "docker": "polar_hpc.runtime.container:DOCKER",
    "local": "polar_hpc.runtime.local:BACKEND",
}
"""Every runtime backend: its ``runtime.backend`` name -> ``module:attribute`` of its ``runtime.backend.Backend``,
which owns every fact of it (``polar_hpc.runtime.backend()`` loads it). The names are the recipe key's choices;
doctor lists the backends in this order."""
if TYPE_CHECKING:
    RuntimeBackend = str
else:
    RuntimeBackend = Literal[tuple(sorted(RUNTIME_BACKENDS))]
RenderMode = Literal["canonical", "continuation"]
ToolParser = Literal["qwen", "qwen3_coder", "none"]
Policy = Literal["sample", "oracle", "oracle_noop", "oracle_subagent"]
"""Who writes the model's output in a session: the engine samples (the behaviour policy), or the oracle writes the
task's reference solution as the model's own tool calls and the engine scores them (teacher forcing);
``oracle_noop`` takes the same turns without applying anything (a grader must then give reward 0);
``oracle_subagent`` hands the task to the harness's sub-agent tool (Claude Code's ``Agent``), which solves it."""
TokenPolicy = Literal["sample", "oracle"]
"""What produced a record's or trace's output tokens: sampled by the engine, or forced by the oracle."""
ACCEPT_REWARD = 1.0
"""A session is accepted when it completed with at least this reward (``wire.traces.is_accepted``: the run's
status counts with it; ``polar-hpc report --accept`` overrides it for its own tables)."""

# value ranges, checked when a recipe, an override or a submitted task is decoded
AtLeast1 = Annotated[int, Meta(ge=1)]
AtLeast0 = Annotated[int, Meta(ge=0)]
Seconds = Annotated[float, Meta(gt=0)]
"""A duration or deadline: strictly positive."""
Port = Annotated[int, Meta(ge=0, le=65535)]
"""0 = any free port."""
Gigabytes = Annotated[float, Meta(gt=0)]
Fraction = Annotated[float, Meta(gt=0, le=1)]


class SlurmResources(StrictStruct):
    """One component's allocation; each field maps to an ``#SBATCH`` flag."""

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time_min: AtLeast1 = 60
    nodes: AtLeast1 = 1
    gpus_per_node: AtLeast0 = 0
    cpus_per_task: AtLeast1 = 1
    mem_gb: Gigabytes | None = None
    constraint: str | None = None
    extra: dict[str, str] = msgspec.field(default_factory=dict)
    """Other sbatch options (``{"reservation" = "x"}`` becomes ``#SBATCH --reservation=x``)."""


class LaunchConfig(StrictStruct):
    backend: Backend = "local"
    run_dir: str | None = None
    """Default: ``runs/<name>-<timestamp>`` under the current directory."""
    site: str | None = None
    """Site defaults that fill unset Slurm fields: a name (``slurm/sites/<site>.toml`` of the checkout) or a path to
    a ``.toml`` file (relative to the recipe's folder when not absolute)."""
    requeue: bool = True
    wait_timeout_s: Seconds = 600.0


class InferenceConfig(StrictStruct):
    engine: Literal["reference", "sglang", "external"] = "reference"
    model: str = "asset:tiny-qwen3"
    """A model directory, or ``asset:NAME`` for a fetched asset (``polar-hpc assets path NAME``)."""
    served_model_name: str = "policy"
    num_servers: AtLeast1 = 1
    tp: AtLeast1 = 1
    dp: AtLeast1 = 1
    context_length: AtLeast1 = 32768
    mem_fraction_static: Fraction | None = None
    random_seed: int | None = None
    """The run's sampling seed: the engine's own (SGLang ``--random-seed``, the reference server's ``--seed``), and
    the root of every model call's ``sampling_seed`` (``wire.session.call_seed``: task, sample, call index; a
    harness's own ``seed`` wins). None: calls are not seeded. SGLang honours per-request seeds only with
    ``--enable-deterministic-inference`` (in ``extra_args``)."""
    extra_args: list[str] = msgspec.field(default_factory=list)
    endpoints: list[str] = msgspec.field(default_factory=list)
    """For ``engine = "external"``: base URLs of servers that are already running."""
    tool_parser: ToolParser = "qwen"
    enable_thinking: bool | None = None
    max_new_tokens: AtLeast1 = 1024
    top_logprobs: AtLeast0 = 0
    """Ask the engine for the k most likely tokens at every sampled position (SGLang's ``top_logprobs_num``; the
    reference server answers the same), kept per token in the completion records (0: off). For score centering or
    a KL estimate offline; it costs k (logprob, id) pairs per sampled token on the wire."""
    request_timeout_s: Seconds = 600.0
    startup_timeout_s: Seconds = 900.0
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(gpus_per_node=1, cpus_per_task=8))
    python: str | None = None
    """The interpreter of the environment SGLang (or, for ``reference``, torch) is installed in, e.g. a site's SGLang
    venv: ``/sw/sglang-0.5/bin/python``. Default: the one running polar-hpc. Nothing of polar-hpc has to be
    installed there (its launcher shim reaches the run's frozen code through ``PYTHONPATH``)."""
    container: str | None = None
    """An Apptainer image with SGLang (a SIF path or ``docker://`` URI), run with ``apptainer exec --nv``; the
    server runs as ``python3`` inside it. Exclusive with ``python``."""


class CoordinatorConfig(StrictStruct):
    max_attempts: AtLeast1 = 3
    heartbeat_interval_s: Seconds = 1.0
    heartbeat_timeout_s: Seconds = 30.0
    status_interval_s: Seconds = 5.0
    result_buffer: AtLeast1 = 1024
    result_buffer_mb: AtLeast1 = 256
    http_facade: bool = False
    http_port: Port = 0
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(cpus_per_task=2))


class GatewayConfig(StrictStruct):
    num_ranks: AtLeast1 = 1
    init_pool: AtLeast1 = 2
    ready_buffer: AtLeast0 = 2
    run_pool: AtLeast1 = 2
    postrun_pool: AtLeast1 = 2
    start_gate: AtLeast1 = 2
    session_timeout_s: Seconds = 1800.0
    agent_timeout_s: Seconds = 1200.0
    drain_grace_s: Annotated[float, Meta(ge=0)] = 60.0
    render: RenderMode = "continuation"
    proxy_port: Port = 0
    keep_records: bool = False
    """Also write each session's completion records to ``run_dir/records/<session>.jsonl``."""
    measure_divergence: bool = False
    """Continuation mode: count per call the tokens a canonical re-render would change (costs a full render)."""
    resources: SlurmResources = msgspec.field(default_factory=lambda: SlurmResources(cpus_per_task=4))


class ProxyConfig(StrictStruct):
    stream_upstream: bool = True
    """Streaming requests stream from the engine as it samples; false (and for ``https://`` engines, which cannot
    stream): one engine call, then a synthesized stream."""
    keepalive_s: float = 15.0
    """A stream silent this long gets the provider's keep-alive (queueing, prefill, a tool call being held)."""
    stream_interval: AtLeast1 = 8
    """Streamed engine calls ask SGLang for one chunk per this many tokens after the first, which is sent at once
    (its per-request ``sampling_params.stream_interval``): fewer, larger chunks for the engine and the proxy."""
    stream_max_delay_s: Annotated[float, Meta(ge=0)] = 0.25
    """Longest a sampled delta waits before it is sent on: the first token goes out at once, later ones in batches
    whose wait starts at 20 ms and doubles up to this (each batch costs the proxy a wake-up; 0: no batching)."""


class RuntimeSpec(StrictStruct):
    backend: RuntimeBackend = "bwrap"
    image: str | None = None
    """Apptainer: SIF path or ``docker://`` URI; bwrap: a root filesystem folder (default: the host's);
    docker / podman: a local image name (a ``docker://`` prefix is dropped; images are never pulled at start)."""
    prepare: list[str] = msgspec.field(default_factory=list)
    """Shell commands run in the sandbox before the harness (with retries)."""
    prepare_retries: AtLeast0 = 2
    env: dict[str, str] = msgspec.field(default_factory=dict)
    network: Literal["shared", "none"] = "shared"
    bridge: Literal["forwarder", "handoff"] = "handoff"
    """``network = "none"``: how the harness reaches the proxy at ``127.0.0.1:28080`` in its sandbox. ``handoff``
    (bwrap): a shim binds that address in the sandbox, hands the listening socket to the rank's proxy over a
    socket pair of that command alone, and execs the command, so no process of ours stays in the sandbox and no
    sandbox holds a socket shared with another; ``forwarder``: a Python TCP→Unix-socket forwarder runs beside each
    command and relays to the proxy's Unix socket bound in (every backend; the only one for the others)."""
    workdir: str = "/polar/session/work"
    binds: list[str] = msgspec.field(default_factory=list)
    """Extra read-only binds ``SRC[:DST]``."""
    host_python: bool = False
    """bwrap: bind the Python running polar-hpc (and the polar_hpc package) read-only into the sandbox, first on
    PATH, so agents written in Python with the host's packages (the openai SDK, pytest) run unchanged."""
    gpus: AtLeast0 = 0
    memory_gb: Gigabytes | None = None
    cpus: Annotated[float, Meta(gt=0)] | None = None
    """docker / podman: CPU limit of the session's container (``--cpus``)."""
    pids_limit: AtLeast1 | None = None
    """docker / podman: most processes in the session's container (``--pids-limit``); None: the engine's default."""
    scratch_dirs: list[str] = msgspec.field(default_factory=list)
    """bwrap: absolute sandbox paths that are writable folders of the session's own (empty at start, gone with
    ``stop``, never shared), e.g. a Harbor task's ``/app``, ``/tests``, ``/logs``; the other backends' roots are
    writable already, and they ignore it."""
    uploads: list[str] = msgspec.field(default_factory=list)
    """``SRC:DST``: host files or folders copied into the sandbox after it starts, before the task's workspace and
    ``prepare`` (a Harbor task's ``COPY`` lines when it runs in bwrap)."""
    image_cache: str | None = None
    """Apptainer: the shared folder of ``.sif`` files that ``polar-hpc images prepare`` fills; a ``docker://`` image
    whose SIF is there runs from it."""
    start_timeout_s: Seconds = 120.0


class AgentSpec(StrictStruct):
    harness: str = "shell"
    """An adapter's name: a key of ``polar_hpc.harness.ADAPTERS`` (docs/harnesses.md)."""
    command: str | None = None
    """For ``shell``: the command, with ``{instruction}`` substituted."""
    max_turns: AtLeast1 | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    settings: dict[str, Any] = msgspec.field(default_factory=dict)
    policy: Policy = "sample"


class BuilderSpec(StrictStruct):
    name: str = "prefix_merging"
    """A registered builder or ``module:Class``."""
    include_side_requests: bool = False
    options: dict[str, Any] = msgspec.field(default_factory=dict)


class EvaluatorSpec(StrictStruct):
    name: str = "session_completed"
    command: str | None = None
    timeout_s: Seconds = 600.0
    fresh_runtime: bool = False
    fail_to_pass: list[str] = msgspec.field(default_factory=list)
    pass_to_pass: list[str] = msgspec.field(default_factory=list)
    options: dict[str, Any] = msgspec.field(default_factory=dict)


class TaskTemplate(StrictStruct):
    """How one JSONL row becomes a task: ``{field}`` placeholders are filled from the row.

    The same placeholders (plus ``{recipe_dir}``, ``{tasks_dir}``: the task file's folder, and ``{task_id}``) are
    filled in the runtime's prepare commands and image and in the evaluator's command; every other brace
    (``${HOME}``, awk's ``{print $1}``) is left to the command, and ``{{`` / ``}}`` are literal braces
    (``tasks/source.py``). Row keys ``FAIL_TO_PASS``/``PASS_TO_PASS`` (lists or JSON text) fill the evaluator's
    test lists. docs/tasks.md.
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
    num_samples: AtLeast1 = 1
    limit: AtLeast1 | None = None
    template: TaskTemplate = msgspec.field(default_factory=TaskTemplate)


class ShardConfig(StrictStruct):
    """A shard is committed when any limit is reached (a session is never split across shards)."""

    max_sessions: AtLeast1 = 256
    max_traces: AtLeast1 = 16384
    max_bytes: AtLeast1 = 256 * 1024 * 1024
    max_age_s: Seconds = 300.0
    compression: Literal["gzip", "lzf", "none"] = "none"


TisLevel = Literal["token", "sequence"]
LossNorm = Literal["token", "session", "group"]
"""What one unit of loss weight is (``train.grpo.credit``): a sampled token, a session (its chains together), or a
group."""
Staleness = Literal["exact", "in_flight"]
StaleSessions = Literal["drop", "mask"]
Timeouts = Literal["fail", "drop"]
DEFAULT_TIMEOUTS: Timeouts = "fail"
"""``TrainerConfig.timeouts``: how a trainer counts a session that ran out of turns or time."""


class TrainerConfig(StrictStruct):
    """The trainer's side of a run: ``AsyncRollouts(run_dir)``'s defaults and ``polar-hpc train grpo``'s settings.

    A GRPO group is one task's ``tasks.num_samples`` sessions; a step trains on ``groups_per_step`` groups."""

    max_off_policy_steps: AtLeast0 = 1
    """Groups are submitted this many optimizer steps ahead of training (0: synchronous); older ones are dropped.
    With ``staleness = "in_flight"``: the most versions a trained token may lag the trainer (``stale_sessions``)."""
    staleness: Staleness = "exact"
    """``exact``: a step waits for its own groups and weights are pushed only with no group generating, so every
    session of step ``s`` is sampled by the weights of step ``s - k``. ``in_flight``: weights are pushed while
    sessions run (the engines switch version between calls), each step trains on the first ``groups_per_step``
    groups back, every token with the version that sampled it (``train/grpo/inflight.py``)."""
    stale_sessions: StaleSessions = "drop"
    """``in_flight``: a session with a trainable token sampled more than ``max_off_policy_steps`` versions before
    the trainer's is ``drop``ped (a placeholder, out of the baseline) or has those tokens ``mask``ed (counted)."""
    timeouts: Timeouts = DEFAULT_TIMEOUTS
    """A session that ran out of turns (``agent.max_turns``) or time (status TIMEOUT): ``fail`` scores it 0, as
    ``eval`` counts it, in its group's baseline with its sampled chains trained (a policy that loops until it is
    cut off is taught not to); ``drop`` leaves it out (a placeholder, out of the baseline; counted against
    ``min_group_fraction``), so nothing in training tells a looping session from a finished one. A TIMEOUT session
    without a sampled chain (it timed out waiting for a slot) is left out either way."""
    min_group_fraction: Annotated[float, Meta(ge=0, le=1)] = 1.0
    """A group with fewer sessions that finished (COMPLETED, or TIMEOUT under ``timeouts = "fail"``) is not
    trained on."""
    model: str | None = None
    """The policy the trainer loads (a dir or ``asset:NAME``); default: ``inference.model``."""
    steps: AtLeast1 = 20
    groups_per_step: AtLeast1 = 1
    learning_rate: Annotated[float, Meta(gt=0)] = 1e-5
    lr_scheduler: Literal["constant", "linear", "cosine"] = "constant"
    """``constant``: a run's length is often decided while it runs (``linear`` decays to 0 at ``steps``)."""
    loss_type: Literal["grpo", "dapo", "dr_grpo", "bnpo"] = "dapo"
    beta: Annotated[float, Meta(ge=0)] = 0.0
    """KL coefficient against the initial policy (0: no reference model kept)."""
    tis_clip: Annotated[float, Meta(gt=0)] = 2.0
    """Truncated importance sampling: the trainer/rollout probability ratio is capped at this value."""
    tis_level: TisLevel = "token"
    """What one importance ratio covers: ``token`` (each token its own ratio) or ``sequence`` (a row's product of
    token ratios, the same weight on all its tokens); the clip and the mask apply at this level."""
    tis_mask: Annotated[float, Meta(ge=0)] = 0.0
    """IcePop-style masking: a token (or sequence, by ``tis_level``) whose trainer/rollout ratio is outside
    ``[1/tis_mask, tis_mask]`` gets weight 0 and leaves the loss's normalizer (0: off; IcePop uses 2 or 5). Inside
    the band the ratio is still capped at ``tis_clip``."""
    loss_norm: LossNorm = "token"
    """How rows weigh in the loss (every chain of a session is a row with the session's advantage): ``token``
    every sampled token the same (a session weighs its sampled tokens), ``session`` each session the same
    whatever its number of chains and tokens, ``group`` each group the same. ``session`` / ``group`` need a
    ``loss_type`` that sums tokens (dapo, bnpo) or averages rows (grpo); ``token`` one that sums tokens (not grpo)."""
    dynamic_sampling: bool = False
    """Set aside groups whose sessions all got the same reward (no advantage) and submit fresh groups in their
    place, so a step trains on ``groups_per_step`` informative groups (DAPO's dynamic sampling)."""
    max_refill_groups: AtLeast0 = 4
    """With ``dynamic_sampling``: at most this many fresh groups submitted per step; past it the step trains on
    the informative groups it has (logged)."""
    micro_batch_tokens: AtLeast0 = 4096
    """The trainer computes a step's rows that train in micro-batches of rows of similar length, each at most this
    many padded tokens (a longer row alone), back-propagating one before building the next: the same gradient as
    one batch padded to the step's longest row, with less padding and memory (``train/grpo/micro.py``). 0: one
    batch (TRL's way)."""
    seed: int = 0
    threads: AtLeast1 = 1
    """torch threads in the trainer process (with OMP_WAIT_POLICY=PASSIVE: spinning OpenMP threads starve the
    engine and the sandboxes on a shared CPU)."""
    group_timeout_s: Seconds = 900.0
    """A step fails when its groups are not back this long after submission."""
    keep_checkpoints: AtLeast1 = 2
    """Pushed checkpoints kept under ``run_dir/checkpoints`` (older ones are deleted once the engines load a newer)."""


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
    sft: SftConfig = msgspec.field(default_factory=SftConfig)
    proxy: ProxyConfig = msgspec.field(default_factory=ProxyConfig)
    recipe_dir: str | None = None
    """Set by the loader: the recipe's folder, for relative paths."""
