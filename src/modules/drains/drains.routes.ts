import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { idempotent } from '../../platform/idempotency'
import { responses, IdParams } from '../../platform/schemas'
import { Drain, DrainCreate, DrainList, DrainListQuery, GroupDrainAnswer } from './drains.model'
import { cancelDrain, getDrain, listDrains, startDrain, startGroupDrain } from './drains.service'

const tags = ['servers']
const read = { role: 'viewer', scope: 'servers:read', reach: 'server' } as const
// A drain withdraws and publishes offers and issues commands: it takes what withdrawing an offer takes.
const write = { role: 'admin', scope: 'marketplaces:write', reach: 'server' } as const
const STATES =
  'States: draining (offers off, window announced) → awaiting_rental_end (no running rental is cut) → working (the commands run) → relisting (the kept offers go back, the window is cancelled) → done; cancelled; failed with `failure` in words. Each step is a server event `drain.<state>` (GET /servers/{id}/events). docs/marketplaces.md "Drain".'

/** Drains: a server (or each server of a group) taken out for work without breaking a rental. */
export function drainsRoutes(deps: Deps) {
  return apiRoutes('drains', deps)
    .post(
      '/servers/:id/drain',
      async ({ verb, params, body, set }) => {
        const d = await startDrain({ ...verb, serverId: params.id, input: body })
        set.status = 201
        set.headers.location = `${API_PREFIX}/drains/${d.id}`
        return d
      },
      {
        beforeHandle: idempotent(deps),
        params: IdParams,
        body: DrainCreate,
        response: responses({ 201: Drain }, [401, 403, 404, 409, 413, 415, 422]),
        detail: describe(
          { ...write, serverParam: 'id', denyFrozen: true },
          {
            tags,
            summary: 'Drain a server for maintenance',
            description: `Takes each linked marketplace's offer off (the kept offer is held by the drain), announces the window to renters where the platform can (marketplace_a: dnotify; marketplace_b has no maintenance API: the withdrawal alone keeps new renters off), queues \`commands\` with requires after_rental, waits for every running rental to end, runs the work, publishes the kept offers again and cancels the window. The answer is the drain after its first step (201): awaiting_rental_end, working, or failed when a platform refused (what was done is undone first). 409 when the server is already being drained or is decommissioned; 422 for an unknown command type or bad params (nothing is sent). ${STATES} Takes Idempotency-Key.`,
          },
        ),
      },
    )
    .post('/groups/:id/drain', async ({ verb, params, body }) => startGroupDrain({ ...verb, groupId: params.id, input: body }), {
      beforeHandle: idempotent(deps),
      params: IdParams,
      body: DrainCreate,
      response: responses({ 200: GroupDrainAnswer }, [401, 403, 404, 413, 415, 422]),
      detail: describe(
        { ...write, reach: 'tenant', denyFrozen: true },
        {
          tags,
          summary: 'Drain every server of a group',
          description:
            'One drain per managed server of the group, as POST /servers/{id}/drain starts it (each with `group_id`, each cancelled on its own); a server already being drained is in `skipped` with the reason. Takes Idempotency-Key.',
        },
      ),
    })
    .get('/drains', ({ verb, query }) => listDrains({ ...verb, input: query }), {
      query: DrainListQuery,
      response: responses({ 200: DrainList }, [401, 403, 422]),
      detail: describe(read, {
        tags,
        summary: 'List drains, newest first',
        description: `Filters: server_id, state, live=true (not finished: at most one per server). ${STATES}`,
      }),
    })
    .get('/drains/:id', ({ verb, params }) => getDrain({ ...verb, id: params.id }), {
      params: IdParams,
      response: responses({ 200: Drain }, [401, 403, 404, 422]),
      detail: describe(read, { tags, summary: 'A drain: its state, each marketplace, its commands', description: STATES }),
    })
    .post('/drains/:id/cancel', ({ verb, params }) => cancelDrain({ ...verb, id: params.id }), {
      beforeHandle: idempotent(deps),
      params: IdParams,
      response: responses({ 200: Drain }, [401, 403, 404, 409, 422]),
      detail: describe(write, {
        tags,
        summary: 'Cancel a drain',
        description:
          'At any step before done: the commands the agent has not accepted are cancelled (one it runs is left to finish), each withdrawn offer is published again, each announced window cancelled → cancelled. A platform refusing to put something back → failed, `failure` naming what stays withdrawn. 409 when the drain already finished, or while a step of it is in progress. Takes Idempotency-Key.',
      }),
    })
}
