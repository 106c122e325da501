import { describe, expect, test } from 'bun:test'
import { SimulatedGpus, seededRandom } from '../../agent/lib/simulate'

/** The simulated GPUs behind `--simulate N`, and the profiles the demo gives its servers. */

describe('simulated GPUs', () => {
  test('without a profile they are RTX 4090s that stay within a healthy card’s temperatures', () => {
    const sim = new SimulatedGpus(2, 'seed', {}, seededRandom('1'))
    expect(sim.inventory().map((g) => [g.model, g.memory_mb])).toEqual([
      ['NVIDIA GeForce RTX 4090', 24564],
      ['NVIDIA GeForce RTX 4090', 24564],
    ])
    for (let i = 0; i < 500; i++)
      for (const v of sim.sample().values()) {
        expect(v.temperature_c!).toBeLessThan(85)
        expect(v.memory_used_mb!).toBeLessThanOrEqual(24564)
      }
  })

  test('a profile names the model and memory, caps the power at its maximum, and a big card runs no hotter for it', () => {
    const sim = new SimulatedGpus(3, 'seed', { model: 'NVIDIA H100 80GB HBM3', memoryMb: 81559, maxPowerW: 700 }, seededRandom('2'))
    expect(sim.inventory().map((g) => g.model)).toEqual(['NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3', 'NVIDIA H100 80GB HBM3'])
    expect(sim.inventory()[0]!.memory_mb).toBe(81559)
    let busiest = 0
    for (let i = 0; i < 500; i++)
      for (const v of sim.sample().values()) {
        expect(v.power_w!).toBeLessThanOrEqual(700)
        expect(v.memory_used_mb!).toBeLessThanOrEqual(81559)
        expect(v.temperature_c!).toBeLessThan(85)
        busiest = Math.max(busiest, v.power_w!)
      }
    expect(busiest).toBeGreaterThan(600) // it does get busy
  })

  test('a hot rig reads 85 °C or more from its first sample on, whatever its power', () => {
    for (const maxPowerW of [250, 450]) {
      const sim = new SimulatedGpus(2, 'seed', { hot: true, maxPowerW }, seededRandom('3'))
      for (let i = 0; i < 500; i++) for (const v of sim.sample().values()) expect(v.temperature_c!).toBeGreaterThanOrEqual(85)
    }
  })
})
