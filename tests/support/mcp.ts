import { createHash, randomBytes } from 'node:crypto'
import { expect } from 'bun:test'
import { call, type Caller } from './access'
import type { TestApp } from './app'

/** A PKCE pair (RFC 7636): a 43-character verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export type Registered = { client_id: string; redirect_uris: string[]; client_name: string }

/** POST /mcp/register (RFC 7591), public. */
export async function registerClient(app: TestApp, body: Record<string, unknown> = {}): Promise<Registered> {
  const res = await app.fetch('/api/v1/mcp/register', {
    method: 'POST',
    json: { client_name: 'Test assistant', redirect_uris: ['http://127.0.0.1:33418/callback'], ...body },
  })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 201 })
  return JSON.parse(text) as Registered
}

/**
 * Enables AI access for the member's tenant (the read tools unless told), with a fresh secret
 * (`reissue`, so the answer always carries `token`); answers the PUT /mcp/access body.
 */
export async function enableAccess(app: TestApp, member: Caller, allowedTools?: string[]): Promise<{ token: string; [k: string]: unknown }> {
  const res = await call(app, 'PUT', '/mcp/access', member, {
    json: { enabled: true, reissue: true, ...(allowedTools ? { allowed_tools: allowedTools } : {}) },
  })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  return JSON.parse(text)
}

/** The form POST /mcp/token an OAuth client sends. */
export function tokenRequest(app: TestApp, form: Record<string, string>): Promise<Response> {
  return app.fetch('/api/v1/mcp/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(form).toString(),
  })
}

/** The whole flow without an SDK: register, authorize as the member, exchange the code. Access must be on. */
export async function connectClient(app: TestApp, member: Caller) {
  const client = await registerClient(app)
  const { verifier, challenge } = pkce()
  const redirect_uri = client.redirect_uris[0]!
  const res = await call(app, 'POST', '/mcp/authorize', member, {
    json: { client_id: client.client_id, redirect_uri, code_challenge: challenge, state: 'xyz' },
  })
  const text = await res.text()
  expect({ status: res.status, text }).toMatchObject({ status: 200 })
  const code = new URL(JSON.parse(text).redirect_to).searchParams.get('code')!
  const tokens = await tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri, client_id: client.client_id, code_verifier: verifier })
  const body = (await tokens.json()) as { access_token: string; refresh_token: string }
  expect(tokens.status).toBe(200)
  return { client, ...body }
}
