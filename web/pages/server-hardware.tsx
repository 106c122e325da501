import { num } from '../lib/format'
import type { ServerDetail } from '../lib/api-types'
import { Section } from '../ui/layout'
import { DataTable, Empty } from '../ui/states'

/**
 * The server page's "Hardware and health" section (docs/agent.md "Facts", "Health readings",
 * "Kernel log"): the host's driver, CUDA, CPU, memory, disks and container stack, and per GPU its
 * PCIe link against what it could be, power limits, ECC and memory repairs, modes, VBIOS, why its
 * clocks are held down and the Xids the kernel logged. Unknown is a dash, never a zero.
 */

type Gpu = ServerDetail['gpus'][number]
type Health = ServerDetail['gpu_health'][number]
type Metrics = Record<string, { value: number | null } | undefined>

const dash = (v: string | null | undefined) => (v === null || v === undefined || v === '' ? '—' : v)
const mode = (v: boolean | null | undefined) => (v === true ? 'on' : v === false ? 'off' : '—')

function Link({ m, g, h }: { m: Metrics; g: Gpu; h: Health | undefined }) {
  const gen = m.pcie_link_gen?.value ?? null
  const width = m.pcie_link_width?.value ?? null
  const now = gen === null && width === null ? '—' : `gen ${gen ?? '?'} ×${width ?? '?'}`
  const max = g.pcie_gen_max == null && g.pcie_width_max == null ? '' : ` of gen ${g.pcie_gen_max ?? '?'} ×${g.pcie_width_max ?? '?'}`
  return (
    <>
      {now}
      {max}
      {h?.pcie_link_degraded === true && (
        <>
          {' '}
          <span class="badge bad">degraded</span>
        </>
      )}
    </>
  )
}

function Memory({ m }: { m: Metrics }) {
  const v = (k: string) => m[k]?.value ?? null
  const parts: string[] = []
  if (v('ecc_uncorrected_aggregate') !== null || v('ecc_corrected_aggregate') !== null)
    parts.push(`ECC ${num(v('ecc_uncorrected_aggregate'))} uncorrected, ${num(v('ecc_corrected_aggregate'))} corrected`)
  if (v('remapped_rows_correctable') !== null || v('remapped_rows_uncorrectable') !== null)
    parts.push(`rows remapped ${num((v('remapped_rows_correctable') ?? 0) + (v('remapped_rows_uncorrectable') ?? 0))}`)
  if (v('remapped_rows_pending') === 1) parts.push('remap pending a reset')
  if (v('remapped_rows_failure') === 1) parts.push('remap failed')
  if (v('retired_pages_sbe') !== null || v('retired_pages_dbe') !== null)
    parts.push(`pages retired ${num((v('retired_pages_sbe') ?? 0) + (v('retired_pages_dbe') ?? 0))}`)
  if (v('retired_pages_pending') === 1) parts.push('retirement pending')
  return <>{parts.length ? parts.join('; ') : '—'}</>
}

function Xids({ h }: { h: Health | undefined }) {
  if (!h?.xids.length) return <>none</>
  return (
    <>
      {h.xids.map((x, i) => (
        <span key={x.xid}>
          {i > 0 && ', '}
          <span class={`badge ${x.xid === 79 || x.xid === 48 || x.xid === 95 ? 'bad' : 'warn'}`}>Xid {x.xid}</span> ×{x.count}
        </span>
      ))}
    </>
  )
}

export function ServerHardware({ s }: { s: ServerDetail }) {
  const d = s.host_details
  const unplaced = s.gpu_health.find((h) => h.index === null)
  return (
    <Section title="Hardware and health">
      {d ? (
        <dl class="facts">
          <dt>NVIDIA driver</dt>
          <dd>{dash(d.driver_version)}</dd>
          <dt>CUDA</dt>
          <dd>{dash(d.cuda_version)}</dd>
          <dt>CPU</dt>
          <dd>{num(d.cpu_cores, ' cores')}</dd>
          <dt>Memory</dt>
          <dd>{d.ram_mb === null ? '—' : num(Math.round(d.ram_mb / 1024), ' GiB')}</dd>
          <dt>Free disk</dt>
          <dd>{num(d.disk_free_gb, ' GB')}</dd>
          <dt>Docker</dt>
          <dd>
            {d.docker_version === null
              ? 'not installed'
              : `${d.docker_version}${d.docker_root ? `, ${d.docker_root} ${num(d.docker_disk_free_gb, ' GB')} free` : ''}`}
          </dd>
          <dt>Container toolkit</dt>
          <dd>{d.nvidia_container_toolkit_version ?? 'not installed'}</dd>
        </dl>
      ) : (
        <p class="muted">The agent has not reported the host's driver and software (an older or simulated agent).</p>
      )}
      {s.gpus.length === 0 ? (
        <Empty>The agent has reported no GPUs.</Empty>
      ) : (
        <DataTable
          label="GPU hardware and health"
          head={
            <>
              <th scope="col">GPU</th>
              <th scope="col">PCIe link</th>
              <th scope="col">Power limit</th>
              <th scope="col">Memory errors</th>
              <th scope="col">ECC / persistence / MIG</th>
              <th scope="col">VBIOS</th>
              <th scope="col">Clocks held by</th>
              <th scope="col">Xids</th>
            </>
          }
        >
          {s.gpus.map((g) => {
            const m: Metrics = s.telemetry.gpus.find((t) => t.index === g.index)?.metrics ?? {}
            const h = s.gpu_health.find((x) => x.index === g.index)
            const range = g.power_limit_min_w == null && g.power_limit_max_w == null ? '' : ` (${num(g.power_limit_min_w)}–${num(g.power_limit_max_w, ' W')})`
            return (
              <tr key={g.index}>
                <th scope="row">{g.index}</th>
                <td>
                  <Link m={m} g={g} h={h} />
                </td>
                <td>
                  {num(m.power_limit_w?.value ?? null, ' W')}
                  {range}
                </td>
                <td>
                  <Memory m={m} />
                </td>
                <td>
                  {mode(g.ecc_mode)} / {mode(g.persistence_mode)} / {mode(g.mig_mode)}
                  {g.mig_mode && g.mig_devices ? ` (${g.mig_devices} MIG devices)` : ''}
                </td>
                <td>{dash(g.vbios_version)}</td>
                <td>{h?.clock_event_reasons == null ? '—' : h.clock_event_reasons.length ? h.clock_event_reasons.join(', ') : 'nothing'}</td>
                <td>
                  <Xids h={h} />
                </td>
              </tr>
            )
          })}
        </DataTable>
      )}
      {unplaced && (
        <p>
          Xids on a GPU the agent could not place: <Xids h={unplaced} />
        </p>
      )}
    </Section>
  )
}
