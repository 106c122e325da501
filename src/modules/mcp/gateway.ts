import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, SetLevelRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import type { TObject } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { withTransaction } from '../../../db/client'
import { onBehalfOf } from '../../platform/access'
import { API_PREFIX } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { beginRequest, requestState, valueErrorsToFields } from '../../platform/http'
import { ProblemError } from '../../platform/problem'
import { recordAudit } from '../audit'
import type { McpCaller } from './access.service'
import { fitByLargestList } from './fit'
import { toolNamed, TOOLS, type Tool } from './tools'

/**
 * The MCP gateway at ${PUBLIC_URL}/mcp (docs/ai-access.md "The gateway"): the official SDK's
 * Streamable HTTP transport, stateless (a server and a transport per POST; GET and DELETE answer
 * 405), over the low-level Server so the tools keep their TypeBox (JSON Schema) inputs. The caller
 * was identified by the access check (an `mcp` route); each tool call becomes the REST request it
 * stands for, made in-process on the caller's behalf, so it passes the same access check, body
 * rules, rate limits and audit as the public API.
 */

/** A tool answer is at most this many characters of JSON: longer ones are fitted (src/modules/mcp/fit.ts) and say what was left out. */
const MAX_OUTPUT_CHARS = 64 * 1024

const checks = new Map<string, TypeCheck<TObject>>(TOOLS.map((t) => [t.name, TypeCompiler.Compile(t.input)]))

export type Dispatch = (request: Request) => Promise<Response>

/**
 * DNS-rebinding protection (MCP transport security): the request must be addressed to this
 * gateway, `Host` equal to PUBLIC_URL's host (a reverse proxy passes Host on, docs/operations.md).
 * A page on a rebound name (`evil.example.com` resolving to this server) is refused even when the
 * request carries a valid token.
 */
function hostRefused(deps: Deps, request: Request): ProblemError | null {
  const host = request.headers.get('host')?.toLowerCase() ?? null
  const own = new URL(deps.config.publicUrl)
  const defaultPort = own.protocol === 'https:' ? '443' : '80'
  if (host !== null && (host === own.host || host === `${own.hostname}:${defaultPort}`)) return null
  return new ProblemError('forbidden', {
    detail: `this gateway answers only requests addressed to ${own.host} (Host ${host === null ? 'missing' : host.slice(0, 100)}): DNS-rebinding protection`,
  })
}

/** The Origin check the transport spec requires: a browser page of another origin is refused (403). */
function originRefused(deps: Deps, request: Request): ProblemError | null {
  const origin = request.headers.get('origin')
  if (origin === null || origin === deps.config.publicUrl) return null
  return new ProblemError('forbidden', { detail: `Origin ${origin.slice(0, 100)} may not use this gateway` })
}

export async function handleGateway(deps: Deps, request: Request, body: unknown, caller: McpCaller, dispatch: Dispatch): Promise<Response> {
  const refused = hostRefused(deps, request) ?? originRefused(deps, request)
  if (refused) throw refused
  // A problem document like every other 405 (MCP clients read only the status: no stream, no sessions).
  if (request.method !== 'POST')
    throw new ProblemError('not_found', {
      status: 405,
      detail: `${request.method} is not offered on the MCP endpoint; allowed: POST`,
      headers: { Allow: 'POST' },
    })
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
    if (!tool) throw new McpError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name.slice(0, 128)}`)
    // A tool the token may not use is a tool result the assistant can explain, never an HTTP 403 on a valid token.
    if (!caller.allowedTools.includes(tool.name)) {
      await audit(deps, gatewayRequest, caller, tool, 403)
      return toolError(refusal(caller, tool))
    }
    const args = req.params.arguments ?? {}
    const check = checks.get(tool.name)!
    if (!check.Check(args)) {
      await audit(deps, gatewayRequest, caller, tool, 422)
      return toolError({
        status: 422,
        code: 'validation_failed',
        detail: `the arguments of ${tool.name} did not pass its input schema`,
        errors: valueErrorsToFields(check.Errors(args)).slice(0, 20),
      })
    }
    try {
      return await runTool(deps, gatewayRequest, caller, tool, args as Record<string, unknown>, dispatch)
    } catch (error) {
      // Never an internal message to the assistant: the log has it, the answer has the request id.
      const requestId = requestState(gatewayRequest, deps).id
      deps.log.error('mcp tool failed', { request_id: requestId, tool: tool.name, error })
      return toolError({ status: 500, code: 'temporarily_unavailable', detail: `gpuhq could not run ${tool.name}; retry later`, request_id: requestId })
    }
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
async function audit(deps: Deps, gatewayRequest: Request, caller: McpCaller, tool: Tool, status: number): Promise<void> {
  const outer = requestState(gatewayRequest, deps)
  await withTransaction(deps.db, (tx) =>
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

/** Why the token may not call a catalogue tool, in words the person can act on. */
function refusal(caller: McpCaller, tool: Tool) {
  const granted = caller.grantedTools.includes(tool.name)
  return {
    status: 403,
    code: 'forbidden',
    tool: tool.name,
    detail: granted
      ? `${tool.name} needs the scope ${tool.scope}, which the role (${caller.actor.role}) of the member who allowed AI access does not have: an admin or owner must allow \`${tool.name}\` under AI access again.`
      : `The owner has not allowed ${tool.name} for AI assistants. To use it, allow \`${tool.name}\` under AI access (in the gpuhq console, or PUT /api/v1/mcp/access with allowed_tools).`,
  }
}

/** A refusal as a tool result: isError, the JSON of what went wrong as text and as structuredContent. */
function toolError(problem: Record<string, unknown>) {
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(problem) }], structuredContent: problem }
}

/** A refused REST answer as the assistant sees it: status, code, detail and field errors; nothing internal. */
function refusedAnswer(status: number, text: string): Record<string, unknown> {
  let doc: Record<string, unknown> = {}
  try {
    const parsed = JSON.parse(text)
    if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) doc = parsed
  } catch {
    doc = {}
  }
  if (status >= 500) return { status, code: 'temporarily_unavailable', detail: 'gpuhq could not answer this time; retry later', request_id: doc.request_id }
  return {
    status,
    code: typeof doc.code === 'string' ? doc.code : 'refused',
    ...(typeof doc.detail === 'string' ? { detail: doc.detail.slice(0, 1024) } : {}),
    ...(Array.isArray(doc.errors) ? { errors: doc.errors.slice(0, 20) } : {}),
  }
}

async function runTool(deps: Deps, gatewayRequest: Request, caller: McpCaller, tool: Tool, args: Record<string, unknown>, dispatch: Dispatch) {
  const r = tool.request(args as never, { nowUs: deps.clock.nowUs() })
  const userAgent = userAgentOf(caller)
  const inner = new Request(`http://gateway.internal${API_PREFIX}${r.path}${queryString(r.query)}`, {
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
  await audit(deps, gatewayRequest, caller, tool, res.status)
  if (!res.ok) return toolError(refusedAnswer(res.status, text))
  if (!text) return { content: [{ type: 'text' as const, text: JSON.stringify({ status: res.status }) }], structuredContent: { status: res.status } }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    parsed = undefined
  }
  const answer = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { value: parsed ?? text }
  const fitted = (tool.fit ?? fitByLargestList)(answer, MAX_OUTPUT_CHARS, args)
  if (!fitted)
    return toolError({
      status: 413,
      code: 'payload_too_large',
      detail: `the answer of ${tool.name} (${text.length} characters) does not fit in one reply of ${MAX_OUTPUT_CHARS}: narrow the request`,
    })
  return { content: [{ type: 'text' as const, text: JSON.stringify(fitted) }], structuredContent: fitted }
}
