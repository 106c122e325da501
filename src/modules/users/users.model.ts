import { Type } from '@sinclair/typebox'
import { t } from 'elysia'
import { DisplayText, Nullable, PageOf, PageQuery, Timestamp, Uuid } from '../../platform/schemas'

export const MemberQuery = t.Object({ ...PageQuery })

const RoleSchema = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('operator'), Type.Literal('viewer')])

export const Me = Type.Object(
  {
    id: Uuid(),
    email: Type.String({ format: 'email', maxLength: 254 }),
    tenant_id: Uuid(),
    role: RoleSchema,
    display_name: Nullable(Type.String({ maxLength: 128 })),
    timezone: Type.String({ description: 'IANA time zone; drives the billing tiles', examples: ['Europe/Berlin'] }),
    locale: Type.String({ description: 'BCP 47 language tag', examples: ['en', 'de-DE'] }),
    created_at: Timestamp(),
  },
  { $id: 'Me' },
)

export const MePatch = Type.Object(
  {
    timezone: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'IANA time zone, e.g. America/New_York' })),
    locale: Type.Optional(Type.String({ minLength: 2, maxLength: 35, description: 'BCP 47 language tag' })),
    display_name: Type.Optional(Nullable(DisplayText({ minLength: 1, maxLength: 128 }))),
  },
  { additionalProperties: false, minProperties: 1 },
)

const Member = Type.Object({
  id: Uuid(),
  email: Type.String({ format: 'email' }),
  role: RoleSchema,
  display_name: Nullable(Type.String({ maxLength: 128 })),
  created_at: Timestamp(),
})

export const MemberPage = PageOf(Member, { maxItems: 200, cursorMaxLength: 512 })
