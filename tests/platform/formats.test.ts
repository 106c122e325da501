import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { FormatRegistry } from '@sinclair/typebox'
import { z } from 'zod'
import '../../src/platform/formats'

/**
 * src/platform/formats.ts replaces the openapi plugin's zod-backed string formats with regexes
 * compiled once. Nothing accepted or refused may change: each is checked against zod 4 itself.
 */
const zodOf: Record<string, z.ZodType> = { uuid: z.uuid(), email: z.email(), date: z.iso.date() }

const samples: Record<string, fc.Arbitrary<string>> = {
  uuid: fc.oneof(
    fc.uuid().map((u) => u),
    fc.uuid().map((u) => u.toUpperCase()),
    fc.stringMatching(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/),
    fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'urn:uuid:0190b5f2-7c1e-7a3b-9c4d-1e2f3a4b5c6d', ''),
    fc.string(),
  ),
  email: fc.oneof(fc.emailAddress(), fc.constantFrom('a@b.co', '.a@b.co', 'a..b@c.io', 'owner@example.test', 'x@y', 'ü@example.com'), fc.string()),
  date: fc.oneof(
    fc.date({ min: new Date('1600-01-01'), max: new Date('2400-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
    fc.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
    fc.constantFrom('2024-02-29', '2023-02-29', '1900-02-29', '2000-02-29', '2026-13-01', '2026-11-31'),
    fc.string(),
  ),
}

describe('string formats', () => {
  for (const name of Object.keys(zodOf))
    test(`${name}: accepts and refuses exactly what zod 4 does`, () => {
      const check = FormatRegistry.Get(name)!
      fc.assert(
        fc.property(samples[name]!, (v) => {
          expect(check(v)).toBe(zodOf[name]!.safeParse(v).success)
        }),
        { numRuns: 2000 },
      )
    })
})
