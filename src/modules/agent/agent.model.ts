import { Type, type Static } from '@sinclair/typebox'
import { Nullable, Uuid } from '../../platform/schemas'

const SEMVER_PATTERN = '^[0-9]+\\.[0-9]+\\.[0-9]+([-+][0-9A-Za-z.+-]*)?$'

const Gpu = Type.Object({
  index: Type.Integer({ minimum: 0, maximum: 127 }),
  model: Type.String({ minLength: 1, maxLength: 128 }),
  // Bounds of what an agent reports (docs/telemetry.md "Bounds of reported values"): 1 TiB of GPU memory.
  memory_mb: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 1_048_576 }))),
  uuid: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
})

/** Host facts an agent reports at enrolment and in its hello. */
const HostFacts = {
  agent_version: Type.String({ maxLength: 32, pattern: SEMVER_PATTERN }),
  hostname: Type.String({ minLength: 1, maxLength: 253 }),
  fingerprint: Type.Optional(Nullable(Type.String({ maxLength: 128 }))),
  public_ip: Type.Optional(Nullable(Type.String({ maxLength: 45 }))),
  disk_gb: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 10_000_000, description: 'Up to 10 PB' }))),
  port_range: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
  gpus: Type.Array(Gpu, { maxItems: 128 }),
}

export const RegisterBody = Type.Object({ init_token: Type.String({ minLength: 1, maxLength: 256 }), ...HostFacts })
export const Registered = Type.Object({
  server_id: Uuid(),
  agent_token: Type.String({ description: 'gpuhq_agt_… credential, shown once; present it as Authorization: Bearer' }),
  ws_url: Type.String(),
  heartbeat_interval_s: Type.Integer(),
  telemetry_interval_s: Type.Integer(),
})
export const HelloBody = Type.Object(HostFacts)

export type HostFactsInput = Static<typeof HelloBody>

/** Frames an agent sends on its session (docs/agent.md "Behaviour, frame by frame"), each checked by a compiled validator in agent.ws.ts. */
const MetricName = '^[a-z][a-z0-9_]{1,63}$'
export const Frames = {
  hello: Type.Object({ type: Type.Literal('hello'), ...HostFacts }),
  heartbeat: Type.Object({ type: Type.Literal('heartbeat'), seq: Type.Integer() }),
  telemetry: Type.Object({
    type: Type.Literal('telemetry'),
    samples: Type.Array(
      Type.Object({
        t: Type.String({ maxLength: 64 }),
        scope: Type.Union([Type.Literal('host'), Type.Literal('gpu')]),
        gpu_index: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 127 }))),
        values: Type.Record(Type.String({ pattern: MetricName }), Nullable(Type.Number()), { maxProperties: 64, additionalProperties: false }),
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
} as const

/** Whatever arrives must at least be a JSON object with a string type. */
export const AnyFrame = Type.Object({ type: Type.String() })

/** Frames the service sends (besides the commands module's `command` and `command.cancel`). */
const Welcome = Type.Object({
  type: Type.Literal('welcome'),
  server_id: Uuid(),
  heartbeat_interval_s: Type.Integer(),
  telemetry_interval_s: Type.Integer(),
})
const ErrorFrame = Type.Object({ type: Type.Literal('error'), code: Type.String(), message: Type.String({ maxLength: 512 }) })
export type OutgoingFrame = Static<typeof Welcome> | Static<typeof ErrorFrame>
