import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'

const ActorKind = t.Union([t.Literal('user'), t.Literal('pat'), t.Literal('agent'), t.Literal('mcp'), t.Literal('system')])
const Outcome = t.Union([t.Literal('succeeded'), t.Literal('denied'), t.Literal('failed')])

export const AuditQuery = t.Object({
  ...PageQuery,
  actor_kind: t.Optional(ActorKind),
  actor_id: t.Optional(t.String({ maxLength: 64 })),
  operation: t.Optional(t.String({ maxLength: 128 })),
  outcome: t.Optional(Outcome),
  from: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; inclusive' })),
  to: t.Optional(t.String({ maxLength: 64, description: 'RFC 3339; exclusive' })),
})

const AuditEntry = Type.Object({
  id: Uuid(),
  actor: Type.Object({ kind: Type.String(), id: Nullable(Type.String()) }),
  operation: Type.String({ description: 'Verb such as tokens.create, or "METHOD /route" for writes recorded by the request layer' }),
  target: Nullable(Type.Object({ kind: Type.String(), id: Nullable(Type.String()) })),
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
  outcome: Type.Union([Type.Literal('succeeded'), Type.Literal('denied'), Type.Literal('failed')]),
  status: Nullable(Type.Integer()),
  request_id: Nullable(Type.String()),
  detail: Nullable(Type.String({ maxLength: 512 })),
  created_at: Timestamp(),
})

export const AuditPage = PageOf(AuditEntry, { maxItems: 200 })
