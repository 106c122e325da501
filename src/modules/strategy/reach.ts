import type { PolicyTarget } from '../../../db/schema/strategy'
import { ensureReaches, mayAccessServer, type Actor } from '../../platform/access'

/**
 * Pricing policies and a token with a server_allowlist (docs/strategy.md "Tokens limited to
 * servers", docs/access.md). A group or GPU-model target reaches servers no allowlist names (the
 * group's members and the model's servers change without the token), so such a token:
 *
 * - sets only `server_ids` targets, all of them its servers (another id is 404 like any server
 *   outside the allowlist; a `group_id` or `gpu_model` is 403 tenant_wide, in a preview too);
 * - changes or deletes only policies whose target is its servers alone (another is 403:
 *   tenant_wide for a group or model target, outside_allowlist for a list naming other servers);
 * - sees the policies that may price its servers: those of a group or model (which name no server)
 *   and those whose list names one of its servers, cut to its servers. A list of other servers only
 *   is a plain 404 and absent from the list.
 *
 * So strategy.suggest, which runs every stored policy, never prices a server outside the allowlist
 * of the token that set the policy.
 */

/** The servers a target names; null for a group or a GPU model (the tenant's fleet, as it changes). */
function targetServers(t: PolicyTarget): readonly string[] | null {
  return t.kind === 'servers' ? t.serverIds : null
}

/** Before a target from a request body is stored or previewed: a token with an allowlist may only name its servers. */
export function ensureTargetReach(actor: Actor, input: { server_ids?: string[]; group_id?: string; gpu_model?: string }): void {
  if (input.server_ids) ensureReaches(actor, input.server_ids, 'a target of these servers', '/target/server_ids')
  else if (input.group_id !== undefined) ensureReaches(actor, null, 'a group target', '/target/group_id')
  else ensureReaches(actor, null, 'a GPU-model target', '/target/gpu_model')
}

/** Before a stored policy is changed or deleted: its target must be the caller's servers alone. */
export function ensurePolicyReach(actor: Actor, target: PolicyTarget): void {
  ensureReaches(actor, targetServers(target), 'this policy')
}

/** Whether the caller sees the policy at all (a list of other servers only is hidden). */
export function policyVisible(actor: Actor, target: PolicyTarget): boolean {
  return target.kind !== 'servers' || target.serverIds.some((id) => mayAccessServer(actor, id))
}

/** The target as the caller may see it: a list of servers is cut to the caller's servers. */
export function visibleTarget(actor: Actor, target: PolicyTarget): PolicyTarget {
  return target.kind === 'servers' ? { kind: 'servers', serverIds: target.serverIds.filter((id) => mayAccessServer(actor, id)) } : target
}
