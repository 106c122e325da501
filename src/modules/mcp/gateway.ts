import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { withTransaction } from '../../../db/client'
import { onBehalfOf, protectedResourceMetadataUrl } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { beginRequest, requestState } from '../../platform/http'
import { ProblemError } from '../../platform/problem'
import { recordAudit } from '../audit'
import type { McpCaller } from './access.service'
import { toolNamed, TOOLS, type Tool } from './tools'

/**
 * The MCP gateway at ${PUBLIC_URL}/mcp (docs/ai-access.md "The gateway"): the official SDK's
 * Streamable HTTP transport, stateless (a server and a transport per POST; GET and DELETE answer
 * 405), over the low-level Server so the tools keep their TypeBox (JSON Schema) inputs. The caller
 * was identified by the access check (an `mcp` route); each tool call becomes the REST request it
 * stands for, made in-process on the caller's behalf, so it passes the same access check, body
 * rules, rate limits and audit as the public API.
 */

/** A tool answer longer than this is cut (and says so); lists take `limit` ≤ 50 besides. */
const MAX_OUTPUT_CHARS = 64 * 1024
const API = '/api/v1'

const checks = new Map<string, TypeCheck<TObject>>(TOOLS.map((t) => [t.name, TypeCompiler.Compile(t.input)]))

export type Dispatch = (request: Request) => Promise<Response>

/** 403 before the JSON-RPC layer: a tool the owner did not allow (MCP authorization "insufficient_scope"). */
function insufficientScope(deps: Deps, tool: string): ProblemError {
  return new ProblemError('forbidden', {
    detail: `the owner has not allowed the tool ${tool} for AI assistants (PUT /api/v1/mcp/access allowed_tools), or the member's role does not cover it`,
    headers: {
      'WWW-Authenticate': `Bearer error="insufficient_scope", scope="mcp", resource_metadata="${protectedResourceMetadataUrl(deps.config.publicUrl)}", error_description="tool ${tool} not allowed"`,
    },
  })
}

/** The Origin check the transport spec requires: a browser page of another origin is refused (403). */
function originRefused(deps: Deps, request: Request): ProblemError | null {
  const origin = request.headers.get('origin')
  if (origin === null || origin === deps.config.publicUrl) return null
  return new ProblemError('forbidden', { detail: `Origin ${origin.slice(0, 100)} may not use this gateway` })
}

function callsOf(body: unknown): { name: string }[] {
  const messages = Array.isArray(body) ? body : [body]
  return messages
    .filter((m): m is { method: string; params?: { name?: unknown } } => !!m && typeof m === 'object' && (m as { method?: unknown }).method === 'tools/call')
    .map((m) => ({ name: typeof m.params?.name === 'string' ? m.params.name : '' }))
}

export async function handleGateway(deps: Deps, request: Request, body: unknown, caller: McpCaller, dispatch: Dispatch): Promise<Response> {
  const refused = originRefused(deps, request)
  if (refused) throw refused
  // A problem document like every other 405 (MCP clients read only the status: no stream, no sessions).
  if (request.method !== 'POST')
    throw new ProblemError('not_found', {
      status: 405,
      detail: `${request.method} is not offered on the MCP endpoint; allowed: POST`,
      headers: { Allow: 'POST' },
    })
  // Scope is enforced at the HTTP layer for a known tool outside the token's allowance.
  for (const c of callsOf(body)) if (toolNamed(c.name) && !caller.allowedTools.includes(c.name)) throw insufficientScope(deps, c.name)
  const server = buildServer(deps, request, caller, dispatch)
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, keepAliveMs: 5000 })
  await server.connect(transport)
  return transport.handleRequest(request, {
    parsedBody: body,
    authInfo: {
      token: 'redacted',
      clientId: caller.client?.id ?? 'tenant-token',
      scopes: ['mcp'],
      ...(caller.expiresAt !== null ? { expiresAt: Math.floor(caller.expiresAt / 1_000_000) } : {}),
    },
  })
}

function buildServer(deps: Deps, gatewayRequest: Request, caller: McpCaller, dispatch: Dispatch): Server {
  const server = new Server(
    { name: 'gpuhq', title: 'gpuhq fleet', version: '1.0.0' },
    {
      capabilities: { tools: { listChanged: false }, logging: {} },
      instructions:
        'gpuhq: a GPU fleet rented out on marketplaces. Tools read the fleet (servers, vitals, events), metrics, commands, billing, earnings, marketplace offers, price suggestions and alert incidents; write tools act only where the owner allowed them. Ids are UUIDs from fleet.list_servers; money is a decimal string in USD.',
    },
  )
  const allowed = TOOLS.filter((t) => caller.allowedTools.includes(t.name))
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: allowed.map((t) => ({
      name: t.name,
      title: t.title,
      description: t.description,
      inputSchema: t.input as never,
      annotations: { title: t.title, readOnlyHint: t.mode === 'read', destructiveHint: t.mode === 'write', openWorldHint: t.group === 'marketplaces' },
    })),
  }))
  server.setRequestHandler(SetLevelRequestSchema, async () => ({}))
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    const tool = toolNamed(req.params.name)
    if (!tool || !caller.allowedTools.includes(tool.name)) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name.slice(0, 128)}`)
    const args = req.params.arguments ?? {}
    const check = checks.get(tool.name)!
    if (!check.Check(args)) {
      const errors = [...check.Errors(args)].slice(0, 10).map((e) => `${e.path || '/'}: ${e.message}`)
      audit(deps, gatewayRequest, caller, tool, 422)
      return { isError: true, content: [{ type: 'text' as const, text: `invalid arguments for ${tool.name}: ${errors.join('; ')}` }] }
    }
    return runTool(deps, gatewayRequest, caller, tool, args as Record<string, unknown>, dispatch)
  })
  return server
}

function queryString(query: Record<string, unknown> | undefined): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) {
    if (v === undefined || v === null) continue
    if (Array.isArray(v)) for (const item of v) q.append(k, String(item))
    else q.set(k, String(v))
  }
  const s = q.toString()
  return s ? `?${s}` : ''
}

const userAgentOf = (caller: McpCaller) =>
  `MCP client: ${caller.client ? `${caller.client.name} (${caller.client.id})` : 'the tenant AI-assistant token'}`.slice(0, 256)

/** One audit row per tool invocation, refused ones included, naming the client in user_agent. */
function audit(deps: Deps, gatewayRequest: Request, caller: McpCaller, tool: Tool, status: number): void {
  const outer = requestState(gatewayRequest, deps)
  withTransaction(deps.db, (tx) =>
    recordAudit(
      tx,
      deps,
      { actor: caller.actor, ip: outer.ip, userAgent: userAgentOf(caller), requestId: outer.id, markRecorded: () => undefined },
      {
        operation: `mcp.tools.call ${tool.name}`.slice(0, 128),
        targetKind: 'mcp_tool',
        targetId: tool.name,
        outcome: status < 400 ? 'succeeded' : status === 401 || status === 403 ? 'denied' : 'failed',
        status,
      },
    ),
  )
}

async function runTool(deps: Deps, gatewayRequest: Request, caller: McpCaller, tool: Tool, args: Record<string, unknown>, dispatch: Dispatch) {
  const r = tool.request(args as never)
  const userAgent = userAgentOf(caller)
  const inner = new Request(`http://gateway.internal${API}${r.path}${queryString(r.query)}`, {
    method: r.method,
    headers: { 'user-agent': userAgent, accept: 'application/json', ...(r.body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(r.body !== undefined ? { body: JSON.stringify(r.body) } : {}),
  })
  const outer = requestState(gatewayRequest, deps)
  beginRequest(inner, deps.newId(), deps.clock.nowUs(), outer.ip)
  onBehalfOf(inner, caller.actor)
  const res = await dispatch(inner)
  const text = await res.text()
  // Every invocation is audited with the client's name, whatever the operation recorded itself.
  audit(deps, gatewayRequest, caller, tool, res.status)
  const cut = text.length > MAX_OUTPUT_CHARS
  const shown = cut ? `${text.slice(0, MAX_OUTPUT_CHARS)}\n… (cut at ${MAX_OUTPUT_CHARS} characters: narrow the request, e.g. a smaller limit)` : text
  if (!res.ok) return { isError: true, content: [{ type: 'text' as const, text: `HTTP ${res.status}: ${shown}` }] }
  let structured: Record<string, unknown> | undefined
  if (!cut && text) {
    try {
      const parsed = JSON.parse(text)
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) structured = parsed
    } catch {
      structured = undefined
    }
  }
  return { content: [{ type: 'text' as const, text: shown || `HTTP ${res.status}` }], ...(structured ? { structuredContent: structured } : {}) }
}
