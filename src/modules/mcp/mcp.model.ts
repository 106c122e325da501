import { type TSchema, Type } from '@sinclair/typebox'
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

/**
 * An OAuth endpoint's error (RFC 6749 §5.2, RFC 7591 §3.2.2, RFC 7009 §2.2.1): what the token,
 * registration and revocation endpoints answer instead of a problem document
 * (docs/conventions.md "Errors"). Registered once as the model `OAuthError`.
 */
export const OAuthErrorSchema = Type.Object(
  {
    error: Type.String({
      description:
        'The RFC code: invalid_request, invalid_grant, invalid_target, unsupported_grant_type (token); invalid_redirect_uri, invalid_client_metadata (registration); unsupported_token_type (revocation); temporarily_unavailable (429, 503), server_error (500)',
    }),
    error_description: Type.String({ maxLength: 512, description: 'What was wrong, for the developer (printable ASCII, no quotes)' }),
  },
  { $id: 'OAuthError', description: 'OAuth error (application/json, not a problem document)', 'x-media-type': 'application/json' },
)

/**
 * The response map of an OAuth endpoint: its success schema and the OAuth error for each error
 * status it lists (and 500), as `responses()` does with problem documents for every other route.
 */
export function oauthResponses<S extends Record<number, TSchema>>(success: S, errorStatuses: number[]): S {
  const out: Record<number, TSchema | string> = { ...success }
  for (const status of new Set([...errorStatuses, 500])) out[status] = 'OAuthError'
  return out as unknown as S
}

const TokenFields = {
  grant_type: Type.String({ maxLength: 64, description: 'authorization_code or refresh_token (anything else: unsupported_grant_type)' }),
  code: Type.Optional(Type.String({ maxLength: 512, description: 'authorization_code: the code from the redirect' })),
  redirect_uri: Type.Optional(Type.String({ maxLength: 512, description: 'authorization_code: the redirect URI the code was issued for' })),
  client_id: Type.Optional(Type.String({ maxLength: 64, description: 'Both grants: the client_id from registration' })),
  code_verifier: Type.Optional(Type.String({ maxLength: 1024, description: 'authorization_code: the PKCE verifier, 43-128 unreserved characters' })),
  refresh_token: Type.Optional(Type.String({ maxLength: 512, description: 'refresh_token: the current refresh token (rotated by this call)' })),
  resource: Type.Optional(Type.String({ maxLength: 512, description: 'RFC 8707: PUBLIC_URL + /mcp (or PUBLIC_URL) when sent' })),
  scope: Type.Optional(Type.String({ maxLength: 1024, description: 'Ignored: the only scope is mcp' })),
}

/** POST /mcp/token: the OAuth form (application/x-www-form-urlencoded), JSON accepted too. Unknown parameters are ignored (RFC 6749 §3.2). */
export const TokenBody = Type.Object(TokenFields, { additionalProperties: true, description: 'OAuth token request (form or JSON)' })

/** POST /mcp/revoke (RFC 7009): the form, JSON accepted too. */
export const RevokeBody = Type.Object(
  {
    token: Type.String({ maxLength: 512, description: 'The access or refresh token to revoke' }),
    token_type_hint: Type.Optional(Type.String({ maxLength: 32, description: 'access_token or refresh_token; a hint only' })),
    client_id: Type.String({ maxLength: 64, description: 'The client the token was issued to' }),
  },
  { additionalProperties: true, description: 'OAuth revocation request (form or JSON)' },
)

/** POST /mcp/register: RFC 7591 client metadata. Unknown members are ignored (§2). */
export const RegisterBody = Type.Object(
  {
    client_name: Type.String({ minLength: 1, maxLength: 128 }),
    redirect_uris: Type.Array(Type.String({ maxLength: 512 }), {
      minItems: 1,
      maxItems: 10,
      description: 'https, or http on 127.0.0.1, [::1] or localhost (any port at authorization time); no fragment',
    }),
    token_endpoint_auth_method: Type.Optional(Type.String({ maxLength: 64, description: 'none (public clients only), the default' })),
    grant_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 4, description: 'authorization_code and optionally refresh_token' })),
    response_types: Type.Optional(Type.Array(Type.String({ maxLength: 64 }), { maxItems: 4, description: '["code"]' })),
    client_uri: Type.Optional(Type.String({ maxLength: 512, description: 'https URL' })),
    logo_uri: Type.Optional(Type.String({ maxLength: 512, description: 'https URL' })),
    tos_uri: Type.Optional(Type.String({ maxLength: 512, description: 'https URL' })),
    policy_uri: Type.Optional(Type.String({ maxLength: 512, description: 'https URL' })),
    scope: Type.Optional(Type.String({ maxLength: 1024 })),
  },
  { additionalProperties: true, description: 'OAuth dynamic client registration (RFC 7591)' },
)
