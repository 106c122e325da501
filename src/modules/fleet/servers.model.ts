import { Type, type TSchema } from '@sinclair/typebox'
import { t } from 'elysia'
import { DisplayText, Literals, Money, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'
import { UNSAFE_TEXT_CHARS } from '../../platform/text'
import { MARKETPLACES, MarketplaceId } from '../../platform/marketplace-id'

// A tag's value may be any text but whitespace, commas, control and bidi characters.
const TAG_PATTERN = `^[A-Za-z0-9][A-Za-z0-9_.\\-/]{0,63}(:[^\\s,${UNSAFE_TEXT_CHARS}]{1,64})?$`
const Tag = Type.String({ pattern: TAG_PATTERN, maxLength: 128, description: '`key` or `key:value`' })
/** A fact an agent may not report (absent) or a driver may not know (null). */
const Fact = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema))
const Presence = Type.Union([Type.Literal('online'), Type.Literal('suspect'), Type.Literal('offline')])

const Envelope = {
  generated_at: Timestamp(),
  data_as_of: Timestamp({ description: 'Source watermark' }),
  version: Type.Integer({ description: 'Cache-shape version of the snapshot' }),
  stale: Type.Boolean({ description: 'True when an older snapshot is served while a refresh runs' }),
  stale_reason: Nullable(Type.String({ maxLength: 256 })),
}

const RowFields = {
  id: Uuid(),
  name: Type.String({ maxLength: 128 }),
  agent_version: Nullable(Type.String({ maxLength: 32 })),
  gpu_count: Type.Integer(),
  gpu_model: Type.String({ maxLength: 128 }),
  fsm_state: Type.String({ maxLength: 32, description: 'Historical; always "new"' }),
  maintenance: Type.Optional(Type.Object({ since: Timestamp(), reason: Nullable(Type.String({ maxLength: 256 })) }, { description: 'Absent when in service' })),
  presence: Presence,
  marketplace: Nullable(
    Type.String({
      maxLength: 32,
      description:
        'The platform where the server is rented or listed now, through a live link (marketplace_a or marketplace_b): linked on both, the one with a running rental, else the one where it is listed, marketplace_a first on a tie; null when it is neither listed nor rented anywhere',
    }),
  ),
  price_usd_gpu_h: Nullable(
    Money({
      description:
        "The listed on-demand price per GPU-hour in USD of that offer, as the last marketplaces.sync read it (marketplace_b's coin prices converted at the rate that sync read); null when there is no marketplace or the platform shows no price",
    }),
  ),
  health: Nullable(
    Type.String({
      maxLength: 32,
      description:
        'ok, warning or critical: critical with an unresolved (open or acknowledged) critical alert incident on the server or when it is offline outside a declared maintenance; warning with an unresolved warning incident, when suspect, or offline in maintenance; ok otherwise',
    }),
  ),
  last_seen_at: Nullable(Timestamp({ description: 'Last heartbeat of the agent session' })),
  revenue_today_usd: Money({
    description:
      "What the server's rentals accrued since 00:00 UTC, before the platform's cut: the sum of earn_usd_accrued of its GET /marketplaces/earnings rows for today (every marketplace); moves with each earnings.sample",
  }),
  max_temp_core_c: Nullable(Type.Number()),
  max_temp_hotspot_c: Nullable(Type.Number()),
  max_temp_vram_c: Nullable(Type.Number()),
  max_fan_pct: Nullable(Type.Number()),
  avg_util_pct: Nullable(Type.String({ pattern: '^-?[0-9]+(\\.[0-9]{1,6})?$' })),
  group_id: Nullable(Uuid()),
  tags: Type.Array(Type.String(), { maxItems: 64 }),
  rental_state: Nullable(
    Literals(['rented', 'idle'] as const, {
      description:
        "Not in the specification's row, added alongside: rented when a rental runs by any source (a marketplace the sync read, or the operator's or agent's rental fact); idle when listed on a platform and nothing is rented; null when neither",
    }),
  ),
  rented_gpu_count: Type.Integer({
    minimum: 0,
    description:
      'GPUs rented now as the platform says (all of gpu_count when it does not say how many, or when only the operator or agent says a rental runs); 0 when not rented',
  }),
  open_incidents: Type.Integer({ minimum: 0, description: 'Unresolved (open or acknowledged) alert incidents on this server: the ones behind health' }),
  gpu_vitals: Type.Array(Type.Object({ index: Type.Integer(), temp_c: Nullable(Type.Number()), fan_pct: Nullable(Type.Number()) }), { maxItems: 128 }),
}
const FleetRowSchema = Type.Object(RowFields)

export const ServerList = PageOf(FleetRowSchema, { maxItems: 200 }, Envelope)

const MetricValues = Type.Record(Type.String(), Type.Object({ value: Nullable(Type.Number()), t: Timestamp() }))
export const ServerDetail = Type.Object({
  ...RowFields,
  version: Type.Integer(),
  hostname: Nullable(Type.String()),
  public_ip: Nullable(Type.String()),
  disk_gb: Nullable(Type.Integer()),
  port_range: Nullable(Type.String()),
  gpus: Type.Array(
    Type.Object({
      index: Type.Integer(),
      model: Type.String(),
      memory_mb: Type.Optional(Nullable(Type.Integer())),
      uuid: Type.Optional(Nullable(Type.String())),
      // Per-GPU facts of the agent's last hello (docs/agent.md "Facts", each with its nvidia-smi field). Absent
      // when the agent is older than these facts; null when the driver does not know one ("[N/A]").
      pci_bus_id: Fact(Type.String({ maxLength: 32, description: 'pci.bus_id' })),
      pcie_gen_max: Fact(Type.Integer({ description: 'pcie.link.gen.max: the highest PCIe generation the GPU and the board allow' })),
      pcie_width_max: Fact(Type.Integer({ description: 'pcie.link.width.max: the widest link (lanes) the GPU and the board allow' })),
      power_limit_default_w: Fact(Type.Number({ description: 'power.default_limit, watts' })),
      power_limit_min_w: Fact(Type.Number({ description: 'power.min_limit, watts' })),
      power_limit_max_w: Fact(Type.Number({ description: 'power.max_limit, watts' })),
      ecc_mode: Fact(Type.Boolean({ description: 'ecc.mode.current is Enabled' })),
      persistence_mode: Fact(Type.Boolean({ description: 'persistence_mode is Enabled' })),
      mig_mode: Fact(Type.Boolean({ description: 'mig.mode.current is Enabled' })),
      mig_devices: Fact(Type.Integer({ description: 'MIG devices under this GPU (nvidia-smi -L); they are partitions of it, not extra GPUs' })),
      vbios_version: Fact(Type.String({ maxLength: 64, description: 'vbios_version' })),
    }),
  ),
  host_details: Nullable(
    Type.Object(
      {
        driver_version: Nullable(Type.String({ maxLength: 64, description: 'NVIDIA driver (nvidia-smi --version, DRIVER version)' })),
        cuda_version: Nullable(Type.String({ maxLength: 32, description: 'The newest CUDA the driver supports (nvidia-smi --version, CUDA Version)' })),
        cpu_cores: Nullable(Type.Integer({ description: 'Logical CPUs' })),
        ram_mb: Nullable(Type.Integer({ description: 'Memory, MiB' })),
        disk_free_gb: Nullable(Type.Number({ description: 'Free space on the root filesystem, decimal GB' })),
        docker_version: Nullable(Type.String({ maxLength: 64 })),
        docker_root: Nullable(Type.String({ maxLength: 256, description: "Docker's data root (DockerRootDir), where renters' images and containers go" })),
        docker_disk_free_gb: Nullable(Type.Number({ description: "Free space on Docker's data root, decimal GB" })),
        nvidia_container_toolkit_version: Nullable(Type.String({ maxLength: 64, description: 'nvidia-ctk --version (or nvidia-container-cli)' })),
      },
      {
        description:
          "Not in the specification's server detail, added alongside: the host beside its GPUs as the agent's last hello reported it; null until an agent reported them (older and simulated agents do not). Each field null when unknown or not installed",
      },
    ),
  ),
  gpu_health: Type.Array(
    Type.Object({
      index: Nullable(Type.Integer({ description: 'The GPU; null for Xids the agent could not tie to a GPU it knows' })),
      pcie_link_degraded: Nullable(
        Type.Boolean({
          description:
            'The link runs below what the GPU and board allow: current width (pcie_link_width) below pcie_width_max, or current generation (pcie_link_gen) below pcie_gen_max while the GPU is busy (utilisation above 0; an idle GPU trains its link down to save power). Null when it cannot be compared',
        }),
      ),
      clock_event_reasons: Nullable(
        Type.Array(Type.String({ maxLength: 32 }), {
          maxItems: 53,
          description:
            'Why the clocks are held down now, from the clock_event_reasons reading: gpu_idle, applications_clocks_setting, sw_power_cap, hw_slowdown, sync_boost, sw_thermal_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown, display_clock_setting (bit_<n> past these); empty when none, null when unknown',
        }),
      ),
      xids: Type.Array(Type.Object({ xid: Type.Integer(), count: Type.Integer({ minimum: 1 }), last_at: Timestamp() }), {
        description: 'NVIDIA Xid errors the agent read from the kernel log (agent.gpu.xid events), counted per Xid number',
      }),
    }),
    {
      maxItems: 129,
      description:
        'Not in the specification\'s server detail, added alongside: each GPU\'s health verdicts (docs/agent.md "Health readings"); the readings themselves are in telemetry.gpus',
    },
  ),
  telemetry: Type.Object({
    host: MetricValues,
    gpus: Type.Array(Type.Object({ index: Type.Integer(), metrics: MetricValues })),
  }),
  keep_on: Type.Array(MarketplaceId),
  electricity_usd_per_kwh: Nullable(Money()),
  rental_active: Type.Boolean({
    description: 'A rental runs on the server, by any source (the operator, the agent, or a marketplace the marketplaces.sync job read)',
  }),
  rental_sources: Type.Array(Type.String({ maxLength: 32 }), {
    maxItems: 4,
    description: 'Who says a rental runs now: operator or agent (the PATCH/agent fact), then marketplace_a and/or marketplace_b; empty when none',
  }),
  margin: Type.Optional(
    Type.Object(
      {
        days: Type.Integer(),
        from_day: Type.String({ format: 'date' }),
        to_day: Type.String({ format: 'date' }),
        earned_usd: Money(),
        platform_cut_usd: Nullable(Money()),
        electricity_usd: Nullable(Money()),
        gpuhq_charges_usd: Money(),
        margin_usd: Money(),
        estimate: Type.Boolean(),
        missing: Type.Array(Type.String()),
      },
      {
        description:
          "The last 7 days' margin (GET /reports/margin for one server): earned − platform cut − electricity − gpuhq's charges; present for callers who may read billing",
      },
    ),
  ),
  last_hello_at: Nullable(Timestamp()),
  enrolled_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  decommissioned_at: Nullable(Timestamp()),
})

export const ServerPatch = Type.Object(
  {
    name: Type.Optional(DisplayText({ minLength: 1, maxLength: 128 })),
    group_id: Type.Optional(Nullable(Uuid())),
    tags: Type.Optional(Type.Array(Tag, { maxItems: 64, uniqueItems: true })),
    electricity_usd_per_kwh: Type.Optional(Nullable(Money({ description: 'USD per kWh, e.g. "0.145", 0 to 10 (422 too_large above); null clears it' }))),
    rental_active: Type.Optional(
      Type.Boolean({
        description:
          "The operator's rental fact (the agent's rental.* events set the same fact). A marketplace's report is kept apart: rental_active stays true while a marketplace reports a rental, whatever this says",
      }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
)

/** GET /servers: Elysia's `t`, which coerces query strings. */
export const ServerListQuery = t.Object({
  ...PageQuery,
  presence: t.Optional(t.Union([t.Literal('online'), t.Literal('suspect'), t.Literal('offline')])),
  fsm_state: t.Optional(t.String({ maxLength: 64 })),
  marketplace: t.Optional(t.String({ maxLength: 64, description: "The row's marketplace (where it is rented or listed now): marketplace_a or marketplace_b" })),
  health: t.Optional(t.Union([t.Literal('ok'), t.Literal('warning'), t.Literal('critical')], { description: "The row's health" })),
  rental_state: t.Optional(
    t.Union([t.Literal('rented'), t.Literal('idle'), t.Literal('none')], { description: "The row's rental_state; none matches null (not offered)" }),
  ),
  group_id: t.Optional(t.String({ format: 'uuid' })),
  tag: t.Optional(t.String({ maxLength: 128, description: 'Exact match of a tag key (matching key and key:value) or of key:value' })),
  q: t.Optional(t.String({ maxLength: 128, description: 'Substring of the server name or hostname, case-insensitive' })),
})
export const ServerEventsQuery = t.Object({ ...PageQuery, kind: t.Optional(t.String({ maxLength: 64 })) })

export const MaintenanceBody = Type.Object({ reason: Type.Optional(Nullable(DisplayText({ maxLength: 256 }))) }, { additionalProperties: false })
export const MaintenanceDeclared = Type.Object({
  server_id: Uuid(),
  maintenance: Type.Object({ since: Timestamp(), reason: Nullable(Type.String()) }),
  announce_on: Type.Array(
    Type.Object({
      marketplace: MarketplaceId,
      external_machine_id: Type.String({ maxLength: 128 }),
      supported: Type.Boolean({ description: 'Whether the marketplace has a maintenance API' }),
      how: Type.String({ maxLength: 256, description: 'The request that announces the window there, or what to do instead' }),
    }),
    { maxItems: MARKETPLACES.length, description: 'The marketplaces this server is linked to; nothing was announced to their renters' },
  ),
})

export const KeepOn = Type.Object({ server_id: Uuid(), keep_on: Type.Array(MarketplaceId) })

const ServerEvent = Type.Object({
  id: Uuid(),
  server_id: Uuid(),
  kind: Type.String(),
  severity: Type.Union([Type.Literal('info'), Type.Literal('warning'), Type.Literal('error'), Type.Literal('critical')]),
  message: Type.String(),
  data: Nullable(Type.Record(Type.String(), Type.Unknown())),
  created_at: Timestamp(),
})
export const ServerEventPage = PageOf(ServerEvent, { maxItems: 200 })

export const Dashboard = Type.Object({
  ...Envelope,
  servers: Type.Object({
    total: Type.Integer(),
    online: Type.Integer(),
    suspect: Type.Integer(),
    offline: Type.Integer(),
    in_maintenance: Type.Integer(),
    rented: Type.Integer({ description: "Rows whose rental_state is rented (added alongside the specification's fields)" }),
    idle: Type.Integer({ description: 'Rows whose rental_state is idle: listed, nothing rented' }),
    health: Type.Object({ ok: Type.Integer(), warning: Type.Integer(), critical: Type.Integer() }, { description: 'Rows by health' }),
  }),
  gpus: Type.Object({
    total: Type.Integer(),
    rented: Type.Integer({ description: "GPUs rented now on servers not offline (the rows' rented_gpu_count)" }),
    idle: Type.Integer({ description: 'The other GPUs of listed or rented servers not offline: offered, not rented' }),
    unlisted: Type.Integer({ description: 'GPUs of servers not offline that are neither listed nor rented' }),
    offline: Type.Integer({ description: 'GPUs of offline servers; rented + idle + unlisted + offline = total' }),
    by_model: Type.Array(Type.Object({ model: Type.String(), count: Type.Integer() })),
  }),
  groups: Type.Array(Type.Object({ group_id: Nullable(Uuid()), servers: Type.Integer() })),
  revenue_today_usd: Money({ description: "The sum of the rows' revenue_today_usd (the same rows GET /servers answers this caller)" }),
})
