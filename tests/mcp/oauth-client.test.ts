import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as oauth from 'oauth4webapi'
import { call, newTenant, setPlan, type Member } from '../support/access'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { enableAccess } from '../support/mcp'

/**
 * Issue 36.1: the OAuth endpoints as a generic OAuth client reads them. oauth4webapi (a widely used,
 * strict client library nobody here wrote) runs the whole flow against the real app: discovery of
 * both protected-resource documents (RFC 9728) and the authorization server (RFC 8414), dynamic
 * registration (RFC 7591), authorization code with PKCE S256 (the test plays the browser and the
 * owner), token, refresh and revocation (RFC 7009). Then the seven refusals of the issue, each of
 * which oauth4webapi must READ as an OAuth error with the right `error` code (it reads only an
 * application/json body with `error`), and the authorization errors that go back to the client's
 * redirect URI with `error`, `state` and `iss` (RFC 6749 §4.1.2.1, RFC 9207).
 */

let app: TestApp
let owner: Member
let as: oauth.AuthorizationServer
const REDIRECT = 'http://127.0.0.1:47999/oauth/callback'
const insecure = { [oauth.allowInsecureRequests]: true } as const

beforeAll(async () => {
  const port = freePort()
  app = await startTestApp({ LOG_LEVEL: 'silent', PUBLIC_URL: `http://127.0.0.1:${port}` }, { port })
  owner = await newTenant(app, 'oauth4webapi')
  await setPlan(app, owner.tenantId, 'pro')
  await enableAccess(app, owner)
  const issuer = new URL(app.url)
  as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }))
})
afterAll(() => app.close())

async function register(metadata: Record<string, unknown> = {}): Promise<oauth.Client> {
  const res = await oauth.dynamicClientRegistrationRequest(
    as,
    { client_name: 'oauth4webapi', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', ...metadata },
    insecure,
  )
  return (await oauth.processDynamicClientRegistrationResponse(res)) as oauth.Client
}

/** The browser at the authorization endpoint, then the owner approving: the callback URL the client receives. */
async function approve(client: oauth.Client, challenge: string, state: string): Promise<URL> {
  const page = new URL(as.authorization_endpoint!)
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
    resource: `${app.url}/mcp`,
  }))
    page.searchParams.set(k, v)
  expect((await fetch(page, { redirect: 'manual' })).status).toBe(200)
  const res = await call(app, 'POST', '/mcp/authorize', owner, {
    json: { client_id: client.client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state, resource: `${app.url}/mcp` },
  })
  expect(res.status).toBe(200)
  return new URL(((await res.json()) as { redirect_to: string }).redirect_to)
}

async function codeFlow(client: oauth.Client) {
  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const callback = await approve(client, await oauth.calculatePKCECodeChallenge(verifier), state)
  const params = oauth.validateAuthResponse(as, client, callback, state)
  return { params, verifier }
}

const exchange = (client: oauth.Client, params: URLSearchParams, verifier: string, extra?: Record<string, string>) =>
  oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT, verifier, { ...insecure, ...(extra ? { additionalParameters: extra } : {}) })

/** What oauth4webapi made of a refused request: the OAuth error it read, or how it failed to read one. */
async function readRefusal(attempt: () => Promise<unknown>): Promise<{ error: string; status: number } | { unreadable: string }> {
  try {
    await attempt()
    return { unreadable: 'not refused' }
  } catch (e) {
    if (e instanceof oauth.ResponseBodyError) return { error: e.error, status: e.status }
    return { unreadable: `${(e as Error).constructor.name}: ${(e as Error).message}` }
  }
}

describe('oauth4webapi through the whole flow', () => {
  test('discovery: the authorization server, and the protected-resource documents at both addresses (RFC 9728 §3.3)', async () => {
    expect(as).toMatchObject({
      issuer: app.url,
      code_challenge_methods_supported: ['S256'],
      registration_endpoint: `${app.url}/api/v1/mcp/register`,
      revocation_endpoint: `${app.url}/api/v1/mcp/revoke`,
    })
    // The gateway's document, at the path-inserted address; and the origin's, at the root, each naming
    // the resource its address was made from, as a strict client checks.
    for (const resource of [new URL(`${app.url}/mcp`), new URL(app.url)]) {
      const doc = await oauth.processResourceDiscoveryResponse(resource, await oauth.resourceDiscoveryRequest(resource, insecure))
      expect({ resource: new URL(doc.resource).href, servers: doc.authorization_servers }).toEqual({ resource: resource.href, servers: [app.url] })
    }
  })

  test('registration, code with PKCE S256, token, a call to the gateway, refresh, revocation', async () => {
    const client = await register()
    const { params, verifier } = await codeFlow(client)
    const tokens = await oauth.processAuthorizationCodeResponse(as, client, await exchange(client, params, verifier))
    expect(tokens.token_type).toBe('bearer')
    const whoami = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${app.url}/api/v1/mcp/whoami`), undefined, undefined, insecure)
    expect(whoami.status).toBe(200)

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    )
    expect(refreshed.access_token).not.toBe(tokens.access_token)

    // Revoking the refresh token ends the authorization: its access token stops at once.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure))
    const after = await fetch(`${app.url}/api/v1/mcp/whoami`, { headers: { authorization: `Bearer ${refreshed.access_token}` } })
    expect(after.status).toBe(401)
    // An unknown token is revoked all the same (RFC 7009 §2.2); the tenant token is not revoked here.
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), 'gpuhq_mcprt_unknown', insecure))
    const { token } = await enableAccess(app, owner)
    expect(await readRefusal(async () => oauth.processRevocationResponse(await oauth.revocationRequest(as, client, oauth.None(), token, insecure)))).toEqual({
      error: 'unsupported_token_type',
      status: 400,
    })
  })
})

describe('the seven refusals, each read by oauth4webapi as an OAuth error', () => {
  test('code replay, wrong verifier, spent refresh token, foreign resource, client_credentials, confidential registration, http redirect', async () => {
    const client = await register()
    const replay = await codeFlow(client)
    await oauth.processAuthorizationCodeResponse(as, client, await exchange(client, replay.params, replay.verifier))
    const wrong = await codeFlow(client)
    const foreign = await codeFlow(client)
    const spent = await codeFlow(client)
    const first = await oauth.processAuthorizationCodeResponse(as, client, await exchange(client, spent.params, spent.verifier))
    await oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure))

    const refusals = {
      code_replay: await readRefusal(async () => oauth.processAuthorizationCodeResponse(as, client, await exchange(client, replay.params, replay.verifier))),
      wrong_verifier: await readRefusal(async () =>
        oauth.processAuthorizationCodeResponse(as, client, await exchange(client, wrong.params, oauth.generateRandomCodeVerifier())),
      ),
      spent_refresh_token: await readRefusal(async () =>
        oauth.processRefreshTokenResponse(as, client, await oauth.refreshTokenGrantRequest(as, client, oauth.None(), first.refresh_token!, insecure)),
      ),
      foreign_resource: await readRefusal(async () =>
        oauth.processAuthorizationCodeResponse(as, client, await exchange(client, foreign.params, foreign.verifier, { resource: 'https://evil.example/mcp' })),
      ),
      client_credentials: await readRefusal(async () =>
        oauth.processGenericTokenEndpointResponse(
          as,
          client,
          await oauth.clientCredentialsGrantRequest(as, client, oauth.None(), new URLSearchParams({ scope: 'mcp' }), insecure),
        ),
      ),
      confidential_registration: await readRefusal(() => register({ token_endpoint_auth_method: 'client_secret_basic' })),
      http_redirect: await readRefusal(() => register({ redirect_uris: ['http://evil.example/callback'] })),
    }
    expect(refusals).toEqual({
      code_replay: { error: 'invalid_grant', status: 400 },
      wrong_verifier: { error: 'invalid_grant', status: 400 },
      spent_refresh_token: { error: 'invalid_grant', status: 400 },
      foreign_resource: { error: 'invalid_target', status: 400 },
      client_credentials: { error: 'unsupported_grant_type', status: 400 },
      confidential_registration: { error: 'invalid_client_metadata', status: 400 },
      http_redirect: { error: 'invalid_redirect_uri', status: 400 },
    })
  })

  test('a body the endpoints cannot read is an OAuth error too, application/json and no-store, never a problem document', async () => {
    const answers: Record<string, unknown>[] = []
    for (const [path, init] of [
      ['/api/v1/mcp/token', { headers: { 'content-type': 'text/plain' }, body: 'grant_type=authorization_code' }],
      ['/api/v1/mcp/token', { headers: { 'content-type': 'application/json' }, body: '{"grant_type":' }],
      ['/api/v1/mcp/token', { headers: { 'content-type': 'application/json' }, body: '{"grant_type":42}' }],
      ['/api/v1/mcp/register', { headers: { 'content-type': 'application/json' }, body: '{"client_name":"x","redirect_uris":"https://a.example/cb"}' }],
      ['/api/v1/mcp/revoke', { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'token_type_hint=access_token' }],
    ] as const) {
      const res = await app.fetch(path, { method: 'POST', ...init })
      const body = (await res.json()) as Record<string, unknown>
      answers.push({
        path,
        status: res.status,
        type: res.headers.get('content-type'),
        cache: res.headers.get('cache-control'),
        error: body.error,
        keys: Object.keys(body).sort(),
      })
    }
    const one = (path: string, status: number, error: string) => ({
      path,
      status,
      type: 'application/json',
      cache: 'no-store',
      error,
      keys: ['error', 'error_description'],
    })
    expect(answers).toEqual([
      one('/api/v1/mcp/token', 415, 'invalid_request'),
      one('/api/v1/mcp/token', 400, 'invalid_request'),
      one('/api/v1/mcp/token', 400, 'invalid_request'),
      one('/api/v1/mcp/register', 400, 'invalid_redirect_uri'),
      one('/api/v1/mcp/revoke', 400, 'invalid_request'),
    ])
  })
})

describe('authorization errors go back to the client where client and redirect URI are valid', () => {
  test('plain PKCE, no challenge, response_type=token, a foreign resource: 302 to the redirect URI with error, state and iss', async () => {
    const client = await register()
    const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())
    const base = {
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      state: 'st-1',
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }
    const cases: [string, Record<string, string | undefined>, string][] = [
      ['plain', { code_challenge_method: 'plain' }, 'invalid_request'],
      ['no method (plain)', { code_challenge_method: undefined }, 'invalid_request'],
      ['no challenge', { code_challenge: undefined }, 'invalid_request'],
      ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
      ['foreign resource', { resource: 'https://evil.example/mcp' }, 'invalid_target'],
    ]
    const seen = []
    for (const [name, change, error] of cases) {
      const url = new URL(as.authorization_endpoint!)
      for (const [k, v] of Object.entries({ ...base, ...change })) if (v !== undefined) url.searchParams.set(k, v)
      const res = await fetch(url, { redirect: 'manual' })
      const location = res.headers.get('location')
      let read: string
      try {
        oauth.validateAuthResponse(as, client, new URL(location ?? REDIRECT), 'st-1')
        read = 'no error'
      } catch (e) {
        read = e instanceof oauth.AuthorizationResponseError ? e.error : `unreadable: ${(e as Error).message}`
      }
      seen.push({ name, status: res.status, to: location ? `${new URL(location).origin}${new URL(location).pathname}` : null, read })
      expect({ name, error }).toEqual({ name, error: read })
    }
    expect(seen.every((s) => s.status === 302 && s.to === REDIRECT)).toBe(true)
  })

  test('an unknown client or an unregistered redirect URI gets an error page, never a redirect', async () => {
    const client = await register()
    const challenge = await oauth.calculatePKCECodeChallenge(oauth.generateRandomCodeVerifier())
    for (const [client_id, redirect_uri] of [
      [crypto.randomUUID(), REDIRECT],
      [client.client_id, 'https://evil.example/cb'],
      [client.client_id, 'http://127.0.0.1:47999/oauth/callback/x'],
    ]) {
      const url = new URL(as.authorization_endpoint!)
      for (const [k, v] of Object.entries({ response_type: 'token', client_id, redirect_uri, code_challenge: challenge, code_challenge_method: 'plain' }))
        url.searchParams.set(k, v!)
      const res = await fetch(url, { redirect: 'manual' })
      expect({ status: res.status, location: res.headers.get('location'), type: res.headers.get('content-type') }).toEqual({
        status: 400,
        location: null,
        type: 'text/html; charset=utf-8',
      })
    }
  })
})
