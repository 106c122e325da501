import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { backoffCeiling, backoffDelay } from '../../agent/lib/backoff'
import { fingerprint, isPublicIpv4, localPublicIpv4, validPortRange } from '../../agent/lib/host'
import { simulatedUuid } from '../../agent/lib/simulate'

describe('hardware fingerprint', () => {
  const facts = { machineId: '3d1219c7c4c5404aaa1f6d2a48adfda4', gpuUuids: ['GPU-b', 'GPU-a'] }

  test('is sha256 hex and the same for the same hardware, whatever order the GPUs are listed in', () => {
    const fp = fingerprint(facts)
    expect(fp).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(fingerprint({ ...facts })).toBe(fp)
    expect(fingerprint({ ...facts, gpuUuids: ['GPU-a', 'GPU-b'] })).toBe(fp)
  })

  test('changes when a GPU is swapped or the machine id differs', () => {
    const fp = fingerprint(facts)
    expect(fingerprint({ ...facts, gpuUuids: ['GPU-a', 'GPU-c'] })).not.toBe(fp)
    expect(fingerprint({ ...facts, machineId: 'other' })).not.toBe(fp)
  })

  test('simulated GPU UUIDs are stable for one seed and differ between seeds', () => {
    expect(simulatedUuid('host:/var/lib/a', 0)).toBe(simulatedUuid('host:/var/lib/a', 0))
    expect(simulatedUuid('host:/var/lib/a', 0)).not.toBe(simulatedUuid('host:/var/lib/b', 0))
    expect(simulatedUuid('s', 1)).toMatch(/^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  })
})

describe('host facts', () => {
  test('only a globally routable IPv4 address counts as public', () => {
    for (const ip of ['10.0.0.5', '192.168.1.2', '172.20.0.1', '100.64.1.1', '127.0.0.1', '169.254.3.4', '203.0.113.7', '0.0.0.0', '224.0.0.1'])
      expect(isPublicIpv4(ip)).toBe(false)
    for (const ip of ['8.8.8.8', '172.32.0.1', '100.128.0.1', '51.15.2.3']) expect(isPublicIpv4(ip)).toBe(true)
  })

  test('the public address is learned from local interfaces only, and omitted behind NAT', () => {
    const nic = (address: string, internal = false) => ({ address, family: 'IPv4' as const, internal, netmask: '', mac: '', cidr: null })
    expect(localPublicIpv4({ lo: [nic('127.0.0.1', true)], eth0: [nic('192.168.1.20')] })).toBeNull()
    expect(localPublicIpv4({ eth0: [nic('192.168.1.20')], eth1: [nic('51.15.2.3')] })).toBe('51.15.2.3')
  })

  test('a port range is two ports, low to high', () => {
    expect(validPortRange('40000-40199')).toBe(true)
    for (const bad of ['40199-40000', '0-10', '1-70000', '40000', 'a-b', '40000-40199 ']) expect(validPortRange(bad)).toBe(false)
  })
})

describe('reconnect backoff', () => {
  const opts = { baseMs: 1000, capMs: 60_000 }

  test('the ceiling doubles per failure and stops at the cap', () => {
    expect([0, 1, 2, 3, 5, 6, 7, 100, 5000].map((n) => backoffCeiling(n, opts))).toEqual([1000, 2000, 4000, 8000, 32000, 60000, 60000, 60000, 60000])
  })

  test('full jitter: every delay lies in [0, ceiling)', () => {
    fc.assert(
      fc.property(fc.nat(10_000), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (attempt, r) => {
        const d = backoffDelay(attempt, { ...opts, random: () => r })
        return d >= 0 && d < backoffCeiling(attempt, opts) && Number.isInteger(d)
      }),
    )
  })

  test('delays spread over the whole range, so a fleet does not reconnect in step', () => {
    const delays = Array.from({ length: 2000 }, () => backoffDelay(10, opts))
    expect(Math.min(...delays)).toBeLessThan(6000)
    expect(Math.max(...delays)).toBeGreaterThan(54000)
  })
})
