import { DataTable } from '../ui/states'

/**
 * The result of a `diagnostics.dcgm` command (docs/commands.md): one row per GPU with its DCGM
 * verdict, the tests that concern it and the warnings DCGM printed for it. The word is always
 * there; the colour only repeats it.
 */

type DiagResult = 'pass' | 'fail' | 'warn' | 'skip' | 'not_run'
type GpuDiag = { index: number; result: DiagResult; tests: { name: string; result: DiagResult }[]; warnings: string[] }
type DcgmResult = { level?: number; result?: DiagResult; simulated?: boolean; dcgm_version?: string | null; gpus: GpuDiag[] }

const TONE: Record<DiagResult, string> = { pass: 'ok', fail: 'bad', warn: 'warn', skip: '', not_run: '' }

const Verdict = ({ result }: { result: DiagResult }) => <span class={`badge ${TONE[result] ?? ''}`}>{result.replaceAll('_', ' ')}</span>

/** The per-GPU table, or nothing when the result is not a DCGM diagnostic's. */
export function DcgmGpuResults({ result }: { result: unknown }) {
  const r = result as Partial<DcgmResult> | null
  if (!r || !Array.isArray(r.gpus)) return null
  return (
    <>
      <p>
        DCGM diagnostic level {r.level ?? 1}
        {r.dcgm_version ? ` (DCGM ${r.dcgm_version})` : ''}
        {r.simulated ? ', simulated' : ''}: {r.result ? <Verdict result={r.result} /> : 'no verdict'}
      </p>
      {r.gpus.length === 0 ? (
        <p class="muted">DCGM reported no per-GPU results.</p>
      ) : (
        <DataTable
          label="DCGM result per GPU"
          head={
            <>
              <th scope="col">GPU</th>
              <th scope="col">Result</th>
              <th scope="col">Tests</th>
              <th scope="col">Warnings</th>
            </>
          }
        >
          {r.gpus.map((g) => (
            <tr key={g.index} data-gpu={g.index}>
              <td>{g.index}</td>
              <td>
                <Verdict result={g.result} />
              </td>
              <td>{g.tests.map((t) => `${t.name}: ${t.result.replaceAll('_', ' ')}`).join(', ')}</td>
              <td>{g.warnings.join(' · ')}</td>
            </tr>
          ))}
        </DataTable>
      )}
    </>
  )
}
