import 'uplot/dist/uPlot.min.css'
import './styles.css'
import { type JSX, render } from 'preact'
import { useEffect } from 'preact/hooks'
import { match, navigate, route } from './lib/router'
import { loadMe, me } from './lib/session'
import './lib/theme'
import { Reset, SignIn, SignUp } from './pages/auth'
import { ROUTES } from './pages'
import { Page, Shell } from './ui/layout'
import { ErrorNote, Loading } from './ui/states'
import { useResource } from './lib/resource'

/** The console: one page; the fragment picks what it shows (lib/router.ts). */

const PUBLIC: Record<string, () => JSX.Element> = { '/signin': SignIn, '/signup': SignUp, '/reset': Reset }

function NotFound() {
  return (
    <Page title="Not found">
      <p>
        There is nothing at this address. <a href="#/">Go to the fleet</a>.
      </p>
    </Page>
  )
}

function Routed() {
  const path = route.value
  for (const [pattern, Component] of ROUTES) {
    const params = match(pattern, path)
    if (params) return <Component {...params} />
  }
  return <NotFound />
}

function App() {
  const boot = useResource(loadMe, [])
  const path = route.value.split('?')[0]!
  const signedIn = me.value
  useEffect(() => {
    if (signedIn === null && !PUBLIC[path]) navigate('/signin')
    if (signedIn && PUBLIC[path]) navigate('/')
  }, [signedIn, path])
  if (signedIn === undefined) return boot.error ? <ErrorNote error={boot.error} retry={boot.reload} /> : <Loading label="Loading the console…" />
  if (signedIn === null) {
    const Public = PUBLIC[path] ?? SignIn
    return <Public />
  }
  return (
    <Shell>
      <Routed />
    </Shell>
  )
}

render(<App />, document.getElementById('app')!)
