/**
 * NVIDIA DCGM's active diagnostic, `dcgmi diag -r <level>`, read from its table (docs/commands.md
 * "diagnostics.dcgm"). Two layouts exist, both drawn with the same stencil (NVIDIA/DCGM dcgmi/Diag.cpp:
 * a 27-character name column and a 48-character result column):
 *
 * - DCGM 4.x: one row per test with its overall result (`| memory | Pass |`), then one row per
 *   entity (`|  | GPU0: Pass |`), and `| Warning: GPU0 | <message> |` rows, the message wrapped at
 *   45 characters over further rows;
 * - DCGM 3.x: one row per test with `Pass - All`, `Fail - GPU: 0` or `Pass - GPUs: 1, 2, 3` (a
 *   deployment test only `Pass` / `Fail`), and `| Warning |` or `| Error |` rows wrapped the same way.
 *
 * The JSON form (`--json`) is left alone on purpose: NVIDIA says it "has no published stable schema".
 */

type DiagResult = 'pass' | 'fail' | 'warn' | 'skip' | 'not_run'

type DiagTest = {
  name: string
  /** Deployment, Hardware, Integration or Stress, as the table groups them. */
  category: string | null
  result: DiagResult
  /** The messages DCGM printed for the test (a GPU's own warnings are also under that GPU). */
  warnings: string[]
}

type GpuDiag = {
  index: number
  /** The worst result of the tests that concern it: its own results, and the tests that ran for the whole host. */
  result: DiagResult
  tests: { name: string; result: DiagResult }[]
  warnings: string[]
}

export type DcgmDiag = {
  dcgm_version: string | null
  driver_version: string | null
  result: DiagResult
  passed: boolean
  tests: DiagTest[]
  gpus: GpuDiag[]
}

/** The first line a successful run prints (Diag.cpp, HelperDisplayAsCli). */
export const DIAG_RAN = 'Successfully ran diagnostic for group.'

const RESULTS: Record<string, DiagResult> = { pass: 'pass', fail: 'fail', warn: 'warn', skip: 'skip', 'not run': 'not_run' }
/** Worst first. */
const ORDER: DiagResult[] = ['fail', 'warn', 'pass', 'skip', 'not_run']
const worst = (rs: DiagResult[]): DiagResult => (rs.length ? ORDER.find((r) => rs.includes(r))! : 'not_run')

const ROW = /^\|(.{27})\|(.*)\|\s*$/
const CATEGORY = /^[|+]-{5}\s+(\w[\w ]*?)\s+-+[+|]/
const ENTITY = /^GPU(\d+): (Pass|Fail|Warn|Skip|Not Run)\b/i
const LEGACY = /^(Pass|Fail|Warn|Skip) - (All|GPUs?: ([\d, ]+))/i
const MESSAGE = /^(Warning|Error|Info)(?::\s*GPU(\d+))?$/i
/** The message column holds 45 characters of a wrapped message (Diag.cpp DATA_INFO_TAG_LEN). */
const CHUNK = 45

type Message = { test: DiagTest; gpu: number | null; text: string; info: boolean }

export function parseDcgmDiag(stdout: string): DcgmDiag {
  let category: string | null = null
  let dcgmVersion: string | null = null
  let driverVersion: string | null = null
  let deviceCount = 0
  const tests: DiagTest[] = []
  /** Per-GPU results of a test, when the table gives them. */
  const perGpu = new Map<DiagTest, Map<number | 'all', DiagResult>>()
  const messages: Message[] = []
  let current: DiagTest | null = null
  let message: Message | null = null

  const gpuResult = (test: DiagTest, gpu: number | 'all', result: DiagResult) => {
    const m = perGpu.get(test) ?? new Map()
    m.set(gpu, result)
    perGpu.set(test, m)
  }
  const legacy = (test: DiagTest, text: string): boolean => {
    const m = LEGACY.exec(text)
    if (!m) return false
    const result = RESULTS[m[1]!.toLowerCase()]!
    if (m[2]!.toLowerCase() === 'all') gpuResult(test, 'all', result)
    else
      for (const n of m[3]!
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean))
        gpuResult(test, Number(n), result)
    return true
  }

  for (const line of stdout.split('\n')) {
    const cat = CATEGORY.exec(line)
    if (cat) {
      category = cat[1]!.trim()
      message = null
      continue
    }
    const row = ROW.exec(line)
    if (!row) continue
    const name = row[1]!.trim()
    const cell = row[2]!
    const info = cell.trim()
    if (name === 'Diagnostic' && info === 'Result') continue
    if (category === 'Metadata' || name.endsWith('Version') || name.endsWith('Detected')) {
      if (name === 'DCGM Version') dcgmVersion = info || null
      else if (name === 'Driver Version Detected') driverVersion = info || null
      else if (name === 'GPU Device IDs Detected') deviceCount = info.split(',').filter((s) => s.trim()).length
      if (name) continue
    }
    const msg = MESSAGE.exec(name)
    if (msg && current) {
      message = { test: current, gpu: msg[2] === undefined ? null : Number(msg[2]), text: chunk(cell), info: msg[1]!.toLowerCase() === 'info' }
      messages.push(message)
      continue
    }
    if (name) {
      // A test row: its overall result, or (DCGM 3.x) its per-GPU lists.
      const word = /^(Pass|Fail|Warn|Skip|Not Run)\b/i.exec(info)?.[1]?.toLowerCase()
      current = { name, category: category === 'Metadata' ? null : category, result: word ? RESULTS[word]! : 'not_run', warnings: [] }
      tests.push(current)
      message = null
      legacy(current, info)
      continue
    }
    if (!current) continue
    const entity = ENTITY.exec(info)
    if (entity) {
      gpuResult(current, Number(entity[1]), RESULTS[entity[2]!.toLowerCase()]!)
      message = null
    } else if (legacy(current, info)) {
      // `Fail - GPU: 0` under `Pass - GPUs: 1, 2`: the test is as bad as its worst GPU.
      current.result = worst([current.result, ...perGpu.get(current)!.values()])
      message = null
    } else if (message) message.text += chunk(cell)
  }

  for (const m of messages) if (!m.info) m.test.warnings.push(tidy(m.text))

  // The GPUs: every one a result names, and as many as the metadata counted (indices 0..n-1).
  const indexes = new Set<number>()
  for (let i = 0; i < deviceCount; i++) indexes.add(i)
  for (const results of perGpu.values()) for (const k of results.keys()) if (k !== 'all') indexes.add(k)
  for (const m of messages) if (m.gpu !== null) indexes.add(m.gpu)
  const gpus: GpuDiag[] = [...indexes]
    .sort((a, b) => a - b)
    .map((index) => {
      const own: { name: string; result: DiagResult }[] = []
      for (const test of tests) {
        const results = perGpu.get(test)
        const r = results?.get(index) ?? results?.get('all') ?? (results && results.size > 0 ? undefined : test.result)
        if (r !== undefined) own.push({ name: test.name, result: r })
      }
      const warnings = messages
        .filter((m) => !m.info && (m.gpu === index || (m.gpu === null && new RegExp(`\\bGPU ${index}\\b`).test(m.text))))
        .map((m) => tidy(m.text))
      return { index, result: worst(own.map((t) => t.result)), tests: own, warnings }
    })
  const result = worst(tests.map((t) => t.result))
  return { dcgm_version: dcgmVersion, driver_version: driverVersion, result, passed: tests.length > 0 && result !== 'fail', tests, gpus }
}

/** One row's share of a wrapped message: exactly its 45 characters when the row has the stencil's width. */
function chunk(cell: string): string {
  return cell.length === 48 ? cell.slice(1, 1 + CHUNK) : cell.trim()
}

function tidy(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ')
  return t.length > 500 ? `${t.slice(0, 500)}…` : t
}
