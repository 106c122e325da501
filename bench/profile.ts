/**
 * Reads a V8/JSC `.cpuprofile` (what `bun --cpu-prof` writes) and prints where the time went:
 * the top functions by self time, and for each the heaviest stacks that led to it, so a native
 * frame such as `values` is traced back to the line of ours that called it.
 *
 *   bun run bench/profile.ts <file.cpuprofile> [top=15] [stacks=3] [depth=12]
 *
 * The benchmarks take BENCH_CPU_PROF=<dir> and start the service with `--cpu-prof`, which writes
 * the file when the service stops (bench/README.md "Profiles").
 */
export {}

type Frame = { functionName: string; url: string; lineNumber: number }
type Node = { id: number; callFrame: Frame; children?: number[]; hitCount?: number }
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number }

const [file, topArg, stacksArg, depthArg] = process.argv.slice(2)
if (!file) {
  console.error('usage: bun run bench/profile.ts <file.cpuprofile> [top] [stacks] [depth]')
  process.exit(2)
}
const TOP = Number(topArg ?? 15)
const STACKS = Number(stacksArg ?? 3)
const DEPTH = Number(depthArg ?? 12)

const profile = (await Bun.file(file).json()) as Profile
const byId = new Map(profile.nodes.map((n) => [n.id, n]))
const parent = new Map<number, number>()
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id)

// Self time per node from the samples and their time deltas (µs).
// A native frame straight under the root, with no JS caller, is where Bun's sampler puts time the
// event loop spent waiting (it names whatever native function last ran): counted as idle.
const root = profile.nodes.find((n) => n.callFrame.functionName === '(root)')?.id
const waiting = (id: number) => parent.get(id) === root && !byId.get(id)!.callFrame.url
const selfUs = new Map<number, number>()
let idleUs = 0
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0
  if (waiting(id)) idleUs += us
  else selfUs.set(id, (selfUs.get(id) ?? 0) + us)
})
const total = [...selfUs.values()].reduce((a, b) => a + b, idleUs)

const where = (f: Frame) => (f.url ? `${f.url.replace(/^.*\/(node_modules|src|db|bench)\//, '$1/')}:${f.lineNumber + 1}` : '[native]')
const label = (f: Frame) => `${f.functionName || '(anonymous)'} ${where(f)}`
const idle = (f: Frame) => ['(idle)', '(program)', '(garbage collector)', '(root)'].includes(f.functionName)

// Group nodes by function (name + place).
const groups = new Map<string, { us: number; nodes: number[] }>()
for (const [id, us] of selfUs) {
  const f = byId.get(id)!.callFrame
  const key = label(f)
  const g = groups.get(key) ?? { us: 0, nodes: [] }
  g.us += us
  g.nodes.push(id)
  groups.set(key, g)
}
const busy = [...groups].filter(([k]) => !idle({ functionName: k.split(' ')[0]!, url: '', lineNumber: 0 }))
const busyUs = busy.reduce((a, [, g]) => a + g.us, 0)
console.log(`${file}\n${(total / 1e6).toFixed(2)} s sampled, ${(busyUs / 1e6).toFixed(2)} s busy (not idle)\n`)
console.log('| self % of busy | self ms | function |\n|---:|---:|---|')
const top = busy.sort((a, b) => b[1].us - a[1].us).slice(0, TOP)
for (const [k, g] of top) console.log(`| ${((100 * g.us) / busyUs).toFixed(1)} | ${(g.us / 1000).toFixed(0)} | \`${k}\` |`)

console.log('\nHeaviest stacks (innermost first):')
for (const [k, g] of top.slice(0, Math.min(TOP, 8))) {
  const stacks = new Map<string, number>()
  for (const id of g.nodes) {
    const chain: string[] = []
    for (let p = parent.get(id); p !== undefined && chain.length < DEPTH; p = parent.get(p)) {
      const f = byId.get(p)!.callFrame
      if (f.functionName === '(root)') break
      chain.push(label(f))
    }
    const key = chain.join('\n      ← ')
    stacks.set(key, (stacks.get(key) ?? 0) + (selfUs.get(id) ?? 0))
  }
  console.log(`\n- \`${k}\` (${((100 * g.us) / busyUs).toFixed(1)} %)`)
  for (const [chain, us] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, STACKS)) console.log(`  - ${((100 * us) / busyUs).toFixed(1)} %\n      ← ${chain}`)
}

// Inclusive time of our own functions (src/, db/): each sample counted once per function on its stack.
const inclusive = new Map<string, number>()
for (const [id, us] of selfUs) {
  const seen = new Set<string>()
  for (let p: number | undefined = id; p !== undefined; p = parent.get(p)) {
    const f = byId.get(p)!.callFrame
    if (!/\/(src|db)\//.test(f.url)) continue
    const key = label(f)
    if (seen.has(key)) continue
    seen.add(key)
    inclusive.set(key, (inclusive.get(key) ?? 0) + us)
  }
}
console.log('\nOur functions by inclusive time:\n\n| incl. % of busy | function |\n|---:|---|')
for (const [k, us] of [...inclusive].sort((a, b) => b[1] - a[1]).slice(0, TOP * 2)) console.log(`| ${((100 * us) / busyUs).toFixed(1)} | \`${k}\` |`)
