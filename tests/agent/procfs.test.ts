import { describe, expect, test } from 'bun:test'
import { cpuUsagePct, diskUsedPct, memoryUsedPct, netMbps, parseMeminfo, parseNetDev, parseProcStat } from '../../agent/lib/procfs'

const STAT_1 = `cpu  1000 0 500 8000 500 0 0 0 0 0
cpu0 500 0 250 4000 250 0 0 0 0 0
intr 12345
`
const STAT_2 = `cpu  1600 0 700 8600 600 0 100 0 0 0
cpu0 800 0 350 4300 300 0 50 0 0 0
`

const MEMINFO = `MemTotal:       32768000 kB
MemFree:         1000000 kB
MemAvailable:   24576000 kB
Buffers:          500000 kB
Cached:          8000000 kB
Active(anon):    1234 kB
`

const NETDEV = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 900000000   1000    0    0    0     0          0         0 900000000   1000    0    0    0     0       0          0
  eth0: 1000000000  2000    0    0    0     0          0         0 250000000   1500    0    0    0     0       0          0
docker0: 5000000    10     0    0    0     0          0         0 7000000     10    0    0    0     0       0          0
`

describe('/proc parsers', () => {
  test('CPU usage is the non-idle share of the time between two /proc/stat readings (iowait counts as idle)', () => {
    const a = parseProcStat(STAT_1)!
    const b = parseProcStat(STAT_2)!
    expect(a).toEqual({ total: 10000, idle: 8500 })
    // Δtotal = 11600 − 10000 = 1600, Δidle = 9200 − 8500 = 700 → 900 / 1600
    expect(cpuUsagePct(a, b)).toBe(56.25)
  })

  test('CPU usage is unknown for the first reading or when the counters did not move', () => {
    const a = parseProcStat(STAT_1)!
    expect(cpuUsagePct(null, a)).toBeNull()
    expect(cpuUsagePct(a, a)).toBeNull()
    expect(parseProcStat('garbage')).toBeNull()
  })

  test('memory used is total minus available, as a percentage', () => {
    expect(memoryUsedPct(parseMeminfo(MEMINFO))).toBe(25)
  })

  test('without MemAvailable (old kernels) free + buffers + cached counts as available', () => {
    const old = MEMINFO.split('\n')
      .filter((l) => !l.startsWith('MemAvailable'))
      .join('\n')
    expect(parseMeminfo(old)).toEqual({ totalKb: 32768000, availableKb: 9500000 })
    expect(memoryUsedPct(parseMeminfo(''))).toBeNull()
  })

  test('network totals exclude lo, and interfaces the filter rejects', () => {
    expect(parseNetDev(NETDEV)).toEqual({ rx: 1005000000, tx: 257000000 })
    expect(parseNetDev(NETDEV, (i) => i === 'eth0')).toEqual({ rx: 1000000000, tx: 250000000 })
    expect(parseNetDev(NETDEV, () => false)).toBeNull()
  })

  test('network rates are megabits per second between readings; a counter reset is unknown', () => {
    expect(netMbps({ rx: 0, tx: 0 }, { rx: 125_000_000, tx: 12_500_000 }, 10)).toEqual({ rx: 100, tx: 10 })
    expect(netMbps({ rx: 500, tx: 500 }, { rx: 100, tx: 600 }, 1)).toEqual({ rx: null, tx: 0 })
    expect(netMbps(null, { rx: 1, tx: 1 }, 1)).toEqual({ rx: null, tx: null })
  })

  test('disk used is computed the way df shows it (reserved blocks do not count as available)', () => {
    // 1000 blocks, 400 free of which 350 available to users: used 600 of 950
    expect(diskUsedPct({ blocks: 1000, bfree: 400, bavail: 350 })).toBe(63.16)
    expect(diskUsedPct({ blocks: 0, bfree: 0, bavail: 0 })).toBeNull()
  })
})
