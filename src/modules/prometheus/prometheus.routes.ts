import { Type } from '@sinclair/typebox'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { EXPOSITION_CONTENT_TYPE } from './exposition'
import { scrapeMetrics } from './prometheus.service'

/** The fleet for Prometheus (docs/prometheus.md). */
export function prometheusRoutes(deps: Deps) {
  return apiRoutes('prometheus', deps).get(
    '/metrics/prometheus',
    async ({ verb }) => new Response(await scrapeMetrics(verb), { headers: { 'content-type': EXPOSITION_CONTENT_TYPE } }),
    {
      response: responses({ 200: Type.String({ description: `${EXPOSITION_CONTENT_TYPE}: the Prometheus text exposition format 0.0.4` }) }, [401, 403]),
      detail: describe(
        { role: 'viewer', anyScope: ['servers:read', 'marketplaces:read', 'billing:read'], reach: 'server' },
        {
          tags: ['monitoring'],
          summary: 'Fleet, rentals, earnings and balance as Prometheus metrics',
          description:
            'The Prometheus text exposition format 0.0.4 (`' +
            EXPOSITION_CONTENT_TYPE +
            '`), for a scrape every 15 s with `authorization: {credentials_file: …}` (docs/prometheus.md has the metric catalogue, the scrape configuration and a Grafana dashboard). ' +
            'Each family shows to the scope that guards it: `servers:read` presence and the latest GPU readings, `marketplaces:read` rentals running and earnings accrued today, `billing:read` the balance and how long it lasts (not for a token with a `server_allowlist`, as on every billing operation). ' +
            'A token needs at least one of them; a session sees what its role may read. Per-server series carry `server` (the id) and `name`, per-GPU ones also `gpu` (the index) and `model`; a token with a `server_allowlist` sees only its servers. Money is the exact decimal of its micro-USD.',
        },
      ),
    },
  )
}
