import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { releaseAt } from '../../src/modules/notifications/quiet-hours'

/**
 * Issue 19, quiet hours in the account timezone: a window inside one day, one across midnight, and
 * the release time across a DST change (Europe/Berlin, 2026-03-29 02:00 → 03:00 and 2026-10-25
 * 03:00 → 02:00), computed from the IANA zone data; outside the window or disabled, now.
 */

const us = (iso: string) => Date.parse(iso) * 1000
const iso = (u: number) => new Date(u / 1000).toISOString()
/** The zone's UTC offset at an instant, as Intl names it ("GMT+01:00"). */
const zoneOffset = (u: number, timeZone: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone, timeZoneName: 'longOffset' }).formatToParts(new Date(u / 1000)).find((p) => p.type === 'timeZoneName')!.value

describe('quiet hours', () => {
  test('disabled, or outside the window: now', () => {
    const now = us('2026-06-10T12:00:00Z')
    expect(releaseAt(now, { enabled: false, from: '00:00', to: '23:59' }, 'UTC')).toBe(now)
    expect(releaseAt(now, { enabled: true, from: '22:00', to: '07:00' }, 'UTC')).toBe(now)
    expect(releaseAt(now, { enabled: true, from: '13:00', to: '14:00' }, 'UTC')).toBe(now)
  })

  test('a window inside one day ends the same day', () => {
    expect(iso(releaseAt(us('2026-06-10T12:30:00Z'), { enabled: true, from: '12:00', to: '14:00' }, 'UTC'))).toBe('2026-06-10T14:00:00.000Z')
  })

  test('a window across midnight: before midnight it ends the next morning, after midnight the same morning', () => {
    const w = { enabled: true, from: '22:00', to: '07:00' }
    expect(iso(releaseAt(us('2026-06-10T23:15:00Z'), w, 'UTC'))).toBe('2026-06-11T07:00:00.000Z')
    expect(iso(releaseAt(us('2026-06-11T03:00:00Z'), w, 'UTC'))).toBe('2026-06-11T07:00:00.000Z')
    expect(releaseAt(us('2026-06-11T07:00:00Z'), w, 'UTC')).toBe(us('2026-06-11T07:00:00Z'))
  })

  test('local time, not UTC: 07:00 in Berlin is 05:00 UTC in summer and 06:00 UTC in winter', () => {
    const w = { enabled: true, from: '22:00', to: '07:00' }
    expect(iso(releaseAt(us('2026-07-01T22:00:00Z'), w, 'Europe/Berlin'))).toBe('2026-07-02T05:00:00.000Z')
    expect(iso(releaseAt(us('2026-01-15T22:00:00Z'), w, 'Europe/Berlin'))).toBe('2026-01-16T06:00:00.000Z')
  })

  test('a window whose end DST skips ends as the clock jumps over it, even into the next window', () => {
    // 28 March 2026, 03:00 in Berlin, inside 03:00–02:00: its end, 02:00 on the 29th, does not exist.
    const w = { enabled: true, from: '03:00', to: '02:00' }
    const at = releaseAt(us('2026-03-28T02:00:00Z'), w, 'Europe/Berlin')
    expect(iso(at)).toBe('2026-03-29T01:00:00.000Z')
    expect(zoneOffset(at, 'Europe/Berlin')).toBe('GMT+02:00')
    expect(zoneOffset(at - 60_000_000, 'Europe/Berlin')).toBe('GMT+01:00')
  })

  test('an end inside the skipped hour, not only at its start, also ends at the jump', () => {
    // 02:01 and 02:59 on 29 March 2026 do not exist in Berlin either: the first instant after
    // them is the jump to 03:00 (01:00 UTC), not 03:01 or 03:59, which would be inside the next
    // 03:00 window already.
    for (const to of ['02:01', '02:30', '02:59']) {
      const at = releaseAt(us('2026-03-28T02:00:00Z'), { enabled: true, from: '03:00', to }, 'Europe/Berlin')
      expect(iso(at)).toBe('2026-03-29T01:00:00.000Z')
    }
    // A window ending in the skipped hour but starting after it ends at the jump too.
    expect(iso(releaseAt(us('2026-03-28T23:30:00Z'), { enabled: true, from: '00:00', to: '02:30' }, 'Europe/Berlin'))).toBe('2026-03-29T01:00:00.000Z')
    // New York springs forward on 8 March 2026, 02:00 EST → 03:00 EDT (07:00 UTC).
    expect(iso(releaseAt(us('2026-03-08T05:00:00Z'), { enabled: true, from: '00:00', to: '02:45' }, 'America/New_York'))).toBe('2026-03-08T07:00:00.000Z')
  })

  test('across a DST change the window ends at the local wall-clock time of the new offset', () => {
    const w = { enabled: true, from: '22:00', to: '07:00' }
    // The night of 28 to 29 March 2026 Berlin springs forward (UTC+1 → UTC+2): 07:00 local is 05:00 UTC.
    expect(iso(releaseAt(us('2026-03-28T22:30:00Z'), w, 'Europe/Berlin'))).toBe('2026-03-29T05:00:00.000Z')
    // The night of 24 to 25 October 2026 it falls back (UTC+2 → UTC+1): 07:00 local is 06:00 UTC.
    expect(iso(releaseAt(us('2026-10-24T21:30:00Z'), w, 'Europe/Berlin'))).toBe('2026-10-25T06:00:00.000Z')
  })

  test('whatever the moment and window, the release is never before now, and never inside the window a day later', () => {
    const hhmm = fc
      .tuple(fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }))
      .map(([h, m]) => `${String(h).padStart(2, '0')}:${String(m).padStart(2, '0')}`)
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 366 * 86400 }),
        hhmm,
        hhmm,
        fc.constantFrom('UTC', 'Europe/Berlin', 'America/New_York', 'Asia/Kolkata'),
        (offset, from, to, tz) => {
          const now = us('2026-01-01T00:00:00Z') + offset * 1_000_000
          const at = releaseAt(now, { enabled: true, from, to }, tz)
          expect(at).toBeGreaterThanOrEqual(now)
          expect(at - now).toBeLessThanOrEqual(25 * 3600 * 1_000_000)
          // At the release, the window is over: releasing again gives the same instant. The one
          // exception is a window whose end DST skipped (03:00–02:00 in Berlin on 29 March): it ends
          // as the clock jumps past 02:00, straight into 03:00 and the next window, so the release
          // is that jump, where the zone's offset changes.
          if (releaseAt(at, { enabled: true, from, to }, tz) !== at) expect(zoneOffset(at, tz)).not.toBe(zoneOffset(at - 60_000_000, tz))
        },
      ),
      { numRuns: 500 },
    )
  })
})
