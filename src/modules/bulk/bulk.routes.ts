import { t } from 'elysia'
import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { idempotent } from '../../platform/idempotency'
import { PageQuery, responses, IdParams } from '../../platform/schemas'
import { BulkBody, BulkOperation, BulkOperationPage, BulkPreview } from './bulk.model'
import { cancelBulk, createBulk, getBulk, listBulk, previewBulk } from './bulk.service'

const tags = ['marketplaces']
// A token with a server_allowlist sees and starts operations over its servers only: a server id
// outside it is a 404, a group selection 403, an operation over other servers a 404 (docs/marketplaces.md).
const READ = { role: 'viewer', scope: 'marketplaces:read', reach: 'server' } as const
// Publishing and withdrawing offers is the admin's, as PUT/DELETE …/offer are.
const WRITE = { role: 'admin', scope: 'marketplaces:write', reach: 'server' } as const

const SELECTION =
  "The selection is `server_ids` (managed servers of the tenant, in the order their items run; another tenant's or an unknown id → 422 at /server_ids/<i> not_found) or `group_id` (every managed server of the group, by name). Each server gets an item: skipped with its reason when it is not linked at the marketplace, its link is stale or conflicting, a withdrawal finds it unlisted, a reprice finds it unlisted or already at the price, a publication finds it listed, or no price is known; otherwise before → after."

/** Bulk publish / withdraw / reprice with a preview (docs/marketplaces.md "Bulk changes"). */
export function bulkRoutes(deps: Deps) {
  return apiRoutes('bulk', deps)
    .post('/bulk-operations/preview', ({ verb, body }) => previewBulk({ ...verb, input: body }), {
      body: BulkBody,
      response: responses({ 200: BulkPreview }, [401, 403, 413, 415, 422]),
      detail: describe(WRITE, {
        tags,
        summary: "Preview a bulk change: each machine's offer before and after, or why it is skipped",
        description: `Nothing is stored and nothing is sent to the platform: the offers are the links' projections as the last sync (or write) left them. ${SELECTION} The same body to POST /bulk-operations runs it.`,
      }),
    })
    .post(
      '/bulk-operations',
      async ({ verb, body, set }) => {
        const op = await createBulk({ ...verb, input: body })
        set.status = 202
        set.headers.location = `${API_PREFIX}/bulk-operations/${op.id}`
        return op
      },
      {
        beforeHandle: idempotent(deps),
        body: BulkBody,
        response: responses({ 202: BulkOperation }, [401, 403, 409, 413, 415, 422]),
        detail: describe(WRITE, {
          tags,
          summary: 'Start a bulk publish, withdrawal or reprice',
          description: `Answers 202 with the operation and an item per server (skipped items already decided). The bulk.run job (every 5 s) then sends the items one after the other, paced by the platform's limits (marketplace_a: Vast's per-endpoint thresholds; a 429 is retried like Vast's client), each written to the operations log with reason "bulk operation <id>", and each item ends done, refused (with the platform's reason), skipped or failed. Each item is planned again just before it is sent, so a machine changed meanwhile is skipped rather than overwritten. Resumes after a restart from the first item not decided; a decided item is never sent again. ${SELECTION} publish and reprice are refused while the account is frozen (403 account_frozen); withdraw is not. Takes Idempotency-Key.`,
        }),
      },
    )
    .get('/bulk-operations', ({ verb, query }) => listBulk({ ...verb, input: query }), {
      query: t.Object({ ...PageQuery }),
      response: responses({ 200: BulkOperationPage }, [401, 403, 422]),
      detail: describe(READ, {
        tags,
        summary: 'List bulk operations, newest first',
        description: 'Each with its counts by item state; the items are on GET /bulk-operations/{id}.',
      }),
    })
    .get('/bulk-operations/:id', ({ verb, params }) => getBulk({ ...verb, id: params.id }), {
      params: IdParams,
      response: responses({ 200: BulkOperation }, [401, 403, 404, 422]),
      detail: describe(READ, {
        tags,
        summary: 'A bulk operation with its counts and every item',
        description:
          "Each item: the server, the machine, its state, the offer before and after, the reason (the platform's words for a refusal), attempts and when it was decided. Another tenant's id → 404.",
      }),
    })
    .post('/bulk-operations/:id/cancel', ({ verb, params }) => cancelBulk({ ...verb, id: params.id }), {
      beforeHandle: idempotent(deps),
      params: IdParams,
      response: responses({ 200: BulkOperation }, [401, 403, 404, 409, 422]),
      detail: describe(WRITE, {
        tags,
        summary: 'Cancel a bulk operation',
        description:
          'Items not sent yet become cancelled; an item whose call is out finishes and keeps its outcome. Cancelling a cancelled operation answers it as it is; a finished one → 409. Takes Idempotency-Key.',
      }),
    })
}
