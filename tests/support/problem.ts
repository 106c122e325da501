import { expect } from 'bun:test'
import { TEST_PUBLIC_URL } from './app'

/** The closed set of problem codes, copied from docs/conventions.md "Errors: problem documents" so src cannot drift from it. */
export const SPEC_PROBLEM_CODES = [
  'unauthorized',
  'forbidden',
  'csrf_rejected',
  'not_found',
  'conflict',
  'idempotency_conflict',
  'validation_failed',
  'rate_limited',
  'payload_too_large',
  'unsupported_agent_version',
  'temporarily_unavailable',
  'offline_queue_full',
  'online_queue_full',
  'plan_required',
  'server_limit_reached',
  'feature_not_entitled',
  'account_in_grace',
  'account_frozen',
  'payment_pending',
  'payment_expired',
  'payment_amount_mismatch',
  'change_already_pending',
  'change_already_applied',
  'change_effective',
  'reserve_not_covered',
  'direction_changed',
] as const

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export type Problem = {
  type: string
  title: string
  status: number
  code: string
  detail?: string
  instance?: string
  request_id?: string
  errors?: { path: string; code: string }[]
}

/**
 * Asserts the response is a problem document of the documented shape (docs/conventions.md) with
 * this status and code, and returns it. The request_id must be the one in the X-Request-Id header.
 */
export async function expectProblem(res: Response, status: number, code: string): Promise<Problem> {
  const text = await res.text()
  expect({ status: res.status, body: text }).toMatchObject({ status })
  expect(res.headers.get('content-type')).toBe('application/problem+json')
  const doc = JSON.parse(text) as Problem
  expect(doc.code).toBe(code)
  expect(SPEC_PROBLEM_CODES as readonly string[]).toContain(doc.code)
  expect(doc.status).toBe(res.status)
  expect(doc.type).toBe(`${TEST_PUBLIC_URL}/problems/${doc.code}`)
  expect(typeof doc.title).toBe('string')
  expect(doc.title.length).toBeGreaterThan(0)
  expect(doc.title.length).toBeLessThanOrEqual(256)
  expect(doc.request_id).toMatch(UUID)
  expect(doc.request_id).toBe(res.headers.get('x-request-id')!)
  if (doc.detail !== undefined) expect(doc.detail.length).toBeLessThanOrEqual(2048)
  if (doc.errors !== undefined) {
    expect(doc.errors.length).toBeGreaterThan(0)
    expect(doc.errors.length).toBeLessThanOrEqual(100)
    for (const e of doc.errors) {
      // A JSON Pointer: empty (the whole document) or slash-separated tokens.
      expect(e.path === '' || e.path.startsWith('/')).toBe(true)
      expect(e.code.length).toBeGreaterThan(0)
    }
  }
  return doc
}
