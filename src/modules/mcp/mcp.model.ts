import { Type } from '@sinclair/typebox'
import { Nullable, Timestamp } from '../../platform/schemas'

const ClientView = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  connected_at: Timestamp(),
  last_used_at: Nullable(Timestamp()),
})

export const Client = ClientView

export const AccessBody = Type.Object(
  {
    enabled: Type.Boolean({ description: 'true enables (or keeps enabled); false disables and revokes the token' }),
    reissue: Type.Optional(Type.Boolean({ description: 'Issue a new secret for the same token; permissions and connected clients untouched' })),
    allowed_tools: Type.Optional(
      Type.Array(Type.String({ maxLength: 128 }), {
        maxItems: 64,
        description: 'Tool names (the catalogue is `tools` in the answer). Omitted on first enable: the read tools. [] enables with nothing allowed.',
      }),
    ),
  },
  { additionalProperties: false },
)

export const AccessAnswer = Type.Object({
  enabled: Type.Boolean(),
  groups: Type.Array(Type.Object({ key: Type.String(), description: Type.String() }), { description: 'Tool groups, in catalogue order' }),
  prefix: Nullable(Type.String(), { description: 'First characters of the token' }),
  issued_at: Nullable(Timestamp()),
  last_used_at: Nullable(Timestamp()),
  expires_at: Nullable(Timestamp()),
  endpoint: Type.String({ description: 'The gateway: PUBLIC_URL + /mcp' }),
  clients: Type.Array(ClientView),
  tools: Type.Array(
    Type.Object({
      name: Type.String(),
      group: Type.String(),
      mode: Type.Union([Type.Literal('read'), Type.Literal('write')]),
      allowed: Type.Boolean({ description: "The token's scopes cover the tool (allowed_tools, within the issuing member's role)" }),
      available: Type.Boolean({ description: 'The plan permits the tool (ai_access)' }),
    }),
  ),
  token: Type.Optional(Type.String({ description: 'gpuhq_mcp_… plaintext, only in the answer that issued it' })),
})

export const AuthorizeBody = Type.Object(
  {
    client_id: Type.String({ minLength: 1, maxLength: 64 }),
    redirect_uri: Type.String({ minLength: 1, maxLength: 512 }),
    code_challenge: Type.String({ minLength: 1, maxLength: 128, description: 'PKCE S256 challenge (43 base64url characters)' }),
    code_challenge_method: Type.Optional(Type.String({ maxLength: 16, description: 'S256 (the default here); plain is refused' })),
    state: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
    resource: Type.Optional(Type.String({ maxLength: 512, description: 'RFC 8707: PUBLIC_URL + /mcp when sent' })),
    scope: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: false },
)

export const AuthorizeAnswer = Type.Object({ redirect_to: Type.String({ description: 'The checked redirect URI with code, state and iss' }) })

export const TokenAnswer = Type.Object({
  access_token: Type.String(),
  token_type: Type.Literal('Bearer'),
  expires_in: Type.Integer(),
  refresh_token: Type.String(),
  scope: Type.String(),
})

export const RegisterAnswer = Type.Object({
  client_id: Type.String({ format: 'uuid' }),
  client_id_issued_at: Type.Integer(),
  client_name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  grant_types: Type.Array(Type.String()),
  response_types: Type.Array(Type.String()),
  token_endpoint_auth_method: Type.Literal('none'),
  client_uri: Type.Optional(Type.String()),
  scope: Type.Optional(Type.String()),
})

export const Whoami = Type.Object({
  tenant_id: Type.String({ format: 'uuid' }),
  tenant_name: Type.String(),
  user_id: Type.String({ format: 'uuid' }),
  role: Type.String(),
  token_kind: Type.Union([Type.Literal('tenant'), Type.Literal('oauth')]),
  client: Nullable(Type.Object({ id: Type.String(), name: Type.String() })),
  expires_at: Nullable(Timestamp()),
  endpoint: Type.String(),
  allowed_tools: Type.Array(Type.String()),
  available: Type.Boolean(),
})
