import { systemContext } from '../../platform/audit-context'
import type { Static } from '@sinclair/typebox'
import { notifyOthers, withTransaction, type DbOrTx } from '../../../db/client'
import { mayAccessServer, type Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { paginate } from '../../platform/cursor'
import { invalidField } from '../../platform/domain-error'
import { assertIfMatch, etagOf } from '../../platform/etag'
import type { FieldError } from '../../platform/problem'
import { formatTimestamp, parseTimestamp } from '../../platform/time'
import { recordAudit, type AuditContext } from '../audit'
import { agentSessions, loadServer, rentalRunning } from '../fleet'
import { commandType, paramsErrors } from './commands.catalogue'
import { COMMANDS_CHANNEL, dispatchServer, isTerminal, sendFrame, waitReason } from './commands.delivery'
import { CommandErrors } from './commands.errors'
import type { CommandCreate, CommandListQuery, TimelineQuery } from './commands.model'
import {
  announceChange,
  appendTimeline,
  changeCommand,
  commandView,
  countUndelivered,
  findCommand,
  findLog,
  insertCommand,
  listCommandRows,
  timelineOf,
  type CommandRow,
} from './commands.repository'

/** How many commands one server may have waiting for delivery. */
const QUEUE_LIMIT = 50
const US = 1_000_000
const DEFAULT_ACCEPT_BY_S = 24 * 3600
const DEFAULT_EXECUTION_S = 3600
const MAX_DEADLINE_S = 30 * 86400

function issuer(actor: Actor, causeId: string | null): Pick<CommandRow, 'issuedByType' | 'issuedById'> {
  if (actor.kind === 'pat') return { issuedByType: 'pat', issuedById: actor.tokenId ?? null }
  if (actor.kind === 'agent') return { issuedByType: 'agent', issuedById: actor.tokenId ?? null }
  if (actor.kind === 'system') return { issuedByType: 'system', issuedById: causeId }
  return { issuedByType: 'user', issuedById: actor.userId }
}

export async function createCommand({
  deps,
  actor,
  audit,
  input,
  idempotencyKey,
  causeId = null,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  input: Static<typeof CommandCreate>
  idempotencyKey: string | null
  /** What made the system issue it (a watchdog rule's id): shown as issued_by.id. */
  causeId?: string | null
}) {
  const kind = commandType(input.type)
  if (!kind) throw invalidField('commands', '/type', 'unknown_command_type', `unknown command type ${input.type}`)
  const errors: FieldError[] = paramsErrors(input.type, input.params)
  const now = deps.clock.nowUs()
  const acceptBy = input.accept_by === undefined ? now + DEFAULT_ACCEPT_BY_S * US : parseTimestamp(input.accept_by)
  if (acceptBy === null) errors.push({ path: '/accept_by', code: 'format' })
  else if (acceptBy <= now) errors.push({ path: '/accept_by', code: 'in_the_past' })
  const deadline = input.deadline === undefined ? (acceptBy ?? now) + DEFAULT_EXECUTION_S * US : parseTimestamp(input.deadline)
  if (deadline === null) errors.push({ path: '/deadline', code: 'format' })
  else if (acceptBy !== null && deadline < acceptBy) errors.push({ path: '/deadline', code: 'before_accept_by' })
  else if (deadline > now + MAX_DEADLINE_S * US) errors.push({ path: '/deadline', code: 'too_late' })
  if (errors.length) throw CommandErrors.invalid(undefined, { fields: errors })

  const serverId = input.server_id.toLowerCase()
  const created = await withTransaction(deps.db, async (tx) => {
    const server = await loadServer(deps, actor, serverId, tx)
    if (server.decommissionedAt !== null) throw CommandErrors.serverDecommissioned()
    const live = agentSessions(deps).isLive(server.id)
    if ((await countUndelivered(tx, server.id)) >= QUEUE_LIMIT)
      throw (live || server.presence === 'online' ? CommandErrors.onlineQueueFull : CommandErrors.offlineQueueFull)(
        `the server already has ${QUEUE_LIMIT} commands waiting for delivery`,
      )
    // A dangerous command during an active rental waits for the rental to end unless told otherwise.
    const requires = input.requires ?? (kind.dangerous && rentalRunning(server) ? 'after_rental' : 'none')
    const row: CommandRow = {
      id: deps.newId(),
      tenantId: actor.tenantId,
      serverId: server.id,
      type: kind.type,
      schemaVersion: kind.schemaVersion,
      params: input.params,
      requires,
      deliveryStatus: 'queued',
      executionStatus: 'not_started',
      queueReason: null,
      progress: null,
      result: null,
      error: null,
      ...issuer(actor, causeId),
      idempotencyKey,
      createdAt: now,
      acceptBy,
      deadline,
      sentAt: null,
      acceptedAt: null,
      startedAt: null,
      finishedAt: null,
      cancelledAt: null,
      cancelRequestedAt: null,
      sendCount: 0,
      version: 1,
    }
    row.queueReason = waitReason(row, server, live)
    await insertCommand(tx, row)
    // The agent may be connected to another instance: it delivers there (commands.delivery.ts).
    await notifyOthers(tx, COMMANDS_CHANNEL, row.serverId)
    await appendTimeline(tx, deps, { commandId: row.id, at: now, axis: 'command', fromState: null, toState: 'created', note: row.queueReason })
    await announceChange(tx, deps, row, 'command', null, 'created', row.queueReason)
    await recordAudit(tx, deps, audit, { operation: 'commands.create', targetKind: 'command', targetId: row.id })
    return row
  })
  await dispatchServer(deps, created.serverId)
  return commandView((await findCommand(deps.db, actor.tenantId, created.id))!)
}

async function loadCommand(deps: Deps, actor: Actor, id: string, db: DbOrTx = deps.db): Promise<CommandRow> {
  const c = await findCommand(db, actor.tenantId, id.toLowerCase())
  if (!c || !mayAccessServer(actor, c.serverId)) throw CommandErrors.notFound()
  return c
}

export async function getCommand({ deps, actor, id }: { deps: Deps; actor: Actor; id: string }) {
  const c = await loadCommand(deps, actor, id)
  return { view: commandView(c, (await findLog(deps.db, c.id))?.id ?? null), etag: etagOf(c.version) }
}

export function listCommands({ deps, actor, input }: { deps: Deps; actor: Actor; input: Static<typeof CommandListQuery> }) {
  const filter = { serverId: input.server_id?.toLowerCase(), deliveryStatus: input.delivery_status, executionStatus: input.execution_status, type: input.type }
  // A failed command's error carries its log_ref here too, as GET /commands/{id} shows it.
  return paginate(deps.keys.cursor, {
    scope: `commands:${actor.tenantId}:${JSON.stringify(filter)}`,
    input,
    fetch: (before: { id: string } | undefined, take) =>
      listCommandRows(deps.db, actor.tenantId, { ...filter, beforeId: before?.id ?? null, serverIds: actor.serverAllowlist }, take),
    position: (r) => ({ id: r.id }),
    view: async (c) => commandView(c, c.error ? ((await findLog(deps.db, c.id))?.id ?? null) : null),
  })
}

export async function commandTimelinePage({ deps, actor, id, input }: { deps: Deps; actor: Actor; id: string; input: Static<typeof TimelineQuery> }) {
  const c = await loadCommand(deps, actor, id)
  return paginate(deps.keys.cursor, {
    scope: `command-timeline:${c.id}`,
    input,
    fetch: (after: { id: string } | undefined, take) => timelineOf(deps.db, c.id, after?.id ?? null, take),
    position: (r) => ({ id: r.id }),
    view: (e) => ({ id: e.id, at: formatTimestamp(e.at), axis: e.axis, from: e.fromState, to: e.toState, note: e.note }),
  })
}

export async function commandLog({ deps, actor, id, logId }: { deps: Deps; actor: Actor; id: string; logId: string }) {
  const c = await loadCommand(deps, actor, id)
  const log = await findLog(deps.db, c.id)
  if (!log || log.id !== logId.toLowerCase()) throw CommandErrors.logNotFound()
  return { log_id: log.id, command_id: c.id, text: log.text, bytes: log.bytes, truncated: log.truncated, updated_at: formatTimestamp(log.updatedAt) }
}

/**
 * Best-effort cancel: a command the agent has not accepted is cancelled at once; one it has is
 * asked to stop (a command.cancel frame) and ends when the agent reports back, or at its deadline.
 */
export async function cancelCommand({
  deps,
  actor,
  audit,
  id,
  ifMatch,
}: {
  deps: Deps
  actor: Actor
  audit: AuditContext
  id: string
  ifMatch: string | null
}) {
  const c = await loadCommand(deps, actor, id)
  const after = await withTransaction(deps.db, async (tx) => {
    const cur = await loadCommand(deps, actor, c.id, tx)
    assertIfMatch(ifMatch, etagOf(cur.version))
    if (isTerminal(cur)) throw CommandErrors.alreadyEnded(`the command already ended (${cur.executionStatus})`)
    const now = deps.clock.nowUs()
    let next: CommandRow
    if (cur.deliveryStatus !== 'accepted') {
      next = await changeCommand(
        tx,
        deps,
        cur,
        {
          executionStatus: 'cancelled',
          cancelledAt: now,
          cancelRequestedAt: now,
          finishedAt: now,
          queueReason: null,
          ...(cur.deliveryStatus === 'delivery_failed' ? {} : { deliveryStatus: cur.deliveryStatus }),
        },
        'cancelled before the agent accepted it',
      )
    } else {
      next = cur.cancelRequestedAt ? cur : await changeCommand(tx, deps, cur, { cancelRequestedAt: now })
      if (!cur.cancelRequestedAt) {
        await appendTimeline(tx, deps, {
          commandId: cur.id,
          at: now,
          axis: 'command',
          fromState: null,
          toState: 'cancel_requested',
          note: 'asked the agent to stop',
        })
        await announceChange(tx, deps, next, 'command', null, 'cancel_requested', 'asked the agent to stop')
      }
    }
    await recordAudit(tx, deps, audit, { operation: 'commands.cancel', targetKind: 'command', targetId: cur.id })
    return next
  })
  sendFrame(deps, after.serverId, { type: 'command.cancel', command_id: after.id })
  return { view: commandView(after, (await findLog(deps.db, after.id))?.id ?? null), etag: etagOf(after.version) }
}

/**
 * The service wants this server's agent at `version` (the executable it serves, docs/agent.md
 * "Self-update"): queues one `agent.update` issued by the system with `requires: after_rental`, so
 * it is delivered at once on an idle server and after the rental on a rented one. Offered once per
 * version and server: an earlier offer that is waiting, ran, failed (a rollback), or was cancelled
 * by the owner stands; only one that never reached the agent (accept_by passed) is made again. The
 * owner forces an update during a rental by creating `agent.update` with `requires: none` himself.
 * Answers the command's id, or null when an offer stands.
 */
export async function offerAgentUpdate(deps: Deps, server: { id: string; tenantId: string }, version: string): Promise<string | null> {
  const earlier = await listCommandRows(deps.db, server.tenantId, { serverId: server.id, type: 'agent.update' }, 100)
  if (earlier.some((c) => (c.params as { version?: unknown }).version === version && c.deliveryStatus !== 'delivery_failed')) return null
  const now = deps.clock.nowUs()
  return issueSystemCommand(deps, server, {
    type: 'agent.update',
    params: { version },
    requires: 'after_rental',
    // A rental may last weeks: the offer waits as long as a command may.
    acceptBy: now + (MAX_DEADLINE_S - 3600) * US,
    deadline: now + MAX_DEADLINE_S * US,
  })
}

/**
 * A command the service issues on its own, as the system (an agent update it offers, a watchdog
 * step): `causeId` names what caused it (the watchdog rule), shown as `issued_by.id`. Refused as
 * any command is (a decommissioned server, a full queue): the caller records the refusal.
 * Answers the command's id.
 */
export async function issueSystemCommand(
  deps: Deps,
  server: { id: string; tenantId: string },
  input: { type: string; params: Record<string, unknown>; requires: 'none' | 'idle' | 'after_rental'; acceptBy: number; deadline?: number },
  causeId: string | null = null,
): Promise<string> {
  const { actor, audit } = systemContext(server.tenantId)
  const created = await createCommand({
    deps,
    actor,
    audit,
    input: {
      server_id: server.id,
      type: input.type,
      params: input.params,
      requires: input.requires,
      accept_by: formatTimestamp(input.acceptBy),
      ...(input.deadline === undefined ? {} : { deadline: formatTimestamp(input.deadline) }),
    },
    idempotencyKey: null,
    causeId,
  })
  return created.command_id
}
