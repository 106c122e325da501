import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Nullable, Uuid } from '../../../platform/schemas'
import { MarketplaceId } from '../../../platform/marketplace-id'

/** GET /marketplaces/links/candidates (Elysia `t`: query strings are coerced). */
export const CandidatesQuery = t.Object({
  server_id: t.String({ format: 'uuid', description: 'The server the machines are ranked against' }),
  marketplace: MarketplaceId,
})

const Evidence = Type.Object(
  {
    hostname: Type.Boolean(),
    public_ip: Type.Boolean(),
    gpu: Type.Boolean({ description: 'Normalised model and count both equal' }),
    disk: Type.Boolean({ description: "Within 15 % of the server's disk_gb" }),
    ports: Type.Boolean({ description: 'The port ranges hold as many ports (the bounds are not compared)' }),
  },
  { description: 'Each fact agrees on both sides; a fact missing on either side never counts as a match' },
)

const Candidate = Type.Object({
  external_machine_id: Type.String({ maxLength: 128 }),
  hostname: Nullable(Type.String({ maxLength: 253 })),
  gpu: Nullable(Type.String({ maxLength: 128, description: "The marketplace's own GPU name" })),
  gpu_count: Nullable(Type.Integer()),
  gpu_occupancy: Nullable(Type.String({ maxLength: 64, description: 'One character per card, as the marketplace prints it' })),
  linked_server_id: Nullable(Uuid({ description: 'The server of yours already linked to this machine; null means free to take' })),
  evidence: Evidence,
  matched: Type.Integer({ minimum: 0, maximum: 5, description: 'How many evidence facts agree (ordering only)' }),
  suggested: Type.Boolean({ description: 'At least three facts agree; it only highlights, it never binds' }),
})

const Known = Type.Object(
  {
    hostname: Nullable(Type.String({ maxLength: 253 })),
    public_ip: Nullable(Type.String({ maxLength: 45 })),
    gpu: Nullable(Type.String({ maxLength: 128 })),
    gpu_count: Nullable(Type.Integer()),
    gpu_occupancy: Nullable(Type.String({ maxLength: 64 })),
    disk_gb: Nullable(Type.Integer()),
    port_range: Nullable(Type.String({ maxLength: 32 })),
  },
  { description: "The server's own facts, from its agent's registration" },
)

export const CandidateList = Type.Object({
  candidates: Type.Array(Candidate, { maxItems: 512, description: 'Strongest first: matched descending, then external_machine_id' }),
  known: Known,
})
