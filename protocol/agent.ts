import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'

/**
 * The agent protocol's frames (docs/agent.md, the protocol document's tables), both ways, as TypeBox
 * schemas: the one source the service (src/modules/agent, src/modules/commands), the reference
 * agent (agent/) and the test stand-in (tests/agent/fake-service.ts) all read. Each frame has its
 * Static type and a compiled checker. This folder imports nothing but TypeBox: it ships inside the
 * agent's tarball (bundled with TypeBox into protocol.js, src/modules/agent/agent.files.ts).
 *
 * No string `format` is used here: a compiled checker would need the format registered in its own
 * process, and the agent's process registers none. Ids are opaque strings to the protocol.
 */

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

const SEMVER_PATTERN = '^[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]*)?$'
/** Metric names, as stored: lower case, digits and underscores (docs/telemetry.md). */
const METRIC_NAME = '^[a-z][a-z0-9_]{1,63}$'

/** A fact a driver may not know: absent from older agents, null when the driver says "[N/A]". */
const Fact = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema))

const Gpu = Type.Object({
  index: Type.Integer({ minimum: 0, maximum: 127 }),
  model: Type.String({ minLength: 1, maxLength: 128 }),
  // Bounds of what an agent reports (docs/telemetry.md "Bounds of reported values"): 1 TiB of GPU memory.
  memory_mb: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_048_576 }))),
  uuid: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
  // Per-GPU facts (docs/agent.md "Facts", each with its nvidia-smi field); bounds far past today's hardware.
  pci_bus_id: Fact(Type.String({ maxLength: 32, description: 'pci.bus_id, e.g. 00000000:3B:00.0' })),
  pcie_gen_max: Fact(Type.Integer({ minimum: 1, maximum: 16, description: 'pcie.link.gen.max' })),
  pcie_width_max: Fact(Type.Integer({ minimum: 1, maximum: 64, description: 'pcie.link.width.max' })),
  power_limit_default_w: Fact(Type.Number({ minimum: 0, maximum: 5_000, description: 'power.default_limit' })),
  power_limit_min_w: Fact(Type.Number({ minimum: 0, maximum: 5_000, description: 'power.min_limit' })),
  power_limit_max_w: Fact(Type.Number({ minimum: 0, maximum: 5_000, description: 'power.max_limit' })),
  ecc_mode: Fact(Type.Boolean({ description: 'ecc.mode.current is Enabled' })),
  persistence_mode: Fact(Type.Boolean({ description: 'persistence_mode is Enabled' })),
  mig_mode: Fact(Type.Boolean({ description: 'mig.mode.current is Enabled' })),
  mig_devices: Fact(Type.Integer({ minimum: 0, maximum: 64, description: 'MIG devices under this GPU in nvidia-smi -L; not GPUs of their own' })),
  vbios_version: Fact(Type.String({ maxLength: 64, description: 'vbios_version' })),
})

/** Host facts an agent reports at enrolment, in its HTTPS hello and in its session's `hello`. */
export const HostFacts = {
  agent_version: Type.String({ maxLength: 32, pattern: SEMVER_PATTERN }),
  hostname: Type.String({ minLength: 1, maxLength: 253 }),
  fingerprint: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
  public_ip: Type.Optional(Nullable(Type.String({ maxLength: 45 }))),
  disk_gb: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 10_000_000, description: 'Up to 10 PB' }))),
  port_range: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
  gpus: Type.Array(Gpu, { maxItems: 128 }),
  // The host beside its GPUs (docs/agent.md "Facts"): additions to the protocol document's hello, each optional.
  driver_version: Fact(Type.String({ maxLength: 64, description: 'nvidia-smi --version, DRIVER version' })),
  cuda_version: Fact(Type.String({ maxLength: 32, description: 'nvidia-smi --version, CUDA Version (the newest CUDA the driver supports)' })),
  cpu_cores: Fact(Type.Integer({ minimum: 1, maximum: 65_536 })),
  ram_mb: Fact(Type.Integer({ minimum: 0, maximum: 268_435_456, description: 'Up to 256 TiB' })),
  disk_free_gb: Fact(Type.Number({ minimum: 0, maximum: 10_000_000, description: 'Free space on the root filesystem' })),
  docker_version: Fact(Type.String({ maxLength: 64 })),
  docker_root: Fact(Type.String({ maxLength: 256, description: "Docker's data root (DockerRootDir)" })),
  docker_disk_free_gb: Fact(Type.Number({ minimum: 0, maximum: 10_000_000 })),
  nvidia_container_toolkit_version: Fact(Type.String({ maxLength: 64 })),
}

/** POST /agent/register and POST /agent/hello: the bodies the agent sends. */
export const RegisterBody = Type.Object({ init_token: Type.String({ minLength: 1, maxLength: 256 }), ...HostFacts })
export const HelloBody = Type.Object(HostFacts)
export type HostFactsBody = Static<typeof HelloBody>

// --- agent → service ---------------------------------------------------------------------------

/** A command's id on the wire: opaque to the protocol (the service sends UUIDs). */
const CommandId = Type.String({ maxLength: 64 })

/** The error object of a failed command: code, message and retryable; stage and details are kept when usable. */
export const CommandError = Type.Object({
  code: Type.String({ pattern: '^[a-z][a-z0-9_]{1,63}$' }),
  message: Type.String(),
  retryable: Type.Boolean(),
  stage: Type.Optional(Type.Unknown()),
  details: Type.Optional(Type.Unknown()),
})
export type CommandError = Static<typeof CommandError>

export const AgentFrames = {
  hello: Type.Object({ type: Type.Literal('hello'), ...HostFacts }),
  heartbeat: Type.Object({ type: Type.Literal('heartbeat'), seq: Type.Integer() }),
  telemetry: Type.Object({
    type: Type.Literal('telemetry'),
    samples: Type.Array(
      Type.Object({
        t: Type.String({ maxLength: 64 }),
        scope: Type.Union([Type.Literal('host'), Type.Literal('gpu')]),
        gpu_index: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 127 }))),
        values: Type.Record(Type.String({ pattern: METRIC_NAME }), Nullable(Type.Number()), { maxProperties: 64, additionalProperties: false }),
      }),
      { maxItems: 2048 },
    ),
  }),
  event: Type.Object({
    type: Type.Literal('event'),
    kind: Type.String({ pattern: '^[a-z][a-z0-9_.-]{0,63}$' }),
    severity: Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('error'), Type.Literal('critical')]),
    message: Type.String({ maxLength: 1024 }),
    data: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
  }),
  'command.accepted': Type.Object({ type: Type.Literal('command.accepted'), command_id: CommandId }),
  'command.started': Type.Object({ type: Type.Literal('command.started'), command_id: CommandId }),
  'command.progress': Type.Object({ type: Type.Literal('command.progress'), command_id: CommandId, progress: Type.Integer({ minimum: 0, maximum: 100 }) }),
  'command.log': Type.Object({ type: Type.Literal('command.log'), command_id: CommandId, text: Type.String() }),
  'command.finished': Type.Object({
    type: Type.Literal('command.finished'),
    command_id: CommandId,
    status: Type.Union([Type.Literal('succeeded'), Type.Literal('failed')]),
    result: Type.Optional(Type.Unknown()),
    // Checked apart (CommandError) so a usable part of a sloppy error object can still be kept.
    error: Type.Optional(Type.Unknown()),
  }),
}
type AgentFrameSchemas = typeof AgentFrames
export type AgentFrame<K extends keyof AgentFrameSchemas = keyof AgentFrameSchemas> = { [T in K]: Static<AgentFrameSchemas[T]> }[K]
export type CommandReportType = Extract<keyof AgentFrameSchemas, `command.${string}`>
export type CommandReport = AgentFrame<CommandReportType>

/** What every command report carries: the command it is about. */
export const CommandReportHead = Type.Object({ type: Type.String(), command_id: CommandId })

// --- service → agent ---------------------------------------------------------------------------

export const ServiceFrames = {
  welcome: Type.Object({
    type: Type.Literal('welcome'),
    server_id: Type.String({ maxLength: 64 }),
    // gpuhq sends whole seconds; the agent takes any number and keeps its own for one that is not positive (docs/agent.md).
    heartbeat_interval_s: Type.Number(),
    telemetry_interval_s: Type.Number(),
  }),
  command: Type.Object({
    type: Type.Literal('command'),
    command_id: Type.String({ minLength: 1, maxLength: 128 }),
    command_type: Type.String({ minLength: 1, maxLength: 128 }),
    schema_version: Type.Integer({ minimum: 1 }),
    params: Type.Record(Type.String(), Type.Unknown()),
    requires: Type.Union([Type.Literal('none'), Type.Literal('idle'), Type.Literal('after_rental')]),
    /** RFC 3339, or null for no deadline. */
    deadline: Nullable(Type.String({ maxLength: 64 })),
  }),
  'command.cancel': Type.Object({ type: Type.Literal('command.cancel'), command_id: Type.String({ minLength: 1, maxLength: 128 }) }),
  error: Type.Object({ type: Type.Literal('error'), code: Type.String({ maxLength: 64 }), message: Type.String({ maxLength: 512 }) }),
}
type ServiceFrameSchemas = typeof ServiceFrames
export type ServiceFrame<K extends keyof ServiceFrameSchemas = keyof ServiceFrameSchemas> = { [T in K]: Static<ServiceFrameSchemas[T]> }[K]

/** Whatever arrives, either way, must at least be a JSON object with a string type. */
export const AnyFrame = Type.Object({ type: Type.String() })

// --- compiled checkers -------------------------------------------------------------------------

type Checkers<S extends Record<string, TSchema>> = { [K in keyof S]: ReturnType<typeof TypeCompiler.Compile<S[K]>> }
function compileAll<S extends Record<string, TSchema>>(schemas: S): Checkers<S> {
  return Object.fromEntries(Object.entries(schemas).map(([type, schema]) => [type, TypeCompiler.Compile(schema)])) as Checkers<S>
}

/** One compiled checker per frame the agent sends (the service checks what it receives with these). */
export const checkAgentFrame = compileAll(AgentFrames)
/** One compiled checker per frame the service sends (the agent checks what it receives with these). */
export const checkServiceFrame = compileAll(ServiceFrames)
export const checkAnyFrame = TypeCompiler.Compile(AnyFrame)
export const checkCommandReportHead = TypeCompiler.Compile(CommandReportHead)
export const checkCommandError = TypeCompiler.Compile(CommandError)
export const checkRegisterBody = TypeCompiler.Compile(RegisterBody)
export const checkHelloBody = TypeCompiler.Compile(HelloBody)

/** A frame's first schema error as both ends word it: `<type><path>: <message>`, at most 512 characters. */
export function firstFrameError(type: string, errors: { First(): { path: string; message: string } | undefined }): string {
  const first = errors.First()
  return `${type}${first?.path ?? ''}: ${first?.message ?? 'invalid'}`.slice(0, 512)
}

/** Frames are limited to 256 KiB, both ways. */
export const MAX_FRAME_BYTES = 256 * 1024

/**
 * The self-update's steps, as the agent reports them in `event` frames (docs/agent.md
 * "Self-update"); the service stores each as the server event `agent.<kind>`, beside its own
 * `agent.update.offered`. Every one carries `data.from_version` and `data.to_version`.
 */
export type UpdateEventKind = 'update.verified' | 'update.installed' | 'update.completed' | 'update.rolled_back' | 'update.failed'
