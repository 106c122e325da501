import { t } from 'elysia'
import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { ifNoneMatchHits, notModified } from '../../platform/etag'
import { requestState } from '../../platform/http'
import { idempotent } from '../../platform/idempotency'
import { responses, IdParams } from '../../platform/schemas'
import { CATALOGUE } from './commands.catalogue'
import { Catalogue, Command, CommandCreate, CommandListQuery, CommandLog, CommandPage, TimelinePage, TimelineQuery } from './commands.model'
import { cancelCommand, commandLog, commandTimelinePage, createCommand, getCommand, listCommands } from './commands.service'

const tags = ['commands']
const read = { role: 'viewer', scope: 'commands:read', reach: 'server' } as const
const write = { role: 'operator', scope: 'commands:write', reach: 'server' } as const

export function commandsRoutes(deps: Deps) {
  return apiRoutes('commands', deps)
    .get(
      '/commands/catalogue',
      () => ({
        items: CATALOGUE.map((c) => ({ type: c.type, schema_version: c.schemaVersion, dangerous: c.dangerous, description: c.description, params: c.params })),
      }),
      {
        response: responses({ 200: Catalogue }, [401, 403]),
        detail: describe({ ...read, reach: 'none' }, { tags, summary: 'Command types with their params schema' }),
      },
    )
    .post(
      '/commands',
      async ({ verb, request, body, set }) => {
        const out = await createCommand({
          ...verb,
          input: body,
          idempotencyKey: request.headers.get('idempotency-key'),
        })
        set.status = 201
        set.headers.etag = `"${out.version}"`
        set.headers.location = `${API_PREFIX}/commands/${out.command_id}`
        return out
      },
      {
        beforeHandle: idempotent(deps),
        body: CommandCreate,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: Command }, [401, 403, 404, 409, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: "Send a typed command to a server's agent",
          description:
            'Unknown types and bad params → 422. For an offline server it waits (queue_reason server_offline) and is delivered when the agent connects. A dangerous type (gpu.reset, reboot) created during an active rental defaults to requires after_rental. 409 offline_queue_full / online_queue_full when the server has 50 commands waiting. Takes Idempotency-Key.',
        }),
      },
    )
    .get('/commands', ({ verb, query }) => listCommands({ ...verb, input: query }), {
      query: CommandListQuery,
      response: responses({ 200: CommandPage }, [401, 403, 422]),
      detail: describe(read, { tags, summary: 'List commands, newest first' }),
    })
    .get(
      '/commands/:id',
      async ({ verb, request, params, set }) => {
        const { view, etag } = await getCommand({ ...verb, id: params.id })
        if (ifNoneMatchHits(request.headers.get('if-none-match'), etag)) return notModified(etag, requestState(request).id) as never
        set.headers.etag = etag
        return view
      },
      {
        params: IdParams,
        response: responses({ 200: Command }, [304, 401, 403, 404, 422]),
        detail: describe(read, { tags, summary: 'Command status and progress', description: 'ETag is the command version.' }),
      },
    )
    .get('/commands/:id/timeline', ({ verb, params, query }) => commandTimelinePage({ ...verb, id: params.id, input: query }), {
      params: IdParams,
      query: TimelineQuery,
      response: responses({ 200: TimelinePage }, [401, 403, 404, 422]),
      detail: describe(read, { tags, summary: 'Append-only timeline of a command, oldest first' }),
    })
    .get('/commands/:id/logs/:log_id', ({ verb, params }) => commandLog({ ...verb, id: params.id, logId: params.log_id }), {
      // log_id is opaque (the spec's log_ref): never validated for shape, so the command's tenant is
      // checked first and another tenant's command is a 404 whatever the log id looks like (issue 36).
      params: t.Object({
        id: t.String({ format: 'uuid' }),
        log_id: t.String({ description: "The command's `log_ref`, an opaque reference; one that names no log of this command is a 404" }),
      }),
      response: responses({ 200: CommandLog }, [401, 403, 404, 422]),
      detail: describe(read, { tags, summary: 'The redacted, bounded log of a command (64 KiB)' }),
    })
    .post(
      '/commands/:id/cancel',
      async ({ verb, request, params, set }) => {
        const { view, etag } = await cancelCommand({
          ...verb,
          id: params.id,
          ifMatch: request.headers.get('if-match'),
        })
        set.headers.etag = etag
        return view
      },
      {
        params: IdParams,
        response: responses({ 200: Command }, [401, 403, 404, 409, 412, 422]),
        detail: describe(write, {
          tags,
          summary: 'Cancel a command (best effort)',
          description:
            'Not yet accepted by the agent: cancelled at once. Accepted: the agent is asked to stop; the command ends when it reports back (cancelled) or at its deadline. An ended command → 409. If-Match optional.',
        }),
      },
    )
}
