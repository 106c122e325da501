import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { type OAuthClientProvider, UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js'
import { call, insertServer, newTenant, setPlan, type Member } from '../support/access'
import { freePort, startTestApp, type TestApp } from '../support/app'
import { connectClient, enableAccess, pkce, registerClient, tokenRequest } from '../support/mcp'

/**
 * Issue 20: AI-assistant access against the official MCP TypeScript SDK client. The state table of
 * PUT /mcp/access; the SDK client through the whole OAuth flow (discovery, RFC 7591 registration,
 * authorize with PKCE S256 as the owner, token, refresh after expiry) and then initialize,
 * tools/list and tools/call; every failing OAuth case of the reference refused; and the gateway's
 * own limits (401 with resource metadata, 403 insufficient_scope, plan, Origin, 405).
 */

let app: TestApp
let owner: Member
let rig: string
const REDIRECT = 'http://127.0.0.1:47123/callback'

beforeAll(async () => {
  const port = freePort()
  app = await startTestApp({ LOG_LEVEL: 'silent', PUBLIC_URL: `http://127.0.0.1:${port}` }, { port })
  owner = await newTenant(app, 'mcp')
  await setPlan(app, owner.tenantId, 'pro')
  rig = await insertServer(app, owner.tenantId, 'rig-mcp')
})
afterAll(() => app.close())

const access = async (m: Member = owner) => (await call(app, 'GET', '/mcp/access', m)).json() as Promise<any>
const put = (json: unknown, m: Member = owner) => call(app, 'PUT', '/mcp/access', m, { json })
const whoami = (token: string) => app.fetch('/api/v1/mcp/whoami', { headers: { authorization: `Bearer ${token}` } })
const advance = (seconds: number) => app.fetch('/api/v1/_test/clock', { method: 'POST', json: { advance_seconds: seconds } })

/** An in-memory OAuth client: the test plays the browser and the owner at the consent step. */
class TestProvider implements OAuthClientProvider {
  authUrl?: URL
  private client?: OAuthClientInformationMixed
  private saved?: OAuthTokens
  private verifier?: string
  readonly stateValue = crypto.randomUUID()
  get redirectUrl() {
    return REDIRECT
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'SDK test assistant',
      redirect_uris: [REDIRECT],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    }
  }
  state() {
    return this.stateValue
  }
  clientInformation() {
    return this.client
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.client = i
  }
  tokens() {
    return this.saved
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t
  }
  redirectToAuthorization(url: URL) {
    this.authUrl = url
  }
  saveCodeVerifier(v: string) {
    this.verifier = v
  }
  codeVerifier() {
    return this.verifier!
  }
}

describe('the access token (state table)', () => {
  test('on a plan without AI access every AI-access operation answers 403 feature_not_entitled', async () => {
    const starter = await newTenant(app, 'mcp-starter')
    await setPlan(app, starter.tenantId, 'starter')
    for (const res of [await call(app, 'GET', '/mcp/access', starter), await put({ enabled: true }, starter)]) {
      expect(res.status).toBe(403)
      expect(((await res.json()) as any).code).toBe('feature_not_entitled')
    }
  })

  test('first enable: read tools only, the gpuhq_mcp_ token once, stored as SHA-256', async () => {
    const res = await put({ enabled: true })
    expect(res.status).toBe(200)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const body = (await res.json()) as any
    expect(body.token).toMatch(/^gpuhq_mcp_[0-9A-Za-z]{46}$/)
    expect(body.prefix).toBe(body.token.slice(0, 14))
    expect(body.endpoint).toBe(`${app.url}/mcp`)
    expect(body.groups.map((g: any) => g.key)).toEqual(['fleet', 'metrics', 'commands', 'billing', 'earnings', 'marketplaces', 'strategy', 'alerts'])
    for (const t of body.tools)
      expect({ name: t.name, allowed: t.allowed, available: t.available }).toEqual({ name: t.name, allowed: t.mode === 'read', available: true })
    const stored = (await app.deps.db.get(sql`SELECT token_hash FROM mcp_access WHERE tenant_id = ${owner.tenantId}`)) as { token_hash: string }
    expect(stored.token_hash).toBe(new Bun.CryptoHasher('sha256').update(body.token).digest('hex'))
    expect(JSON.stringify(await access())).not.toContain(body.token)
    expect((await whoami(body.token)).status).toBe(200)
  })

  test('enabled again rewrites the scopes with the secret unchanged; reissue changes only the secret; an unknown tool is 422', async () => {
    const first = (await (await put({ enabled: true, reissue: true })).json()) as any
    const rescoped = await put({ enabled: true, allowed_tools: ['fleet.list_servers', 'commands.send'] })
    const r = (await rescoped.json()) as any
    expect(r.token).toBeUndefined()
    expect(r.tools.filter((t: any) => t.allowed).map((t: any) => t.name)).toEqual(['fleet.list_servers', 'commands.send'])
    const who = (await (await whoami(first.token)).json()) as any
    expect(who.allowed_tools).toEqual(['fleet.list_servers', 'commands.send'])

    const bad = await put({ enabled: true, allowed_tools: ['fleet.list_servers', 'rm.rf'] })
    expect(bad.status).toBe(422)
    expect(((await bad.json()) as any).errors[0]).toEqual({ path: '/allowed_tools/1', code: 'unknown_tool' })

    const reissued = (await (await put({ enabled: true, reissue: true })).json()) as any
    expect(reissued.token).not.toBe(first.token)
    expect(reissued.tools.filter((t: any) => t.allowed).map((t: any) => t.name)).toEqual(['fleet.list_servers', 'commands.send'])
    expect((await whoami(first.token)).status).toBe(401)
    expect((await whoami(reissued.token)).status).toBe(200)

    const none = (await (await put({ enabled: true, allowed_tools: [] })).json()) as any
    expect(none.enabled).toBe(true)
    expect(none.tools.some((t: any) => t.allowed)).toBe(false)
  })

  test('disable revokes the token and every connected client', async () => {
    const on = await enableAccess(app, owner, ['fleet.list_servers'])
    const conn = await connectClient(app, owner)
    expect((await whoami(conn.access_token)).status).toBe(200)
    expect((await access()).clients.map((c: any) => c.id)).toContain(conn.client.client_id)
    await put({ enabled: false })
    expect((await whoami(on.token as string)).status).toBe(401)
    expect((await whoami(conn.access_token)).status).toBe(401)
    const view = await access()
    expect({ enabled: view.enabled, prefix: view.prefix, clients: view.clients }).toEqual({ enabled: false, prefix: null, clients: [] })
  })
})

describe('OAuth for connecting clients', () => {
  test('the metadata documents: protected resource at both addresses, authorization server with S256 and registration', async () => {
    // RFC 9728 §3.3: each names the resource its address was made from (the origin at the root).
    for (const [path, resource] of [
      ['/.well-known/oauth-protected-resource', app.url],
      ['/.well-known/oauth-protected-resource/mcp', `${app.url}/mcp`],
    ]) {
      const prm = (await (await app.fetch(path!)).json()) as any
      expect(prm).toMatchObject({ resource, authorization_servers: [app.url] })
    }
    const as = (await (await app.fetch('/.well-known/oauth-authorization-server')).json()) as any
    expect(as).toMatchObject({
      issuer: app.url,
      code_challenge_methods_supported: ['S256'],
      registration_endpoint: `${app.url}/api/v1/mcp/register`,
      token_endpoint: `${app.url}/api/v1/mcp/token`,
      authorization_endpoint: `${app.url}/api/v1/mcp/authorize`,
      response_types_supported: ['code'],
    })
  })

  test('registration validates its metadata: https or loopback redirect URIs, a name, public clients only', async () => {
    const reg = (json: unknown) => app.fetch('/api/v1/mcp/register', { method: 'POST', json })
    for (const [json, error] of [
      [{ client_name: 'x', redirect_uris: ['http://evil.example/cb'] }, 'invalid_redirect_uri'],
      [{ client_name: 'x', redirect_uris: ['https://ok.example/cb#frag'] }, 'invalid_redirect_uri'],
      [{ client_name: 'x', redirect_uris: [] }, 'invalid_redirect_uri'],
      [{ redirect_uris: ['https://ok.example/cb'] }, 'invalid_client_metadata'],
      [{ client_name: 'x', redirect_uris: ['https://ok.example/cb'], token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
      [{ client_name: 'x', redirect_uris: ['https://ok.example/cb'], grant_types: ['implicit'] }, 'invalid_client_metadata'],
    ] as const) {
      const res = await reg(json)
      expect({ status: res.status, error: ((await res.json()) as any).error }).toEqual({ status: 400, error })
    }
  })

  test('authorize: exact redirect match (loopback port free), S256 only, state unchanged, access must be on', async () => {
    await enableAccess(app, owner)
    const c = await registerClient(app, { redirect_uris: ['http://127.0.0.1:33418/callback', 'https://app.example/cb'] })
    const { challenge } = pkce()
    const authorize = (json: Record<string, unknown>) =>
      call(app, 'POST', '/mcp/authorize', owner, { json: { client_id: c.client_id, code_challenge: challenge, ...json } })
    for (const redirect_uri of [
      'https://app.example/cb/',
      'https://app.example/c',
      'https://app.example/cb?x=1',
      'https://APP.example/cb',
      'http://127.0.0.1:33418/callback/x',
    ]) {
      const res = await authorize({ redirect_uri })
      expect({ redirect_uri, status: res.status }).toEqual({ redirect_uri, status: 422 })
    }
    const loop = await authorize({ redirect_uri: 'http://127.0.0.1:50001/callback', state: 'a b&c' })
    expect(loop.status).toBe(200)
    const to = new URL(((await loop.json()) as any).redirect_to)
    expect(`${to.origin}${to.pathname}`).toBe('http://127.0.0.1:50001/callback')
    expect(to.searchParams.get('state')).toBe('a b&c')
    expect(to.searchParams.get('code')).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(to.searchParams.get('code_challenge')).toBeNull()
    expect((await authorize({ redirect_uri: 'https://app.example/cb', code_challenge_method: 'plain' })).status).toBe(422)
    expect((await call(app, 'POST', '/mcp/authorize', owner, { json: { client_id: c.client_id, redirect_uri: 'https://app.example/cb' } })).status).toBe(422)
    expect((await authorize({ redirect_uri: 'https://app.example/cb', code_challenge: 'short' })).status).toBe(422)
    expect(
      (
        await call(app, 'POST', '/mcp/authorize', owner, {
          json: { client_id: crypto.randomUUID(), redirect_uri: 'https://app.example/cb', code_challenge: challenge },
        })
      ).status,
    ).toBe(422)
    // The consent page answers an unregistered redirect URI with an error page, never a redirect.
    const page = await app.fetch(
      `/api/v1/mcp/authorize?response_type=code&client_id=${c.client_id}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}&code_challenge=${challenge}&code_challenge_method=S256`,
      { redirect: 'manual' },
    )
    expect({ status: page.status, location: page.headers.get('location') }).toEqual({ status: 400, location: null })
    // Access switched off: 403 (the spec's errors for this operation are 401, 403, 422), no code issued.
    await put({ enabled: false })
    const off = await authorize({ redirect_uri: 'https://app.example/cb' })
    expect({ status: off.status, code: ((await off.json()) as any).code }).toEqual({ status: 403, code: 'forbidden' })
    await enableAccess(app, owner)
    // With client and redirect URI valid, plain goes back to the client as an OAuth error (tests/mcp/oauth-client.test.ts).
    const plainPage = await app.fetch(
      `/api/v1/mcp/authorize?response_type=code&client_id=${c.client_id}&redirect_uri=${encodeURIComponent('https://app.example/cb')}&code_challenge=${challenge}&code_challenge_method=plain&state=s1`,
      { redirect: 'manual' },
    )
    const back = new URL(plainPage.headers.get('location')!)
    expect({
      status: plainPage.status,
      to: `${back.origin}${back.pathname}`,
      error: back.searchParams.get('error'),
      state: back.searchParams.get('state'),
    }).toEqual({
      status: 302,
      to: 'https://app.example/cb',
      error: 'invalid_request',
      state: 's1',
    })
  })

  test('loopback redirect URIs are compared parsed (RFC 8252 §7.3): scheme, host, path and query equal, only the port free', async () => {
    await enableAccess(app, owner)
    const c = await registerClient(app, { redirect_uris: ['http://127.0.0.1:8976/oauth/callback'] })
    const { challenge } = pkce()
    const statusOf = async (redirect_uri: string) =>
      (await call(app, 'POST', '/mcp/authorize', owner, { json: { client_id: c.client_id, redirect_uri, code_challenge: challenge } })).status
    const pageOf = async (redirect_uri: string) =>
      (
        await app.fetch(
          `/api/v1/mcp/authorize?response_type=code&client_id=${c.client_id}&redirect_uri=${encodeURIComponent(redirect_uri)}&code_challenge=${challenge}&code_challenge_method=S256`,
          { redirect: 'manual' },
        )
      ).status
    const rows = []
    for (const uri of [
      'http://127.0.0.1/oauth/callback:8976',
      'http://127.0.0.1/oauth:8976/callback',
      'http://127.0.0.1:8976/oauth/callback?x=1',
      'http://localhost:8976/oauth/callback',
      'http://127.0.0.1:8976/oauth/callback/',
      'http://user@127.0.0.1:8976/oauth/callback',
      'http://127.0.0.1:8976/oauth/callback',
      'http://127.0.0.1:50123/oauth/callback',
      'http://127.0.0.1/oauth/callback',
    ])
      rows.push({ uri, post: await statusOf(uri), page: await pageOf(uri) })
    expect(rows).toEqual([
      { uri: 'http://127.0.0.1/oauth/callback:8976', post: 422, page: 400 },
      { uri: 'http://127.0.0.1/oauth:8976/callback', post: 422, page: 400 },
      { uri: 'http://127.0.0.1:8976/oauth/callback?x=1', post: 422, page: 400 },
      { uri: 'http://localhost:8976/oauth/callback', post: 422, page: 400 },
      { uri: 'http://127.0.0.1:8976/oauth/callback/', post: 422, page: 400 },
      { uri: 'http://user@127.0.0.1:8976/oauth/callback', post: 422, page: 400 },
      { uri: 'http://127.0.0.1:8976/oauth/callback', post: 200, page: 200 },
      { uri: 'http://127.0.0.1:50123/oauth/callback', post: 200, page: 200 },
      { uri: 'http://127.0.0.1/oauth/callback', post: 200, page: 200 },
    ])
  })

  test('codes not yet exchanged are revoked when their client is disconnected, or access switched off (even if on again at once)', async () => {
    await enableAccess(app, owner)
    const conn = await connectClient(app, owner)
    const redirect_uri = conn.client.redirect_uris[0]!
    const codeFor = async () => {
      const p = pkce()
      const res = await call(app, 'POST', '/mcp/authorize', owner, { json: { client_id: conn.client.client_id, redirect_uri, code_challenge: p.challenge } })
      expect(res.status).toBe(200)
      return { code: new URL(((await res.json()) as any).redirect_to).searchParams.get('code')!, verifier: p.verifier }
    }
    const exchange = (c: { code: string; verifier: string }) =>
      tokenRequest(app, { grant_type: 'authorization_code', code: c.code, redirect_uri, client_id: conn.client.client_id, code_verifier: c.verifier })
    const outcome = async (res: Response) => ({ status: res.status, error: ((await res.json()) as any).error })

    // Approved again, then disconnected before the code is exchanged: the code does not reconnect it.
    const beforeDisconnect = await codeFor()
    expect((await call(app, 'DELETE', `/mcp/clients/${conn.client.client_id}`, owner)).status).toBe(204)
    expect(await outcome(await exchange(beforeDisconnect))).toEqual({ status: 400, error: 'invalid_grant' })
    expect((await access()).clients.map((c: any) => c.id)).not.toContain(conn.client.client_id)

    // Approved, then access off and on again within the code's 5 minutes: the code is dead.
    const beforeOff = await codeFor()
    await put({ enabled: false })
    await enableAccess(app, owner)
    expect(await outcome(await exchange(beforeOff))).toEqual({ status: 400, error: 'invalid_grant' })
    expect((await access()).clients.map((c: any) => c.id)).not.toContain(conn.client.client_id)

    // A code approved after that works as ever.
    expect((await exchange(await codeFor())).status).toBe(200)
  })

  test('token: a wrong verifier spends the code; a reused code is refused and revokes what it issued; redirect and verifier checked', async () => {
    await enableAccess(app, owner)
    const c = await registerClient(app)
    const redirect_uri = c.redirect_uris[0]!
    const codeFor = async (challenge: string) => {
      const res = await call(app, 'POST', '/mcp/authorize', owner, { json: { client_id: c.client_id, redirect_uri, code_challenge: challenge } })
      return new URL(((await res.json()) as any).redirect_to).searchParams.get('code')!
    }
    const exchange = (code: string, code_verifier: string, extra: Record<string, string> = {}) =>
      tokenRequest(app, { grant_type: 'authorization_code', code, redirect_uri, client_id: c.client_id, code_verifier, ...extra })
    const errorOf = async (res: Response) => ({ status: res.status, error: ((await res.json()) as any).error, cache: res.headers.get('cache-control') })

    const a = pkce()
    const codeA = await codeFor(a.challenge)
    expect(await errorOf(await exchange(codeA, pkce().verifier))).toEqual({ status: 400, error: 'invalid_grant', cache: 'no-store' })
    expect((await errorOf(await exchange(codeA, a.verifier))).error).toBe('invalid_grant')

    const b = pkce()
    expect((await errorOf(await exchange(await codeFor(b.challenge), 'x'))).error).toBe('invalid_grant')
    const d = pkce()
    expect((await errorOf(await exchange(await codeFor(d.challenge), d.verifier, { redirect_uri: 'http://127.0.0.1:33418/other' }))).error).toBe(
      'invalid_grant',
    )

    const e = pkce()
    const codeE = await codeFor(e.challenge)
    const ok = await exchange(codeE, e.verifier)
    expect(ok.status).toBe(200)
    expect(ok.headers.get('cache-control')).toBe('no-store')
    const tokens = (await ok.json()) as any
    expect(tokens).toMatchObject({ token_type: 'Bearer', expires_in: 3600 })
    expect(tokens.access_token).toMatch(/^gpuhq_mcpat_/)
    expect((await whoami(tokens.access_token)).status).toBe(200)
    expect((await errorOf(await exchange(codeE, e.verifier))).error).toBe('invalid_grant')
    expect((await whoami(tokens.access_token)).status).toBe(401)
    expect((await errorOf(await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: c.client_id }))).error).toBe(
      'invalid_grant',
    )

    // JSON is accepted as well as the form; an unknown grant is unsupported_grant_type.
    const f = pkce()
    const json = await app.fetch('/api/v1/mcp/token', {
      method: 'POST',
      json: { grant_type: 'authorization_code', code: await codeFor(f.challenge), redirect_uri, client_id: c.client_id, code_verifier: f.verifier },
    })
    expect(json.status).toBe(200)
    expect((await errorOf(await tokenRequest(app, { grant_type: 'password', username: 'a', password: 'b' }))).error).toBe('unsupported_grant_type')
  })

  test('refresh rotates; a spent refresh token presented again revokes the whole authorization', async () => {
    await enableAccess(app, owner)
    const conn = await connectClient(app, owner)
    const refresh = (token: string) => tokenRequest(app, { grant_type: 'refresh_token', refresh_token: token, client_id: conn.client.client_id })
    const next = (await (await refresh(conn.refresh_token)).json()) as any
    expect(next.refresh_token).not.toBe(conn.refresh_token)
    expect((await whoami(next.access_token)).status).toBe(200)
    const reuse = await refresh(conn.refresh_token)
    expect({ status: reuse.status, error: ((await reuse.json()) as any).error }).toEqual({ status: 400, error: 'invalid_grant' })
    expect((await whoami(next.access_token)).status).toBe(401)
    expect((await refresh(next.refresh_token)).status).toBe(400)
  })
})

describe('the official SDK client through the whole flow', () => {
  test('register, authorize with PKCE, token, initialize, tools/list, tools/call, and a refresh after the access token expires', async () => {
    await enableAccess(app, owner, ['fleet.list_servers', 'fleet.get_server', 'billing.balance'])
    const url = new URL(`${app.url}/mcp`)
    const provider = new TestProvider()
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider })
    const err = await new Client({ name: 'gpuhq-test', version: '1.0.0' }).connect(first).catch((e) => e)
    expect(err).toBeInstanceOf(UnauthorizedError)
    const authUrl = provider.authUrl!
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256')
    expect(authUrl.searchParams.get('resource')).toBe(`${app.url}/mcp`)
    // The browser opens the consent page; the owner approves (the page's POST, made here with the session).
    expect((await app.fetch(`${authUrl.pathname}${authUrl.search}`)).status).toBe(200)
    const approve = await call(app, 'POST', '/mcp/authorize', owner, {
      json: {
        client_id: authUrl.searchParams.get('client_id'),
        redirect_uri: authUrl.searchParams.get('redirect_uri'),
        code_challenge: authUrl.searchParams.get('code_challenge'),
        code_challenge_method: 'S256',
        state: authUrl.searchParams.get('state'),
        resource: authUrl.searchParams.get('resource'),
      },
    })
    const to = new URL(((await approve.json()) as any).redirect_to)
    expect(to.searchParams.get('state')).toBe(provider.stateValue)
    await first.finishAuth(to.searchParams.get('code')!)

    const client = new Client({ name: 'gpuhq-test', version: '1.0.0' })
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }))
    expect(client.getServerVersion()?.name).toBe('gpuhq')
    const tools = await client.listTools()
    expect(tools.tools.map((t) => t.name)).toEqual(['fleet.list_servers', 'fleet.get_server', 'billing.balance'])
    const listed = await client.callTool({ name: 'fleet.list_servers', arguments: {} })
    expect(listed.isError).toBeFalsy()
    expect((listed.structuredContent as any).items.map((s: any) => s.id)).toContain(rig)
    // A tool the owner did not allow: a result the assistant can explain, and the SDK stays connected.
    const refused = await client.callTool({ name: 'commands.send', arguments: { server_id: rig, type: 'reboot' } })
    expect(refused.isError).toBe(true)
    expect(JSON.stringify(refused.content)).toContain('allow `commands.send` under AI access')
    const one = await client.callTool({ name: 'fleet.get_server', arguments: { server_id: rig } })
    expect((one.structuredContent as any).name).toBe('rig-mcp')
    const bad = await client.callTool({ name: 'fleet.get_server', arguments: { server_id: 'not-a-uuid' } })
    expect(bad.isError).toBe(true)
    const stranger = await insertServer(app, (await newTenant(app, 'mcp-stranger')).tenantId, 'theirs')
    const foreign = await client.callTool({ name: 'fleet.get_server', arguments: { server_id: stranger } })
    expect(foreign.isError).toBe(true)
    expect(JSON.stringify(foreign.content)).toContain('404')
    expect((await access()).clients.map((c: any) => c.name)).toContain('SDK test assistant')

    // An hour later the access token has expired: the SDK gets a 401, refreshes, and goes on.
    const before = provider.tokens()!.access_token
    await advance(3700)
    const again = await client.callTool({ name: 'billing.balance', arguments: {} })
    expect(again.isError).toBeFalsy()
    expect(provider.tokens()!.access_token).not.toBe(before)
    await client.close()

    // Every invocation is in the audit trail with the client's name.
    const audit = (await app.deps.db.all(
      sql`SELECT operation, user_agent FROM audit_log WHERE tenant_id = ${owner.tenantId} AND operation LIKE 'mcp.tools.call%'`,
    )) as any[]
    expect(audit.length).toBe(6)
    expect(audit.every((a) => a.user_agent.startsWith('MCP client: SDK test assistant'))).toBe(true)
  })
})

describe('the gateway enforces', () => {
  const rpc = (token: string | null, body: unknown, headers: Record<string, string> = {}) =>
    app.fetch('/mcp', {
      method: 'POST',
      headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), accept: 'application/json, text/event-stream', ...headers },
      json: body,
    })
  const resultOf = (text: string) => (JSON.parse((text.split('\n').find((l) => l.startsWith('data: ')) ?? text).replace(/^data: /, '')) as any).result
  /** POST /mcp over a raw socket with the Host given (an initialize with a valid token): the status line's code. */
  const rawStatus = async (host: string, token: string) => {
    const body = JSON.stringify(init)
    const url = new URL(app.url)
    let reply = ''
    const { promise, resolve } = Promise.withResolvers<void>()
    const socket = await Bun.connect({
      hostname: url.hostname,
      port: Number(url.port),
      socket: {
        data: (_s, chunk) => {
          reply += chunk.toString()
          if (reply.includes('\r\n')) resolve()
        },
        close: () => resolve(),
      },
    })
    socket.write(
      `POST /mcp HTTP/1.1\r\nHost: ${host}\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    )
    await promise
    socket.end()
    return Number(reply.split(' ')[1])
  }
  const init = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  }

  test('401 with the resource metadata; a tool not allowed is an isError result; the plan; Origin; 405', async () => {
    const { token } = await enableAccess(app, owner, ['fleet.list_servers'])
    const anon = await rpc(null, init)
    expect(anon.status).toBe(401)
    expect(anon.headers.get('www-authenticate')).toContain(`resource_metadata="${app.url}/.well-known/oauth-protected-resource/mcp"`)
    const pat = await rpc('gpuhq_pat_not-a-real-token', init)
    expect(pat.headers.get('www-authenticate')).toContain('error="invalid_token"')

    expect((await rpc(token, init)).status).toBe(200)
    const denied = await rpc(token, {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'commands.send', arguments: { server_id: rig, type: 'reboot' } },
    })
    // Never a 403 on a valid token (the SDK would refresh it and throw): a tool result the assistant can explain.
    expect(denied.status).toBe(200)
    const refusal = resultOf(await denied.text())
    expect(refusal.isError).toBe(true)
    expect(refusal.structuredContent).toMatchObject({ status: 403, code: 'forbidden', tool: 'commands.send' })
    expect(refusal.content[0].text).toContain('allow `commands.send` under AI access')

    expect((await rpc(token, init, { origin: 'https://evil.example' })).status).toBe(403)
    expect((await app.fetch('/mcp', { headers: { authorization: `Bearer ${token}` } })).status).toBe(405)

    await setPlan(app, owner.tenantId, 'starter')
    try {
      const res = await rpc(token, init)
      expect(res.status).toBe(403)
      expect(((await res.json()) as any).code).toBe('feature_not_entitled')
      expect((await whoami(token)).status).toBe(403)
    } finally {
      await setPlan(app, owner.tenantId, 'pro')
    }
  })

  test('DNS-rebinding protection: a Host other than PUBLIC_URL is refused, even with a valid token', async () => {
    const { token } = await enableAccess(app, owner, ['fleet.list_servers'])
    const own = new URL(app.url).host
    const statuses: Record<string, number> = {}
    for (const host of ['evil.example.com', `evil.example.com:${new URL(app.url).port}`, 'localhost', own]) {
      // A raw socket: fetch would not send a Host of our choosing.
      statuses[host] = await rawStatus(host, token)
    }
    expect(statuses).toEqual({ 'evil.example.com': 403, [`evil.example.com:${new URL(app.url).port}`]: 403, localhost: 403, [own]: 200 })
  })

  test('the strategy and alerts tools answer what their routes answer', async () => {
    const { token } = await enableAccess(app, owner, ['strategy.suggestions', 'alerts.list'])
    const callTool = async (id: number, name: string, args: Record<string, unknown>) => {
      const res = await rpc(token, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })
      expect(res.status).toBe(200)
      const text = await res.text()
      const line = text.split('\n').find((l) => l.startsWith('data: ')) ?? text
      return (JSON.parse(line.replace(/^data: /, '')) as any).result
    }
    const suggestions = await callTool(5, 'strategy.suggestions', { state: 'pending', limit: 5 })
    expect(suggestions.isError).toBeFalsy()
    expect(suggestions.structuredContent).toEqual(await (await call(app, 'GET', '/strategy/suggestions?state=pending&limit=5', owner)).json())
    const alerts = await callTool(6, 'alerts.list', { state: 'unresolved' })
    expect(alerts.isError).toBeFalsy()
    expect(alerts.structuredContent).toEqual(await (await call(app, 'GET', '/alerts?state=unresolved&limit=20', owner)).json())
  })

  test("a write tool runs as the member who allowed it, within that member's role", async () => {
    const { token } = await enableAccess(app, owner, ['commands.send', 'commands.get'])
    const send = await rpc(token, {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 'commands.send', arguments: { server_id: rig, type: 'reboot' } },
    })
    expect(send.status).toBe(200)
    const text = await send.text()
    expect(text).toContain('"result"')
    expect(text).not.toContain('"isError":true')
    // The member is demoted: the write tool is no longer covered.
    await app.deps.db.run(sql`UPDATE users SET role = 'viewer' WHERE tenant_id = ${owner.tenantId} AND role = 'owner'`)
    try {
      const again = await rpc(token, {
        jsonrpc: '2.0',
        id: 4,
        method: 'tools/call',
        params: { name: 'commands.send', arguments: { server_id: rig, type: 'reboot' } },
      })
      expect(again.status).toBe(200)
      const refusal = resultOf(await again.text())
      expect(refusal.isError).toBe(true)
      expect(refusal.content[0].text).toContain('role (viewer)')
    } finally {
      await app.deps.db.run(sql`UPDATE users SET role = 'owner' WHERE tenant_id = ${owner.tenantId} AND role = 'viewer'`)
    }
  })
})

describe('clients and registration limits', () => {
  test('DELETE /mcp/clients/{id} disconnects a client: its tokens stop at once and it is gone from the list', async () => {
    await enableAccess(app, owner)
    const conn = await connectClient(app, owner)
    const one = await call(app, 'GET', `/mcp/clients/${conn.client.client_id}`, owner)
    expect(((await one.json()) as any).name).toBe('Test assistant')
    expect((await call(app, 'DELETE', `/mcp/clients/${conn.client.client_id}`, owner)).status).toBe(204)
    expect((await whoami(conn.access_token)).status).toBe(401)
    expect((await tokenRequest(app, { grant_type: 'refresh_token', refresh_token: conn.refresh_token, client_id: conn.client.client_id })).status).toBe(400)
    expect((await call(app, 'GET', `/mcp/clients/${conn.client.client_id}`, owner)).status).toBe(404)
    expect((await call(app, 'DELETE', `/mcp/clients/${conn.client.client_id}`, owner)).status).toBe(404)
  })

  test('registration is rate-limited per client address, with Retry-After', async () => {
    let limited: Response | null = null
    for (let i = 0; i < 25 && !limited; i++) {
      const res = await app.fetch('/api/v1/mcp/register', { method: 'POST', json: { client_name: `burst ${i}`, redirect_uris: ['https://app.example/cb'] } })
      if (res.status === 429) limited = res
      else expect(res.status).toBe(201)
    }
    expect(limited).not.toBeNull()
    expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0)
    await advance(3601)
    expect(
      (await app.fetch('/api/v1/mcp/register', { method: 'POST', json: { client_name: 'after', redirect_uris: ['https://app.example/cb'] } })).status,
    ).toBe(201)
  })
})
