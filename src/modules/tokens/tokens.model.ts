import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { ALL_SCOPES } from '../../platform/access'
import { DisplayText, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'

export const PatQuery = t.Object({ ...PageQuery })

export const PatCreate = Type.Object(
  {
    name: DisplayText({ minLength: 1, maxLength: 128 }),
    scopes: Type.Optional(
      Type.Array(Type.String({ maxLength: 64 }), {
        maxItems: 32,
        description: `Default ["servers:read"]. Known scopes: ${ALL_SCOPES.join(', ')}. Never more than the creator's role allows.`,
      }),
    ),
    expires_at: Type.Optional(
      Nullable(Type.String({ maxLength: 64, description: 'Default 90 days from now, at most one year; null (non-expiring) is refused in production' })),
    ),
    server_allowlist: Type.Optional(
      Type.Array(Type.String({ format: 'uuid' }), { maxItems: 1000, description: 'Caveat: servers outside the list answer 404 to this token' }),
    ),
  },
  { additionalProperties: false },
)

const PatFields = {
  id: Uuid(),
  name: Type.String(),
  prefix: Type.String({ description: 'First characters of the token, to recognise it' }),
  user_id: Uuid(),
  scopes: Type.Array(Type.String()),
  server_allowlist: Nullable(Type.Array(Type.String())),
  expires_at: Nullable(Timestamp()),
  created_at: Timestamp(),
  last_used_at: Nullable(Timestamp()),
}
const Pat = Type.Object(PatFields)
export const PatCreated = Type.Object({ ...PatFields, token: Type.String({ description: 'The plaintext, shown only in this response' }) })
export const PatPage = PageOf(Pat, { maxItems: 200 })

export const InitCreate = Type.Object(
  {
    expected_fingerprint: Type.Optional(Nullable(Type.String({ maxLength: 128, description: 'Hardware fingerprint hash; a matching hint, not a credential' }))),
    server_id: Type.Optional(Nullable(Uuid({ description: 'Binds the token to this existing server' }))),
    purpose: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
    expires_in_s: Type.Optional(Type.Integer({ minimum: 60, maximum: 3600, description: 'Lifetime in seconds, 60..3600, default 3600' })),
  },
  { additionalProperties: false },
)
export const InitCreated = Type.Object({
  id: Uuid(),
  token: Type.String({
    description: 'gpuhq_init_… plaintext, shown only here. Give it to the agent on standard input or in a file, never on its command line.',
  }),
  expires_at: Timestamp(),
  server_id: Nullable(Uuid()),
  purpose: Nullable(Type.String()),
  expected_fingerprint: Nullable(Type.String()),
  install_command: Type.String(),
})
