import { Page } from '../ui/layout'

export function Fleet() {
  return (
    <Page title="Fleet">
      <p>Your servers.</p>
    </Page>
  )
}
