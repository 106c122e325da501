import { signal } from '@preact/signals'
import { ApiError, get, onSessionEnded, request } from './api'

export type Role = 'owner' | 'admin' | 'operator' | 'viewer'
export type Me = { id: string; email: string; tenant_id: string; role: Role; display_name: string | null; timezone: string; locale: string; created_at: string }

/** undefined: not known yet; null: signed out. */
export const me = signal<Me | null | undefined>(undefined)
/** Why the sign-in page is shown, when it is not the first visit (a session that ended). */
export const signedOutReason = signal<string | null>(null)

onSessionEnded(() => {
  if (me.value) signedOutReason.value = 'Your session ended. Sign in again to go on.'
  me.value = null
})

export async function loadMe(): Promise<void> {
  try {
    me.value = await get<Me>('/me')
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) me.value = null
    else throw e
  }
}

export function signedIn(profile: Me): void {
  signedOutReason.value = null
  me.value = profile
}

export async function signOut(): Promise<void> {
  try {
    await request('DELETE', '/auth/sessions/current')
  } finally {
    signedOutReason.value = 'You signed out.'
    me.value = null
  }
}

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2, owner: 3 }
/** Whether the member may do what needs `role` (the service decides; this only hides buttons that would be refused). */
export const can = (role: Role) => RANK[me.value?.role ?? 'viewer'] >= RANK[role]
