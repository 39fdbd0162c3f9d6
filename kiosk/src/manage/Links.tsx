import { createSignal, For, onMount, Show } from 'solid-js'
import { renderSVG } from 'uqr'
import { api, ApiFailure, explain } from './api'
import { createAction, NoteLine, when } from './ui'

interface Token {
  id: number
  name: string
  prefix: string
  created_at: string
}

type Kind = 'kiosk' | 'dispenser'

const KINDS: Record<Kind, { path: string; title: string; newLabel: string; urlField: 'kiosk_url' | 'dispenser_url'; hint: string }> = {
  kiosk: {
    path: '/api/ventanilla/tokens',
    title: 'Pantallas de la sala',
    newLabel: 'Nombre de la pantalla nueva',
    urlField: 'kiosk_url',
    hint: 'Ábralo en el televisor de la sala.',
  },
  dispenser: {
    path: '/api/ventanilla/dispenser-tokens',
    title: 'Dispensadores de turnos',
    newLabel: 'Nombre del dispensador nuevo',
    urlField: 'dispenser_url',
    hint: 'Ábralo en la tablet de la entrada.',
  },
}

const revokeWords = (e: unknown) =>
  e instanceof ApiFailure && e.code === 'NOT_FOUND' ? 'Ese enlace ya estaba revocado: ya no abre ninguna pantalla.' : explain(e)

/** A link shown once, as text to copy and as a QR code to scan with the TV's or tablet's camera. */
function NewLink(props: { name: string; url: string; hint: string; onClose: () => void }) {
  // uqr draws a plain SVG of rects; it is ours, not user input, so it can go in as markup.
  const svg = renderSVG(props.url, { border: 2 })
  let box: HTMLDivElement | undefined
  onMount(() => box?.focus())
  return (
    <div class="new-link" role="region" aria-label={`Enlace nuevo: ${props.name}`} tabindex="-1" ref={box} data-testid="new-link">
      <div class="qr" role="img" aria-label={`Código QR del enlace de ${props.name}`} innerHTML={svg} />
      <div>
        <p>
          <strong>{props.name}</strong>: este enlace se muestra <strong>una sola vez</strong>. {props.hint}
        </p>
        <p>
          <a href={props.url} target="_blank" rel="noopener" data-testid="new-link-url">
            {props.url}
          </a>
        </p>
        <div class="row">
          <button type="button" onClick={() => void navigator.clipboard?.writeText(props.url)}>
            Copiar enlace
          </button>
          <button type="button" onClick={props.onClose}>
            Listo, ya lo guardé
          </button>
        </div>
      </div>
    </div>
  )
}

function TokenList(props: { kind: Kind }) {
  const kind = KINDS[props.kind]
  const [tokens, setTokens] = createSignal<Token[]>([])
  const [name, setName] = createSignal('')
  const [fresh, setFresh] = createSignal<{ name: string; url: string } | null>(null)
  const action = createAction(revokeWords)
  const refresh = async () => setTokens((await api<{ data: Token[] }>('GET', kind.path)).data)
  onMount(() => action.run(async () => void (await refresh())))
  const create = (e: Event) => {
    e.preventDefault()
    if (!name().trim()) return action.setNote({ kind: 'error', text: `Escriba un nombre para reconocer ${props.kind === 'kiosk' ? 'la pantalla, por ejemplo «TV sala»' : 'el dispensador, por ejemplo «Tablet entrada»'}.` })
    void action.run(async () => {
      const made = await api<Record<string, string> & { name: string }>('POST', kind.path, { name: name().trim() })
      setFresh({ name: made.name, url: made[kind.urlField] })
      setName('')
      await refresh()
    })
  }
  const revoke = (t: Token) =>
    action.run(async () => {
      try {
        await api('DELETE', `${kind.path}/${t.id}`)
      } finally {
        // Revoked here or elsewhere, the list shows what is live now.
        await refresh()
      }
      return `«${t.name}» revocado: ${props.kind === 'kiosk' ? 'esa pantalla' : 'ese dispensador'} deja de funcionar.`
    })
  return (
    <section class="sub" data-testid={`tokens-${props.kind}`} aria-labelledby={`tokens-${props.kind}-title`}>
      <h2 id={`tokens-${props.kind}-title`}>{kind.title}</h2>
      <form class="inline" onSubmit={create}>
        <label>
          {kind.newLabel}
          <input maxlength="100" value={name()} onInput={(e) => setName(e.currentTarget.value)} data-testid="token-name" />
        </label>
        <button type="submit" class="primary" disabled={action.busy()} data-testid="token-create">
          Crear enlace
        </button>
      </form>
      <Show when={fresh()}>{(f) => <NewLink name={f().name} url={f().url} hint={kind.hint} onClose={() => setFresh(null)} />}</Show>
      <table class="grid">
        <thead>
          <tr>
            <th scope="col">Nombre</th>
            <th scope="col">Comienza con</th>
            <th scope="col">Creado</th>
            <th scope="col">
              <span class="visually-hidden">Acciones</span>
            </th>
          </tr>
        </thead>
        <tbody>
          <For each={tokens()} fallback={<tr><td colspan="4" class="muted">Ninguno activo.</td></tr>}>
            {(t) => (
              <tr data-testid="token-row">
                <td>{t.name}</td>
                <td>
                  <code>{t.prefix}</code>
                </td>
                <td>{when(t.created_at)}</td>
                <td>
                  <button type="button" class="danger" onClick={() => revoke(t)} data-testid="token-revoke">
                    Revocar {t.name}
                  </button>
                </td>
              </tr>
            )}
          </For>
        </tbody>
      </table>
      <NoteLine note={action.note()} />
    </section>
  )
}

export function Links() {
  return (
    <section class="panel" data-testid="links-section">
      <h1>Pantallas y dispensadores</h1>
      <p class="muted">Cada enlace es la llave de un aparato: quien lo tiene ve la pantalla o saca turnos. Revoque el de un aparato perdido.</p>
      <TokenList kind="kiosk" />
      <TokenList kind="dispenser" />
    </section>
  )
}
