import { Type } from '@sinclair/typebox'
import { DisplayText, Timestamp, Uuid } from '../../platform/schemas'

export const Group = Type.Object({
  id: Uuid(),
  name: Type.String(),
  position: Type.Integer(),
  servers: Type.Integer({ description: 'Managed servers in the group' }),
  version: Type.Integer(),
  created_at: Timestamp(),
})
export const GroupCreate = Type.Object(
  { name: DisplayText({ minLength: 1, maxLength: 128 }), position: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) },
  { additionalProperties: false },
)
export const GroupPatch = Type.Object(
  { name: Type.Optional(DisplayText({ minLength: 1, maxLength: 128 })), position: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })) },
  { additionalProperties: false, minProperties: 1 },
)
